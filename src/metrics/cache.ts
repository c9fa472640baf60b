/** The answer cache: lookups by class, the memory level's size and evictions, coalesced calls, the Redis level. */
import { Counter, Gauge, type Registry } from 'prom-client';
import { BoundCounter, Children } from './bound.js';
import { CACHE_CLASSES, type CacheClass } from './labels.js';

export const LOOKUP_RESULTS = ['hit', 'miss'] as const;

export class CacheMetrics {
  private readonly lookups: Counter;
  private readonly evictions: Counter;
  private readonly coalesced: Counter;
  private readonly bytes: Gauge;
  private readonly entries: Gauge;
  private readonly redisUp: Gauge;
  private readonly redisEnabled: Gauge;
  private readonly lookupChildren: Children<BoundCounter>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.lookups = new Counter({
      name: 'switchyard_cache_lookups_total',
      help: 'Cache lookups by class (immutable, head, tx) and result (hit, miss)',
      labelNames: ['class', 'result'],
      registers,
    });
    this.evictions = new Counter({
      name: 'switchyard_cache_evictions_total',
      help: 'Entries evicted from the memory cache to stay under cache.maxBytes',
      registers,
    });
    this.coalesced = new Counter({
      name: 'switchyard_coalesced_calls_total',
      help: 'Calls that shared an identical call already in flight instead of reaching an upstream',
      registers,
    });
    this.bytes = new Gauge({
      name: 'switchyard_cache_bytes',
      help: 'Bytes held by the memory cache (keys + answers + overhead)',
      registers,
    });
    this.entries = new Gauge({ name: 'switchyard_cache_entries', help: 'Entries in the memory cache', registers });
    this.redisUp = new Gauge({
      name: 'switchyard_cache_redis_up',
      help: '1 while the shared Redis cache level is reachable',
      registers,
    });
    this.redisEnabled = new Gauge({
      name: 'switchyard_cache_redis_enabled',
      help: '1 when a shared Redis cache level is configured (switchyard_cache_redis_up means something only then)',
      registers,
    });
    for (const cls of CACHE_CLASSES) for (const result of LOOKUP_RESULTS) this.lookups.inc({ class: cls, result }, 0);
    this.lookupChildren = new Children((cls, result) => new BoundCounter(this.lookups, { class: cls, result }));
  }

  recordCacheLookup(cls: CacheClass, hit: boolean): void {
    this.lookupChildren.get(cls, hit ? 'hit' : 'miss').inc();
  }

  recordCacheEvictions(n: number): void {
    if (n > 0) this.evictions.inc(n);
  }

  recordCoalesced(): void {
    this.coalesced.inc();
  }

  setCacheSize(bytes: number, entries: number): void {
    this.bytes.set(bytes);
    this.entries.set(entries);
  }

  /** `up`: whether the Redis level answers, or null when none is configured (then `up` keeps its last value). */
  setCacheRedis(up: boolean | null): void {
    if (up !== null) this.redisUp.set(up ? 1 : 0);
    this.redisEnabled.set(up !== null ? 1 : 0);
  }
}
