/**
 * The shared Redis: whether every Redis in use answers, the values read from it and refused, and the
 * shared-heads exchange. Series that mean something only while a Redis is in use are registered then,
 * not before: absent, never a false 0.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** The gauge of every Redis in use, registered while one is (absent without Redis). */
export const REDIS_UP = 'switchyard_redis_up';

const SHARED_HEADS_FAILURES = 'switchyard_shared_heads_failures_total';
const SHARED_HEADS_TAKEN = 'switchyard_shared_heads_taken_total';

/** What a refused value was read for: the cache's second level, the heads or the cordons the replicas share. */
export type RedisUse = 'cache' | 'heads' | 'cordons';

export class RedisMetrics {
  private readonly refused: Counter;
  private readonly up = new Gauge({
    name: REDIS_UP,
    help: '1 while every Redis in use (cache, rate limits, shared heads) is reachable',
    registers: [],
  });
  private readonly sharedHeadsFailures = new Counter({
    name: SHARED_HEADS_FAILURES,
    help: 'Shared-head exchanges with Redis that failed (the replica went on with its own view)',
    registers: [],
  });
  private readonly sharedHeadsTaken = new Counter({
    name: SHARED_HEADS_TAKEN,
    help: "Upstream heads this replica took from the other replicas' observations before seeing them itself",
    registers: [],
  });

  constructor(private readonly registry: Registry) {
    this.refused = new Counter({
      name: 'switchyard_redis_values_refused_total',
      help: "Values read from a shared Redis and refused as input: a cache entry that is not one JSON value answering its call, a shared head that is not a height or beyond what this replica's nodes make possible, a shared cordon that is not one; by use (cache, heads, cordons)",
      labelNames: ['use'],
      registers: [registry],
    });
  }

  recordRedisRefused(use: RedisUse): void {
    this.refused.inc({ use });
  }

  /**
   * Whether every Redis in use answers; null when none is in use (a reload can drop the last),
   * which removes the series rather than report a Redis that is not there as down.
   */
  setRedisUp(up: boolean | null): void {
    if (up === null) {
      this.registry.removeSingleMetric(REDIS_UP);
      return;
    }
    this.registerOnce(REDIS_UP, this.up);
    this.up.set(up ? 1 : 0);
  }

  /** Shared heads are configured (top-level redis): their counters exist from now on, at 0. */
  declareSharedHeads(): void {
    this.registerOnce(SHARED_HEADS_FAILURES, this.sharedHeadsFailures);
    this.registerOnce(SHARED_HEADS_TAKEN, this.sharedHeadsTaken);
  }

  recordSharedHeadsFailure(): void {
    this.sharedHeadsFailures.inc();
  }

  recordSharedHeadsTaken(): void {
    this.sharedHeadsTaken.inc();
  }

  private registerOnce(name: string, metric: Counter | Gauge): void {
    if (this.registry.getSingleMetric(name) === undefined) this.registry.registerMetric(metric);
  }
}
