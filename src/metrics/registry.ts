/**
 * Every metric Switchyard exports, declared once with its help text, and the record* verbs that
 * call sites use. Labels are bounded: method names come through MethodPolicy.label (unknown ->
 * `other`), upstreams by configured name, outcomes and reasons from closed sets. No URL ever.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { CATALOGUE, blameOf, type ErrorName } from '../jsonrpc/errors.js';
import { BoundCounter, BoundHistogram, Children } from './bound.js';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Every reason a call moves on to another upstream (upstream/classify.ts RetryReason, and null answers). */
const FAILOVER_REASONS = [
  'transport',
  'timeout',
  'http_5xx',
  'http_429',
  'http_other',
  'bad_body',
  'node_limit',
  'node_method_missing',
  'node_missing_block',
  'null_answer',
] as const;

/**
 * How a call ended. `client_error` and `service_error` are errors Switchyard produced itself, split
 * by who caused them (jsonrpc/errors.ts blameOf): the error-ratio alert reads only the second.
 * `node_error`: a node's own error passed through verbatim (reverted, nonce too low, ...).
 */
export const CALL_OUTCOMES = ['ok', 'cached', 'node_error', 'client_error', 'service_error'] as const;
export type CallOutcome = (typeof CALL_OUTCOMES)[number];

/** The `reason` label of calls_total: a catalogue name for Switchyard's own errors, `none` otherwise. */
export type CallReason = ErrorName | 'none';
export const CALL_REASONS: readonly CallReason[] = ['none', ...(Object.keys(CATALOGUE) as ErrorName[])];

/** Method label of calls that never had a readable method (invalid elements, bodies refused whole). */
export const INVALID_METHOD = 'invalid';

export const BREAKER_STATES = ['closed', 'half_open', 'open'] as const;
export type BreakerStateLabel = (typeof BREAKER_STATES)[number];

export const RELOAD_RESULTS = ['success', 'failure'] as const;
/** Kinds of uptime incident (uptime/tracker.ts). */
export const UPTIME_INCIDENT_KINDS = ['unreachable', 'stalled'] as const;

export class Metrics {
  readonly registry = new Registry();
  private readonly calls = new Counter({
    name: 'switchyard_calls_total',
    help: 'JSON-RPC calls, each counted once, refused ones included: by method, outcome (ok, cached, node_error, client_error, service_error) and reason (the error catalogue name, or none)',
    labelNames: ['method', 'outcome', 'reason'],
    registers: [this.registry],
  });
  private readonly callSeconds = new Histogram({
    name: 'switchyard_call_duration_seconds',
    help: 'Time to answer one JSON-RPC call, by method',
    labelNames: ['method'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly httpRequests = new Counter({
    name: 'switchyard_http_requests_total',
    help: 'HTTP requests on the JSON-RPC ports (WebSocket upgrades included), by status',
    labelNames: ['status'],
    registers: [this.registry],
  });
  private readonly batchSize = new Histogram({
    name: 'switchyard_batch_size',
    help: 'Calls per HTTP request (1 for a single call)',
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 1000],
    registers: [this.registry],
  });
  private readonly upstreamCalls = new Counter({
    name: 'switchyard_upstream_calls_total',
    help: 'Calls sent to upstreams, by upstream, method and outcome',
    labelNames: ['upstream', 'method', 'outcome'],
    registers: [this.registry],
  });
  private readonly upstreamSeconds = new Histogram({
    name: 'switchyard_upstream_duration_seconds',
    help: 'Upstream call latency, by upstream and method',
    labelNames: ['upstream', 'method'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly failovers = new Counter({
    name: 'switchyard_failovers_total',
    help: 'Calls retried on another upstream, by reason',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  private readonly quarantines = new Counter({
    name: 'switchyard_upstream_quarantined_total',
    help: 'Times an upstream was quarantined for answering another chain id',
    labelNames: ['upstream'],
    registers: [this.registry],
  });
  private readonly reorgs = new Counter({ name: 'switchyard_reorgs_total', help: 'Chain reorganisations seen by the head tracker', registers: [this.registry] });
  private readonly redisRefused = new Counter({
    name: 'switchyard_redis_values_refused_total',
    help: "Values read from a shared Redis and refused as input: a cache entry that is not one JSON value answering its call, a shared head that is not a height or beyond what this replica's nodes make possible; by use (cache, heads)",
    labelNames: ['use'],
    registers: [this.registry],
  });
  readonly upstreamHead = new Gauge({
    name: 'switchyard_upstream_head_block_number',
    help: 'Latest block number seen from each upstream (-1 before the first)',
    labelNames: ['upstream'],
    registers: [this.registry],
  });
  readonly upstreamLag = new Gauge({
    name: 'switchyard_upstream_lag_blocks',
    help: 'Blocks each upstream is behind the fleet head',
    labelNames: ['upstream'],
    registers: [this.registry],
  });
  readonly upstreamHealthy = new Gauge({
    name: 'switchyard_upstream_healthy',
    help: '1 when the upstream is reachable, on the right chain and routable',
    labelNames: ['upstream'],
    registers: [this.registry],
  });
  readonly upstreamInFlight = new Gauge({
    name: 'switchyard_upstream_in_flight',
    help: 'Calls outstanding at each upstream',
    labelNames: ['upstream'],
    registers: [this.registry],
  });
  private readonly upstreamBreaker = new Gauge({
    name: 'switchyard_upstream_breaker_state',
    help: 'Circuit breaker per upstream: 1 on the series of its current state (closed, half_open, open), 0 on the others',
    labelNames: ['upstream', 'state'],
    registers: [this.registry],
  });
  readonly upstreamLatencyEwma = new Gauge({
    name: 'switchyard_upstream_latency_ewma_seconds',
    help: 'Moving average latency per upstream (a selection input)',
    labelNames: ['upstream'],
    registers: [this.registry],
  });
  readonly fleetHead = new Gauge({
    name: 'switchyard_fleet_head_block_number',
    help: 'Highest block number among healthy upstreams (-1 before the first)',
    registers: [this.registry],
  });
  readonly fleetFinalized = new Gauge({ name: 'switchyard_fleet_finalized_block_number', help: 'Finalized block number of the fleet', registers: [this.registry] });
  private readonly cacheLookups = new Counter({
    name: 'switchyard_cache_lookups_total',
    help: 'Cache lookups by class (immutable, head, tx) and result (hit, miss)',
    labelNames: ['class', 'result'],
    registers: [this.registry],
  });
  private readonly cacheEvictions = new Counter({
    name: 'switchyard_cache_evictions_total',
    help: 'Entries evicted from the memory cache to stay under cache.maxBytes',
    registers: [this.registry],
  });
  private readonly coalesced = new Counter({
    name: 'switchyard_coalesced_calls_total',
    help: 'Calls that shared an identical call already in flight instead of reaching an upstream',
    registers: [this.registry],
  });
  readonly cacheBytes = new Gauge({ name: 'switchyard_cache_bytes', help: 'Bytes held by the memory cache (keys + answers + overhead)', registers: [this.registry] });
  readonly cacheEntries = new Gauge({ name: 'switchyard_cache_entries', help: 'Entries in the memory cache', registers: [this.registry] });
  readonly cacheRedisUp = new Gauge({ name: 'switchyard_cache_redis_up', help: '1 while the shared Redis cache level is reachable', registers: [this.registry] });
  readonly cacheRedisEnabled = new Gauge({
    name: 'switchyard_cache_redis_enabled',
    help: '1 when a shared Redis cache level is configured (switchyard_cache_redis_up means something only then)',
    registers: [this.registry],
  });
  readonly maxLagBlocks = new Gauge({
    name: 'switchyard_routing_max_lag_blocks',
    help: 'routing.maxLagBlocks in force: the lag beyond which an upstream gets no `latest` calls (alert threshold)',
    registers: [this.registry],
  });
  private readonly rateLimited = new Counter({
    name: 'switchyard_rate_limited_calls_total',
    help: 'Calls refused by a limit, by reason (rate, ip_concurrency, overloaded)',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  private readonly rateLimitFallback = new Counter({
    name: 'switchyard_rate_limit_fallback_total',
    help: 'Requests whose rate limits were applied from local memory because the shared Redis was unreachable',
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({ name: 'switchyard_in_flight_calls', help: 'Calls being worked on', registers: [this.registry] });
  readonly wsConnections = new Gauge({ name: 'switchyard_ws_connections', help: 'Open WebSocket connections', registers: [this.registry] });
  readonly wsSubscriptions = new Gauge({
    name: 'switchyard_ws_subscriptions',
    help: 'Active subscriptions, by kind (newHeads, logs, newPendingTransactions)',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  readonly wsNotifications = new Counter({
    name: 'switchyard_ws_notifications_total',
    help: 'Subscription notifications sent to WebSocket clients, by kind',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  /** Connections refused by the PROXY protocol check (server/proxy-protocol.ts). */
  readonly proxyRefused = new Counter({
    name: 'switchyard_proxy_protocol_refused_total',
    help: 'Connections refused by server.proxyProtocol, by reason (untrusted_header, bad_header, timeout)',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  /** Client connections on the JSON-RPC listeners and those refused by a cap (limits/connections.ts). */
  readonly connections = new Gauge({
    name: 'switchyard_connections',
    help: 'Client connections open on server.port and server.wsPort together, WebSockets included',
    registers: [this.registry],
  });
  readonly connectionsRefused = new Counter({
    name: 'switchyard_connections_refused_total',
    help: 'Connections closed at once because a cap was reached, by reason (total: server.maxConnections, ip: server.maxConnectionsPerIp)',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  readonly wsCloses = new Counter({
    name: 'switchyard_ws_closes_total',
    help: 'WebSocket connections closed by Switchyard, by reason (slow_reader, too_large, dead_peer, shutdown)',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  private readonly uptimeProbes = new Counter({
    name: 'switchyard_uptime_probes_total',
    help: 'Uptime page probes by check (reachable, advancing) and result (ok, fail)',
    labelNames: ['check', 'result'],
    registers: [this.registry],
  });
  readonly uptimeIncidentOpen = new Gauge({
    name: 'switchyard_uptime_incident_open',
    help: '1 while an uptime incident of this kind (unreachable, stalled) is open on the public uptime page',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  readonly uptimeHeadAge = new Gauge({
    name: 'switchyard_uptime_head_age_seconds',
    help: 'Seconds since the fleet head last rose, as the uptime page reports it',
    registers: [this.registry],
  });
  readonly uptimeStorePersistent = new Gauge({
    name: 'switchyard_uptime_store_persistent',
    help: '1 while uptime history is written to the uptime.store file; 0 when it is kept in memory (store null, or the file failed)',
    registers: [this.registry],
  });
  private readonly buildInfo = new Gauge({
    name: 'switchyard_build_info',
    help: 'Always 1: the running version and the configured chain id (hex, as eth_chainId answers)',
    labelNames: ['version', 'chain_id'],
    registers: [this.registry],
  });
  private readonly reloads = new Counter({
    name: 'switchyard_config_reloads_total',
    help: 'Configuration reloads (SIGHUP or POST /-/reload), by result (success, failure)',
    labelNames: ['result'],
    registers: [this.registry],
  });
  private readonly reloadOk = new Gauge({
    name: 'switchyard_config_last_reload_successful',
    help: '1 when the last configuration reload (or the start) succeeded, 0 when the last one was refused',
    registers: [this.registry],
  });
  private readonly reloadAt = new Gauge({
    name: 'switchyard_config_last_reload_success_timestamp_seconds',
    help: 'Unix time of the last successful configuration load (the start counts)',
    registers: [this.registry],
  });
  private readonly quarantinedNow = new Gauge({
    name: 'switchyard_upstream_quarantined',
    help: '1 while the upstream is quarantined for answering another chain id',
    labelNames: ['upstream'],
    registers: [this.registry],
  });

  // Hot-path series, bound on first use (bound.ts): recording them costs no label hashing.
  private readonly callChildren = new Children((method, outcome) => new Children((reason) => new BoundCounter(this.calls, { method, outcome, reason })));
  private readonly callSecondsChildren = new Children((method) => new BoundHistogram(this.callSeconds, { method }));
  private readonly httpChildren = new Map<number, BoundCounter>();
  private readonly batchSizeChild = new BoundHistogram(this.batchSize, {});
  private readonly upstreamCallChildren = new Children((upstream, method) => new Children((outcome) => new BoundCounter(this.upstreamCalls, { upstream, method, outcome })));
  private readonly upstreamSecondsChildren = new Children((upstream, method) => new BoundHistogram(this.upstreamSeconds, { upstream, method }));
  private readonly cacheLookupChildren = new Children((cls, result) => new BoundCounter(this.cacheLookups, { class: cls, result }));

  constructor(opts: { processMetrics?: boolean; version?: string; chainId?: number } = {}) {
    for (const kind of ['newHeads', 'logs', 'newPendingTransactions']) {
      this.wsSubscriptions.set({ kind }, 0);
      this.wsNotifications.inc({ kind }, 0);
    }
    for (const reason of ['slow_reader', 'too_large', 'dead_peer', 'shutdown']) this.wsCloses.inc({ reason }, 0);
    for (const reason of ['total', 'ip']) this.connectionsRefused.inc({ reason }, 0);
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
    this.buildInfo.set({ version: opts.version ?? 'unknown', chain_id: `0x${(opts.chainId ?? 0).toString(16)}` }, 1);
    for (const result of RELOAD_RESULTS) this.reloads.inc({ result }, 0);
    this.reloadOk.set(1);
    this.reloadAt.set(Math.floor(Date.now() / 1000));
    // Series that exist from the start read 0 on dashboards instead of "no data".
    for (const reason of FAILOVER_REASONS) this.failovers.inc({ reason }, 0);
    for (const reason of ['rate', 'ip_concurrency', 'overloaded'] as const) this.rateLimited.inc({ reason }, 0);
    for (const cls of ['immutable', 'head', 'tx']) for (const result of ['hit', 'miss']) this.cacheLookups.inc({ class: cls, result }, 0);
    for (const check of ['reachable', 'advancing']) for (const result of ['ok', 'fail']) this.uptimeProbes.inc({ check, result }, 0);
    for (const kind of UPTIME_INCIDENT_KINDS) this.uptimeIncidentOpen.set({ kind }, 0);
  }

  /** Per-upstream series that only count events start at 0 when the upstream is configured. */
  declareUpstream(upstream: string): void {
    this.quarantines.inc({ upstream }, 0);
    this.quarantinedNow.set({ upstream }, 0);
  }

  /** Calls worked on by the pipeline (`calls` of them with the same figures): each counted once, and its time observed. */
  recordCall(method: string, outcome: CallOutcome, reason: CallReason, seconds: number, calls = 1): void {
    this.callChildren.get(method, outcome).get(reason).inc(calls);
    this.callSecondsChildren.get(method).observe(seconds, calls);
  }

  /**
   * Calls refused before the pipeline (invalid, rate limited, shed, bodies refused whole): counted
   * once each in calls_total, no latency observed (nothing was worked on).
   */
  recordRefused(method: string, reason: ErrorName, calls = 1): void {
    if (calls > 0) this.calls.inc({ method, outcome: blameOf(reason) === 'client' ? 'client_error' : 'service_error', reason }, calls);
  }

  /** One series per state, 1 on the current one: `switchyard_upstream_breaker_state{state="open"} == 1` reads as it says. */
  setBreakerState(upstream: string, state: BreakerStateLabel): void {
    for (const s of BREAKER_STATES) this.upstreamBreaker.set({ upstream, state: s }, s === state ? 1 : 0);
  }

  setQuarantined(upstream: string, on: boolean): void {
    this.quarantinedNow.set({ upstream }, on ? 1 : 0);
  }

  /** A configuration load was attempted (SIGHUP, POST /-/reload): the result and, on success, when. */
  recordReload(ok: boolean): void {
    this.reloads.inc({ result: ok ? 'success' : 'failure' });
    this.reloadOk.set(ok ? 1 : 0);
    if (ok) this.reloadAt.set(Math.floor(Date.now() / 1000));
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

  /** `calls` calls of one exchange with the same method and outcome, each taking `seconds`. */
  recordUpstreamCall(upstream: string, method: string, outcome: string, seconds: number, calls = 1): void {
    this.upstreamCallChildren.get(upstream, method).get(outcome).inc(calls);
    this.upstreamSecondsChildren.get(upstream, method).observe(seconds, calls);
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

  recordRedisRefused(use: 'cache' | 'heads'): void {
    this.redisRefused.inc({ use });
  }

  recordUptimeProbe(reachable: boolean, advancing: boolean): void {
    this.uptimeProbes.inc({ check: 'reachable', result: reachable ? 'ok' : 'fail' });
    this.uptimeProbes.inc({ check: 'advancing', result: advancing ? 'ok' : 'fail' });
  }

  recordQuarantine(upstream: string): void {
    this.quarantines.inc({ upstream });
  }

  /** Drops every series of an upstream removed by a reload, so dead names do not linger. */
  forgetUpstream(upstream: string): void {
    for (const g of [this.upstreamHead, this.upstreamLag, this.upstreamHealthy, this.upstreamInFlight, this.upstreamLatencyEwma, this.quarantinedNow]) {
      g.remove({ upstream });
    }
    for (const state of BREAKER_STATES) this.upstreamBreaker.remove({ upstream, state });
  }
}
