/**
 * The nodes' side: calls sent to each upstream, failovers, and each upstream's head, lag, health,
 * load and breaker; the fleet's head. Upstreams are labelled by configured name, never by URL.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { BoundCounter, BoundHistogram, Children } from './bound.js';
import { LATENCY_BUCKETS } from './calls.js';
import { BREAKER_STATES, FAILOVER_REASONS, type BreakerStateLabel } from './labels.js';

/**
 * `null_answer` and `unverified` are routing's own: a node answered null for a block another node
 * may already have; a node's answer could not be verified and another node is asked for the same.
 */
export const FAILOVER_LABELS = [...FAILOVER_REASONS, 'null_answer', 'unverified'] as const;
export type FailoverLabel = (typeof FAILOVER_LABELS)[number];

/** A gauge per upstream, labelled `upstream` only. */
function perUpstream(registry: Registry, name: string, help: string): Gauge {
  return new Gauge({ name, help, labelNames: ['upstream'], registers: [registry] });
}

/** What happened: calls sent to upstreams and their latency, failovers, quarantines, limits, reorgs. */
function eventSeries(registry: Registry) {
  const registers = [registry];
  return {
    calls: new Counter({
      name: 'switchyard_upstream_calls_total',
      help: 'Calls sent to upstreams, by upstream, method and outcome',
      labelNames: ['upstream', 'method', 'outcome'],
      registers,
    }),
    seconds: new Histogram({
      name: 'switchyard_upstream_duration_seconds',
      help: 'Upstream call latency, by upstream and method',
      labelNames: ['upstream', 'method'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    failovers: new Counter({
      name: 'switchyard_failovers_total',
      help: 'Calls retried on another upstream, by reason',
      labelNames: ['reason'],
      registers,
    }),
    quarantines: new Counter({
      name: 'switchyard_upstream_quarantined_total',
      help: 'Times an upstream was quarantined, for answering another chain id or for wrong answers (routing.verify)',
      labelNames: ['upstream'],
      registers,
    }),
    rateLimited: new Counter({
      name: 'switchyard_upstream_rate_limited_total',
      help: 'Times an upstream answered "too many requests" (HTTP 429, -32005 or a limit message), each holding it off',
      labelNames: ['upstream'],
      registers,
    }),
    heldLaneFull: new Counter({
      name: 'switchyard_upstream_held_lane_full_total',
      help: "Held calls (eth_sendRawTransactionSync, traces) a node's full held lane (upstreams[].heldConnections) turned away: each went to another node, or got HELD_LANE_FULL",
      labelNames: ['upstream'],
      registers,
    }),
    reorgs: new Counter({
      name: 'switchyard_reorgs_total',
      help: 'Chain reorganisations seen by the head tracker',
      registers,
    }),
  };
}

/** Each upstream's state now: head, lag, health, load, breaker, latency, quarantine, hold-off. */
function upstreamGauges(registry: Registry) {
  return {
    head: perUpstream(
      registry,
      'switchyard_upstream_head_block_number',
      'Latest block number seen from each upstream (-1 before the first)',
    ),
    lag: perUpstream(registry, 'switchyard_upstream_lag_blocks', 'Blocks each upstream is behind the fleet head'),
    healthy: perUpstream(
      registry,
      'switchyard_upstream_healthy',
      '1 when the upstream is reachable, on the right chain and routable',
    ),
    inFlight: perUpstream(registry, 'switchyard_upstream_in_flight', 'Calls outstanding at each upstream'),
    heldInFlight: perUpstream(
      registry,
      'switchyard_upstream_held_calls_in_flight',
      'Held calls (eth_sendRawTransactionSync, traces) outstanding at each upstream, on its held lane (at most upstreams[].heldConnections)',
    ),
    breaker: new Gauge({
      name: 'switchyard_upstream_breaker_state',
      help: 'Circuit breaker per upstream: 1 on the series of its current state (closed, half_open, open), 0 on the others',
      labelNames: ['upstream', 'state'],
      registers: [registry],
    }),
    latencyEwma: perUpstream(
      registry,
      'switchyard_upstream_latency_ewma_seconds',
      'Moving average latency per upstream (a selection input)',
    ),
    quarantined: perUpstream(
      registry,
      'switchyard_upstream_quarantined',
      '1 while the upstream is quarantined, for answering another chain id or for wrong answers (routing.verify)',
    ),
    heldOff: perUpstream(
      registry,
      'switchyard_upstream_held_off',
      '1 while the upstream is held off after answering "too many requests" (no calls, not a health failure)',
    ),
    cordoned: perUpstream(
      registry,
      'switchyard_upstream_cordoned',
      '1 while an operator has the upstream cordoned (no new calls; still probed)',
    ),
  };
}

/** The fleet as a whole: its head, its finalized block, and the lag threshold in force. */
function fleetGauges(registry: Registry) {
  const registers = [registry];
  return {
    head: new Gauge({
      name: 'switchyard_fleet_head_block_number',
      help: 'Highest block number among healthy upstreams (-1 before the first)',
      registers,
    }),
    finalized: new Gauge({
      name: 'switchyard_fleet_finalized_block_number',
      help: 'Finalized block number of the fleet',
      registers,
    }),
    maxLagBlocks: new Gauge({
      name: 'switchyard_routing_max_lag_blocks',
      help: 'routing.maxLagBlocks in force: the lag beyond which an upstream gets no `latest` calls (alert threshold)',
      registers,
    }),
  };
}

export class UpstreamMetrics {
  private readonly events: ReturnType<typeof eventSeries>;
  private readonly upstreams: ReturnType<typeof upstreamGauges>;
  private readonly fleet: ReturnType<typeof fleetGauges>;
  // Hot-path series, bound on first use (bound.ts): recording them costs no label hashing.
  private readonly callChildren: Children<Children<BoundCounter>>;
  private readonly secondsChildren: Children<BoundHistogram>;

  constructor(registry: Registry) {
    // Registered in this order, the order /metrics lists them in.
    this.events = eventSeries(registry);
    this.upstreams = upstreamGauges(registry);
    this.fleet = fleetGauges(registry);
    const { calls, seconds, failovers } = this.events;
    for (const reason of FAILOVER_LABELS) failovers.inc({ reason }, 0);
    this.callChildren = new Children(
      (upstream, method) => new Children((outcome) => new BoundCounter(calls, { upstream, method, outcome })),
    );
    this.secondsChildren = new Children((upstream, method) => new BoundHistogram(seconds, { upstream, method }));
  }

  /** Per-upstream series that only count events start at 0 when the upstream is configured. */
  declareUpstream(upstream: string): void {
    this.events.quarantines.inc({ upstream }, 0);
    this.upstreams.quarantined.set({ upstream }, 0);
    this.events.rateLimited.inc({ upstream }, 0);
    this.events.heldLaneFull.inc({ upstream }, 0);
    this.upstreams.heldOff.set({ upstream }, 0);
    this.upstreams.cordoned.set({ upstream }, 0);
  }

  /** Drops every series of an upstream removed by a reload, so dead names do not linger. */
  forgetUpstream(upstream: string): void {
    const { head, lag, healthy, inFlight, heldInFlight, latencyEwma, quarantined, heldOff, cordoned, breaker } =
      this.upstreams;
    for (const g of [head, lag, healthy, inFlight, heldInFlight, latencyEwma, quarantined, heldOff, cordoned])
      g.remove({ upstream });
    for (const state of BREAKER_STATES) breaker.remove({ upstream, state });
  }

  /** `calls` calls of one exchange with the same method and outcome, each taking `seconds`. */
  recordUpstreamCall(upstream: string, method: string, outcome: string, seconds: number, calls = 1): void {
    this.callChildren.get(upstream, method).get(outcome).inc(calls);
    this.secondsChildren.get(upstream, method).observe(seconds, calls);
  }

  recordFailover(reason: FailoverLabel): void {
    this.events.failovers.inc({ reason });
  }

  recordQuarantine(upstream: string): void {
    this.events.quarantines.inc({ upstream });
  }

  /** The upstream answered "too many requests" (one exchange, however many of its calls it refused). */
  recordUpstreamRateLimited(upstream: string): void {
    this.events.rateLimited.inc({ upstream });
  }

  setHeldOff(upstream: string, on: boolean): void {
    this.upstreams.heldOff.set({ upstream }, on ? 1 : 0);
  }

  setQuarantined(upstream: string, on: boolean): void {
    this.upstreams.quarantined.set({ upstream }, on ? 1 : 0);
  }

  setUpstreamCordoned(upstream: string, on: boolean): void {
    this.upstreams.cordoned.set({ upstream }, on ? 1 : 0);
  }

  /** One series per state, 1 on the current one: `switchyard_upstream_breaker_state{state="open"} == 1` reads as it says. */
  setBreakerState(upstream: string, state: BreakerStateLabel): void {
    for (const s of BREAKER_STATES) this.upstreams.breaker.set({ upstream, state: s }, s === state ? 1 : 0);
  }

  recordReorg(): void {
    this.events.reorgs.inc();
  }

  setUpstreamHead(upstream: string, head: number): void {
    this.upstreams.head.set({ upstream }, head);
  }

  /** -1 while the upstream or the fleet has no head yet. */
  setUpstreamLag(upstream: string, blocks: number): void {
    this.upstreams.lag.set({ upstream }, blocks);
  }

  setUpstreamHealthy(upstream: string, healthy: boolean): void {
    this.upstreams.healthy.set({ upstream }, healthy ? 1 : 0);
  }

  setUpstreamInFlight(upstream: string, calls: number): void {
    this.upstreams.inFlight.set({ upstream }, calls);
  }

  setUpstreamHeldInFlight(upstream: string, calls: number): void {
    this.upstreams.heldInFlight.set({ upstream }, calls);
  }

  /** A held call passed `upstream` over: its held lane was full (routing/lane.ts). */
  recordHeldLaneFull(upstream: string): void {
    this.events.heldLaneFull.inc({ upstream });
  }

  setUpstreamLatency(upstream: string, seconds: number): void {
    this.upstreams.latencyEwma.set({ upstream }, seconds);
  }

  setFleetHead(head: number): void {
    this.fleet.head.set(head);
  }

  setFleetFinalized(block: number): void {
    this.fleet.finalized.set(block);
  }

  setMaxLagBlocks(blocks: number): void {
    this.fleet.maxLagBlocks.set(blocks);
  }
}
