/**
 * Every metric Switchyard exports, declared once with its help text, and the record* verbs that
 * call sites use. Labels are bounded: method names come through MethodPolicy.label (unknown ->
 * `other`), upstreams by configured name, outcomes and reasons from closed sets. No URL ever.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { BoundCounter, BoundHistogram, Children } from './bound.js';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Every reason a call moves on to another upstream (upstream/classify.ts RetryReason, and null answers). */
const FAILOVER_REASONS = ['transport', 'timeout', 'http_5xx', 'http_429', 'http_other', 'bad_body', 'node_limit', 'node_method_missing', 'node_missing_block', 'null_answer'] as const;

export type CallOutcome = 'ok' | 'node_error' | 'error' | 'cached' | 'rate_limited';

export class Metrics {
  readonly registry = new Registry();
  private readonly calls = new Counter({ name: 'switchyard_calls_total', help: 'JSON-RPC calls answered, by method and outcome', labelNames: ['method', 'outcome'], registers: [this.registry] });
  private readonly callSeconds = new Histogram({ name: 'switchyard_call_duration_seconds', help: 'Time to answer one JSON-RPC call, by method', labelNames: ['method'], buckets: LATENCY_BUCKETS, registers: [this.registry] });
  private readonly httpRequests = new Counter({ name: 'switchyard_http_requests_total', help: 'HTTP requests on the JSON-RPC port, by status', labelNames: ['status'], registers: [this.registry] });
  private readonly batchSize = new Histogram({ name: 'switchyard_batch_size', help: 'Calls per HTTP request (1 for a single call)', buckets: [1, 2, 5, 10, 25, 50, 100, 250, 1000], registers: [this.registry] });
  private readonly upstreamCalls = new Counter({ name: 'switchyard_upstream_calls_total', help: 'Calls sent to upstreams, by upstream, method and outcome', labelNames: ['upstream', 'method', 'outcome'], registers: [this.registry] });
  private readonly upstreamSeconds = new Histogram({ name: 'switchyard_upstream_duration_seconds', help: 'Upstream call latency, by upstream', labelNames: ['upstream'], buckets: LATENCY_BUCKETS, registers: [this.registry] });
  private readonly failovers = new Counter({ name: 'switchyard_failovers_total', help: 'Calls retried on another upstream, by reason', labelNames: ['reason'], registers: [this.registry] });
  private readonly quarantines = new Counter({ name: 'switchyard_upstream_quarantined_total', help: 'Times an upstream was quarantined for answering another chain id', labelNames: ['upstream'], registers: [this.registry] });
  private readonly reorgs = new Counter({ name: 'switchyard_reorgs_total', help: 'Chain reorganisations seen by the head tracker', registers: [this.registry] });
  readonly upstreamHead = new Gauge({ name: 'switchyard_upstream_head', help: 'Latest block number seen from each upstream', labelNames: ['upstream'], registers: [this.registry] });
  readonly upstreamLag = new Gauge({ name: 'switchyard_upstream_lag_blocks', help: 'Blocks each upstream is behind the fleet head', labelNames: ['upstream'], registers: [this.registry] });
  readonly upstreamHealthy = new Gauge({ name: 'switchyard_upstream_healthy', help: '1 when the upstream is reachable, on the right chain and routable', labelNames: ['upstream'], registers: [this.registry] });
  readonly upstreamInFlight = new Gauge({ name: 'switchyard_upstream_in_flight', help: 'Calls outstanding at each upstream', labelNames: ['upstream'], registers: [this.registry] });
  readonly upstreamBreaker = new Gauge({ name: 'switchyard_upstream_breaker_state', help: 'Circuit breaker per upstream: 0 closed, 1 half-open, 2 open', labelNames: ['upstream'], registers: [this.registry] });
  readonly upstreamLatencyEwma = new Gauge({ name: 'switchyard_upstream_latency_ewma_seconds', help: 'Moving average latency per upstream (a selection input)', labelNames: ['upstream'], registers: [this.registry] });
  readonly fleetHead = new Gauge({ name: 'switchyard_fleet_head', help: 'Highest block among healthy upstreams', registers: [this.registry] });
  readonly fleetFinalized = new Gauge({ name: 'switchyard_fleet_finalized', help: 'Finalized block height of the fleet', registers: [this.registry] });
  private readonly cacheLookups = new Counter({ name: 'switchyard_cache_lookups_total', help: 'Cache lookups by class (immutable, head, tx) and result (hit, miss)', labelNames: ['class', 'result'], registers: [this.registry] });
  private readonly cacheEvictions = new Counter({ name: 'switchyard_cache_evictions_total', help: 'Entries evicted from the memory cache to stay under cache.maxBytes', registers: [this.registry] });
  private readonly coalesced = new Counter({ name: 'switchyard_coalesced_calls_total', help: 'Calls that shared an identical call already in flight instead of reaching an upstream', registers: [this.registry] });
  readonly cacheBytes = new Gauge({ name: 'switchyard_cache_bytes', help: 'Bytes held by the memory cache (keys + answers + overhead)', registers: [this.registry] });
  readonly cacheEntries = new Gauge({ name: 'switchyard_cache_entries', help: 'Entries in the memory cache', registers: [this.registry] });
  readonly cacheRedisUp = new Gauge({ name: 'switchyard_cache_redis_up', help: '1 while the shared Redis cache level is reachable', registers: [this.registry] });
  private readonly rateLimited = new Counter({ name: 'switchyard_rate_limited_calls_total', help: 'Calls refused by a limit, by reason (rate, ip_concurrency, overloaded)', labelNames: ['reason'], registers: [this.registry] });
  private readonly rateLimitFallback = new Counter({ name: 'switchyard_rate_limit_fallback_total', help: 'Requests whose rate limits were applied from local memory because the shared Redis was unreachable', registers: [this.registry] });
  readonly inFlight = new Gauge({ name: 'switchyard_in_flight_calls', help: 'Calls being worked on', registers: [this.registry] });

  // Hot-path series, bound on first use (bound.ts): recording them costs no label hashing.
  private readonly callChildren = new Children((method, outcome) => new BoundCounter(this.calls, { method, outcome }));
  private readonly callSecondsChildren = new Children((method) => new BoundHistogram(this.callSeconds, { method }));
  private readonly httpChildren = new Map<number, BoundCounter>();
  private readonly batchSizeChild = new BoundHistogram(this.batchSize, {});
  private readonly upstreamCallChildren = new Children((upstream, method) => new Children((outcome) => new BoundCounter(this.upstreamCalls, { upstream, method, outcome })));
  private readonly upstreamSecondsChildren = new Children((upstream) => new BoundHistogram(this.upstreamSeconds, { upstream }));
  private readonly cacheLookupChildren = new Children((cls, result) => new BoundCounter(this.cacheLookups, { class: cls, result }));

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
    // Series that exist from the start read 0 on dashboards instead of "no data".
    for (const reason of FAILOVER_REASONS) this.failovers.inc({ reason }, 0);
    for (const reason of ['rate', 'ip_concurrency', 'overloaded'] as const) this.rateLimited.inc({ reason }, 0);
    for (const cls of ['immutable', 'head', 'tx']) for (const result of ['hit', 'miss']) this.cacheLookups.inc({ class: cls, result }, 0);
  }

  /** Per-upstream series that only count events start at 0 when the upstream is configured. */
  declareUpstream(upstream: string): void {
    this.quarantines.inc({ upstream }, 0);
  }

  recordCall(method: string, outcome: CallOutcome, seconds: number): void {
    this.callChildren.get(method, outcome).inc();
    this.callSecondsChildren.get(method).observe(seconds);
  }

  recordHttp(status: number, batchSize: number | null): void {
    let child = this.httpChildren.get(status);
    if (child === undefined) {
      child = new BoundCounter(this.httpRequests, { status: String(status) });
      this.httpChildren.set(status, child);
    }
    child.inc();
    if (batchSize !== null) this.batchSizeChild.observe(batchSize);
  }

  recordUpstreamCall(upstream: string, method: string, outcome: string, seconds: number): void {
    this.upstreamCallChildren.get(upstream, method).get(outcome).inc();
    this.upstreamSecondsChildren.get(upstream).observe(seconds);
  }

  recordFailover(reason: string): void {
    this.failovers.inc({ reason });
  }

  recordRateLimited(reason: 'rate' | 'ip_concurrency' | 'overloaded', calls: number): void {
    this.rateLimited.inc({ reason }, calls);
  }

  recordRateLimitFallback(): void {
    this.rateLimitFallback.inc();
  }

  recordCacheLookup(cls: string, hit: boolean): void {
    this.cacheLookupChildren.get(cls, hit ? 'hit' : 'miss').inc();
  }

  recordCacheEvictions(n: number): void {
    if (n > 0) this.cacheEvictions.inc(n);
  }

  recordCoalesced(): void {
    this.coalesced.inc();
  }

  recordReorg(): void {
    this.reorgs.inc();
  }

  recordQuarantine(upstream: string): void {
    this.quarantines.inc({ upstream });
  }

  /** Drops every series of an upstream removed by a reload, so dead names do not linger. */
  forgetUpstream(upstream: string): void {
    for (const g of [this.upstreamHead, this.upstreamLag, this.upstreamHealthy, this.upstreamInFlight, this.upstreamBreaker, this.upstreamLatencyEwma]) {
      g.remove({ upstream });
    }
  }
}
