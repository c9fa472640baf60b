/**
 * The nodes' side: calls sent to each upstream, failovers, and each upstream's head, lag, health,
 * load and breaker; the fleet's head. Upstreams are labelled by configured name, never by URL.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { FAILOVER_REASONS } from '../upstream/classify.js';
import { BREAKER_STATES, type BreakerStateLabel } from '../upstream/health.js';
import { BoundCounter, BoundHistogram, Children } from './bound.js';
import { LATENCY_BUCKETS } from './calls.js';

/** `null_answer` is routing's own: a node answered null for a block another node may already have. */
export const FAILOVER_LABELS = [...FAILOVER_REASONS, 'null_answer'] as const;
export type FailoverLabel = (typeof FAILOVER_LABELS)[number];

/** A gauge per upstream, labelled `upstream` only. */
function perUpstream(registry: Registry, name: string, help: string): Gauge {
  return new Gauge({ name, help, labelNames: ['upstream'], registers: [registry] });
}

export class UpstreamMetrics {
  private readonly upstreamCalls: Counter;
  private readonly upstreamSeconds: Histogram;
  private readonly failovers: Counter;
  private readonly quarantines: Counter;
  private readonly reorgs: Counter;
  private readonly head: Gauge;
  private readonly lag: Gauge;
  private readonly healthy: Gauge;
  private readonly inFlight: Gauge;
  private readonly breaker: Gauge;
  private readonly latencyEwma: Gauge;
  private readonly quarantinedNow: Gauge;
  private readonly fleetHead: Gauge;
  private readonly fleetFinalized: Gauge;
  private readonly maxLagBlocks: Gauge;
  // Hot-path series, bound on first use (bound.ts): recording them costs no label hashing.
  private readonly callChildren: Children<Children<BoundCounter>>;
  private readonly secondsChildren: Children<BoundHistogram>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.upstreamCalls = new Counter({
      name: 'switchyard_upstream_calls_total',
      help: 'Calls sent to upstreams, by upstream, method and outcome',
      labelNames: ['upstream', 'method', 'outcome'],
      registers,
    });
    this.upstreamSeconds = new Histogram({
      name: 'switchyard_upstream_duration_seconds',
      help: 'Upstream call latency, by upstream and method',
      labelNames: ['upstream', 'method'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.failovers = new Counter({ name: 'switchyard_failovers_total', help: 'Calls retried on another upstream, by reason', labelNames: ['reason'], registers });
    this.quarantines = new Counter({
      name: 'switchyard_upstream_quarantined_total',
      help: 'Times an upstream was quarantined for answering another chain id',
      labelNames: ['upstream'],
      registers,
    });
    this.reorgs = new Counter({ name: 'switchyard_reorgs_total', help: 'Chain reorganisations seen by the head tracker', registers });
    this.head = perUpstream(registry, 'switchyard_upstream_head_block_number', 'Latest block number seen from each upstream (-1 before the first)');
    this.lag = perUpstream(registry, 'switchyard_upstream_lag_blocks', 'Blocks each upstream is behind the fleet head');
    this.healthy = perUpstream(registry, 'switchyard_upstream_healthy', '1 when the upstream is reachable, on the right chain and routable');
    this.inFlight = perUpstream(registry, 'switchyard_upstream_in_flight', 'Calls outstanding at each upstream');
    this.breaker = new Gauge({
      name: 'switchyard_upstream_breaker_state',
      help: 'Circuit breaker per upstream: 1 on the series of its current state (closed, half_open, open), 0 on the others',
      labelNames: ['upstream', 'state'],
      registers,
    });
    this.latencyEwma = perUpstream(registry, 'switchyard_upstream_latency_ewma_seconds', 'Moving average latency per upstream (a selection input)');
    this.quarantinedNow = perUpstream(registry, 'switchyard_upstream_quarantined', '1 while the upstream is quarantined for answering another chain id');
    this.fleetHead = new Gauge({ name: 'switchyard_fleet_head_block_number', help: 'Highest block number among healthy upstreams (-1 before the first)', registers });
    this.fleetFinalized = new Gauge({ name: 'switchyard_fleet_finalized_block_number', help: 'Finalized block number of the fleet', registers });
    this.maxLagBlocks = new Gauge({
      name: 'switchyard_routing_max_lag_blocks',
      help: 'routing.maxLagBlocks in force: the lag beyond which an upstream gets no `latest` calls (alert threshold)',
      registers,
    });
    for (const reason of FAILOVER_LABELS) this.failovers.inc({ reason }, 0);
    this.callChildren = new Children((upstream, method) => new Children((outcome) => new BoundCounter(this.upstreamCalls, { upstream, method, outcome })));
    this.secondsChildren = new Children((upstream, method) => new BoundHistogram(this.upstreamSeconds, { upstream, method }));
  }

  /** Per-upstream series that only count events start at 0 when the upstream is configured. */
  declareUpstream(upstream: string): void {
    this.quarantines.inc({ upstream }, 0);
    this.quarantinedNow.set({ upstream }, 0);
  }

  /** Drops every series of an upstream removed by a reload, so dead names do not linger. */
  forgetUpstream(upstream: string): void {
    for (const g of [this.head, this.lag, this.healthy, this.inFlight, this.latencyEwma, this.quarantinedNow]) g.remove({ upstream });
    for (const state of BREAKER_STATES) this.breaker.remove({ upstream, state });
  }

  /** `calls` calls of one exchange with the same method and outcome, each taking `seconds`. */
  recordUpstreamCall(upstream: string, method: string, outcome: string, seconds: number, calls = 1): void {
    this.callChildren.get(upstream, method).get(outcome).inc(calls);
    this.secondsChildren.get(upstream, method).observe(seconds, calls);
  }

  recordFailover(reason: FailoverLabel): void {
    this.failovers.inc({ reason });
  }

  recordQuarantine(upstream: string): void {
    this.quarantines.inc({ upstream });
  }

  setQuarantined(upstream: string, on: boolean): void {
    this.quarantinedNow.set({ upstream }, on ? 1 : 0);
  }

  /** One series per state, 1 on the current one: `switchyard_upstream_breaker_state{state="open"} == 1` reads as it says. */
  setBreakerState(upstream: string, state: BreakerStateLabel): void {
    for (const s of BREAKER_STATES) this.breaker.set({ upstream, state: s }, s === state ? 1 : 0);
  }

  recordReorg(): void {
    this.reorgs.inc();
  }

  setUpstreamHead(upstream: string, head: number): void {
    this.head.set({ upstream }, head);
  }

  /** -1 while the upstream or the fleet has no head yet. */
  setUpstreamLag(upstream: string, blocks: number): void {
    this.lag.set({ upstream }, blocks);
  }

  setUpstreamHealthy(upstream: string, healthy: boolean): void {
    this.healthy.set({ upstream }, healthy ? 1 : 0);
  }

  setUpstreamInFlight(upstream: string, calls: number): void {
    this.inFlight.set({ upstream }, calls);
  }

  setUpstreamLatency(upstream: string, seconds: number): void {
    this.latencyEwma.set({ upstream }, seconds);
  }

  setFleetHead(head: number): void {
    this.fleetHead.set(head);
  }

  setFleetFinalized(block: number): void {
    this.fleetFinalized.set(block);
  }

  setMaxLagBlocks(blocks: number): void {
    this.maxLagBlocks.set(blocks);
  }
}
