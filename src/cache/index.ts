/**
 * The response cache as the pipeline sees it: plan (key + class), look up, store, coalesce, and
 * forget unfinalized answers on a reorg. Memory first; Redis (optional) for immutable entries.
 */
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/registry.js';
import { Coalescer, type Shared } from './coalesce.js';
import { heightInText } from '../jsonrpc/hex.js';
import type { JsonText } from '../jsonrpc/raw.js';
import { answerCarries } from '../methods/identity.js';
import type { CachePlan } from './plan.js';
import { RedisLevel } from './redis.js';
import { RedisConnections } from '../redis/connections.js';
import { MemoryStore } from './store.js';

export { planCache, type CachePlan, type ChainView } from './plan.js';

export interface CacheConfig {
  maxBytes: number;
  redis: string | null;
  /** Namespaces the shared Redis keys: instances of different chains may share one Redis. */
  chainId?: number;
}

/**
 * A key's hash for the miss sets (store.ts): FNV-1a over its first 8 and last 24 characters and its
 * length, so a long key (an eth_call's calldata) costs no more than a short one. A key ends with
 * what tells it apart from its neighbours (the address and block of a state read, the storage
 * slot, a call's target and block, a filter's topics); keys differing only in between share a
 * hash, and such a key counts as asked again and is kept on its first miss, which costs only that.
 */
export function keyHash(key: string): number {
  const n = key.length;
  let h = Math.imul(0x811c9dc5 ^ n, 0x01000193);
  const head = Math.min(8, n);
  for (let i = 0; i < head; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  for (let i = Math.max(head, n - 24); i < n; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  // 30 bits: a small integer, never a heap number.
  return (h ^ (h >>> 15)) & 0x3fffffff;
}

/** The plan's key hash, worked out at the first lookup or store that needs it. */
function hashOf(plan: CachePlan): number {
  return (plan.keyHash ??= keyHash(plan.key));
}

/**
 * Whether a value read from Redis may answer the plan's call: exactly one JSON value (a value like
 * `"0x1"},{...` would add an element to a batch answer), not null (never cached), and carrying
 * what the call asked for. Parsed, not scanned: only immutable entries are shared, each read from
 * Redis once before the memory level holds it.
 */
function answersPlan(plan: CachePlan, value: string): boolean {
  if (value === 'null' || value.trim() !== value) return false;
  try {
    JSON.parse(value);
  } catch {
    return false;
  }
  return plan.identity === undefined || plan.identity === null || answerCarries(plan.identity, value);
}

export class ResponseCache {
  private readonly memory: MemoryStore;
  private readonly redis: RedisLevel | null;
  private readonly coalescer = new Coalescer<unknown>();
  private lastEvictions = 0;

  constructor(
    cfg: CacheConfig,
    private readonly metrics: Metrics,
    log: Logger,
    /** The process's Redis connections (one of its own when not given). */
    connections: RedisConnections = new RedisConnections(metrics, log),
  ) {
    this.memory = new MemoryStore(cfg.maxBytes);
    this.redis =
      cfg.redis === null
        ? null
        : new RedisLevel(
            connections.link(cfg.redis, { name: 'cache', whileDown: 'the cache is memory only' }),
            cfg.chainId,
          );
  }

  /** The reorg generation; pass it back to store() so an answer fetched across a reorg is not kept. */
  get generation(): number {
    return this.memory.generation;
  }

  /**
   * The memory level's answer for the plan. On a miss of a plan the Redis level may answer
   * (shared()), the lookup goes on in lookupShared(), which counts it; any other is counted here.
   */
  lookup(plan: CachePlan): string | undefined {
    if (plan.secondMiss) {
      // A key not yet asked again at this head was never kept for it: no table lookup needed.
      const h = hashOf(plan);
      const value = this.memory.mayHold(h, plan.head) ? this.memory.get(plan.key, plan.cls, plan.head) : undefined;
      if (value === undefined) this.memory.missed(h, plan.head);
      this.metrics.recordCacheLookup(plan.cls, value !== undefined);
      return value;
    }
    const value = this.memory.get(plan.key, plan.cls, plan.head);
    if (value === undefined && this.shared(plan)) return undefined;
    this.metrics.recordCacheLookup(plan.cls, value !== undefined);
    return value;
  }

  /** Whether a memory miss of the plan is asked of the Redis level (immutable entries only are kept there). */
  shared(plan: CachePlan): boolean {
    return this.redis !== null && plan.cls !== 'head' && !plan.secondMiss;
  }

  /** The Redis level's answer for a plan the memory level missed (shared()), asked before the call is dispatched. */
  async lookupShared(plan: CachePlan): Promise<string | undefined> {
    let value = await this.redis!.get(plan.key);
    // Redis is input: what it holds is spliced into answers only when it is one JSON value that
    // answers this call (else it is a miss, and the node's answer replaces it there).
    if (value !== undefined && !answersPlan(plan, value)) {
      this.metrics.recordRedisRefused('cache');
      value = undefined;
    }
    if (value !== undefined) this.memory.set(plan.key, value, 'immutable', this.memory.generation);
    this.metrics.recordCacheLookup(plan.cls, value !== undefined);
    return value;
  }

  /** Keeps a node's answer when its class allows: never null; `tx` only once its block is finalized. */
  store(plan: CachePlan, text: JsonText, gen: number, finalized: number): void {
    // An answer over the entry cap is kept nowhere: not copied to be refused, nor sent to Redis.
    if (text === 'null' || text.length > this.memory.maxEntryBytes) return;
    // A large answer passed on as bytes is decoded for the cache only below the cap.
    const value = typeof text === 'string' ? text : text.toString();
    if (plan.cls === 'tx') {
      const block = heightInText(value);
      if (block === null || block > finalized) return;
    }
    const cls = plan.cls === 'tx' ? 'immutable' : plan.cls;
    this.memory.set(plan.key, value, cls, gen, plan.head, plan.secondMiss ? hashOf(plan) : undefined);
    if (cls === 'immutable') this.redis?.set(plan.key, value);
  }

  /** Identical calls in flight share one upstream call (see Coalescer.claim); the claim is ended with `settle`. */
  claim<T>(key: string): Promise<T> | Shared<T> {
    return this.coalescer.claim(key, this.joined) as Promise<T> | Shared<T>;
  }

  settle<T>(key: string, shared: Shared<T>, value: T): void {
    this.coalescer.settle(key, shared as Shared<unknown>, value);
  }

  private readonly joined = (): void => this.metrics.recordCoalesced();

  onReorg(): void {
    this.memory.dropUnfinalized();
    // A call asked after a reorg must not share an answer fetched from the chain that reorg
    // replaced (a head-scoped key can be the same on both chains).
    this.coalescer.forget();
  }

  /** Refreshes the size gauges (scraped, not pushed). */
  collect(): void {
    const s = this.memory.stats();
    this.metrics.setCacheSize(s.bytes, s.entries);
    this.metrics.recordCacheEvictions(s.evictions - this.lastEvictions);
    this.lastEvictions = s.evictions;
    this.metrics.setCacheRedis(this.redis === null ? null : this.redis.ready);
  }

  stats(): Record<string, unknown> {
    return {
      ...this.memory.stats(),
      inFlightShared: this.coalescer.size,
      coalesced: this.coalescer.joined,
      redis: this.redis === null ? null : { ready: this.redis.ready, errors: this.redis.errors },
    };
  }

  async close(): Promise<void> {
    await this.redis?.close();
  }
}
