/**
 * Per-client rate limits (SPEC 6): two rate-limiter-flexible limiters arranged as its
 * BurstyRateLimiter is, with one difference: a refused call is refunded, so a call over budget
 * never eats budget that a cheaper call after it could use.
 *   - sustained: `ratePerSec` cost units in each fixed 1-second window per client;
 *   - burst: when that window is spent, up to `burst - ratePerSec` more units, an allowance that
 *     refills every `burstWindowSec` seconds.
 * So a client gets at most `burst` units in one second and at most
 * ratePerSec x W + (burst - ratePerSec) in any W-second burst window. Every call of a batch is
 * charged in request order with its method's cost; a call over budget is refused alone.
 * With `rateLimit.redis` the windows live in Redis (one budget per client across replicas); while
 * Redis is unreachable the same limits apply from local memory (the insurance limiter): served,
 * logged and counted, never "allow all".
 */
import { Redis } from 'ioredis';
import { BlockList, isIP } from 'node:net';
import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Metrics } from '../metrics/registry.js';

export interface Rate {
  ratePerSec: number;
  burst: number;
  burstWindowSec: number;
}

export interface RateLimitConfig {
  perIp: Rate | null;
  methodCost: Readonly<Record<string, number>>;
  redis: string | null;
  exempt: readonly string[];
  apiKeys: readonly (Rate & { name: string; key: string })[];
}

/** Who is charged: an API key's holder, or a client IP. */
export interface Identity {
  ip: string;
  apiKey?: string;
}

/** null: admitted; a number: refused, retry after that many seconds. */
export type Admission = number | null;

interface Bucket {
  sustained: RateLimiterAbstract;
  burst: RateLimiterAbstract;
}

/** Consumes `cost`, or refunds it and returns the refusal: refused calls leave the window as it was. */
async function take(l: RateLimiterAbstract, id: string, cost: number): Promise<RateLimiterRes | null> {
  try {
    await l.consume(id, cost);
    return null;
  } catch (res) {
    if (!(res instanceof RateLimiterRes)) throw res;
    await l.reward(id, cost).catch(() => undefined);
    return res;
  }
}

/** Seconds until `cost` may fit again: the next sustained window, unless only the burst allowance ever can. */
async function charge(b: Bucket, id: string, cost: number): Promise<Admission> {
  const s = await take(b.sustained, id, cost);
  if (s === null) return null;
  const r = await take(b.burst, id, cost);
  if (r === null) return null;
  const ms = cost > b.sustained.points ? r.msBeforeNext : Math.min(s.msBeforeNext, r.msBeforeNext);
  return Math.max(1, Math.ceil(ms / 1000));
}

export class RateLimits {
  private readonly perIp: Bucket | null;
  private readonly byKey = new Map<string, { name: string; limiter: Bucket }>();
  private readonly exempt = new BlockList();
  private readonly costs = new Map<string, number>();
  private readonly costPrefixes: [string, number][] = [];
  private readonly redis: Redis | null;
  private redisDown = false;

  constructor(
    cfg: RateLimitConfig,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {
    this.redis =
      cfg.redis === null
        ? null
        : new Redis(cfg.redis, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 200, connectTimeout: 2_000, retryStrategy: (n) => Math.min(n * 200, 2_000) });
    this.redis?.on('error', () => this.noteRedis(false));
    this.redis?.on('ready', () => this.noteRedis(true));
    this.perIp = cfg.perIp === null ? null : this.bursty('ip', cfg.perIp);
    for (const k of cfg.apiKeys) this.byKey.set(k.key, { name: k.name, limiter: this.bursty(`key:${k.name}`, k) });
    for (const c of cfg.exempt) {
      const [addr, bits] = c.split('/') as [string, string | undefined];
      const family = isIP(addr) === 6 ? 'ipv6' : 'ipv4';
      if (bits === undefined) this.exempt.addAddress(addr, family);
      else this.exempt.addSubnet(addr, Number(bits), family);
    }
    for (const [m, cost] of Object.entries(cfg.methodCost)) {
      if (m.endsWith('*')) this.costPrefixes.push([m.slice(0, -1), cost]);
      else this.costs.set(m, cost);
    }
  }

  private bursty(prefix: string, r: Rate): Bucket {
    const make = (name: string, points: number, duration: number): RateLimiterAbstract => {
      const keyPrefix = `switchyard:rl:${prefix}:${name}`;
      const memory = new RateLimiterMemory({ keyPrefix, points, duration });
      if (this.redis === null) return memory;
      return new RateLimiterRedis({ storeClient: this.redis, keyPrefix, points, duration, insuranceLimiter: memory, rejectIfRedisNotReady: true });
    };
    // With burst == ratePerSec there is no burst allowance: a zero-point limiter refuses everything.
    return { sustained: make('sustained', r.ratePerSec, 1), burst: make('burst', Math.max(r.burst - r.ratePerSec, 0), r.burstWindowSec) };
  }

  private noteRedis(up: boolean): void {
    if (up && this.redisDown) this.log.info('rate-limit redis reachable again: limits shared across replicas');
    if (!up && !this.redisDown) this.log.warn('rate-limit redis unreachable: limits apply from local memory until it is back');
    this.redisDown = !up;
  }

  /** Whether an API key is one this configuration knows (an unknown key is refused, not ignored). */
  knowsKey(key: string): boolean {
    return this.byKey.has(key);
  }

  cost(method: string): number {
    const exact = this.costs.get(method);
    if (exact !== undefined) return exact;
    for (const [p, c] of this.costPrefixes) if (method.startsWith(p)) return c;
    return 1;
  }

  private isExempt(ip: string): boolean {
    const v = isIP(ip);
    return v !== 0 && this.exempt.check(ip, v === 6 ? 'ipv6' : 'ipv4');
  }

  /** Charges each call in order; returns, per call, null (admitted) or seconds to wait. */
  async admit(who: Identity, methods: readonly string[]): Promise<Admission[]> {
    const keyed = who.apiKey === undefined ? undefined : this.byKey.get(who.apiKey);
    const limiter = keyed?.limiter ?? (this.isExempt(who.ip) ? null : this.perIp);
    if (limiter === null) return methods.map(() => null);
    const id = keyed ? `key:${keyed.name}` : who.ip;
    if (this.redis !== null && this.redis.status !== 'ready') {
      this.noteRedis(false);
      this.metrics.recordRateLimitFallback();
    }
    const out: Admission[] = [];
    for (const m of methods) {
      const cost = this.cost(m);
      if (cost === 0) {
        out.push(null);
        continue;
      }
      try {
        out.push(await charge(limiter, id, cost));
      } catch (err) {
        // A store failure the insurance limiter could not cover: refuse briefly rather than allow all.
        this.log.error({ err: (err as Error)?.message }, 'rate limiter failed');
        out.push(1);
      }
    }
    const refused = out.filter((a) => a !== null).length;
    if (refused > 0) this.metrics.recordRateLimited('rate', refused);
    return out;
  }

  async close(): Promise<void> {
    this.redis?.disconnect();
  }
}
