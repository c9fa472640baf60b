/**
 * The client's side: JSON-RPC calls and HTTP requests as they were answered, and the calls the
 * limits refused. Method labels come through MethodPolicy.label (unknown -> `other`).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { CATALOGUE, blameOf, type ErrorName } from '../jsonrpc/errors.js';
import { BoundCounter, BoundHistogram, Children } from './bound.js';
import { LIMIT_REFUSALS, type LimitRefusal } from './labels.js';

export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

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

export class CallMetrics {
  private readonly calls: Counter;
  private readonly callSeconds: Histogram;
  private readonly httpRequests: Counter;
  private readonly batchSize: Histogram;
  private readonly rateLimited: Counter;
  private readonly rateLimitFallback: Counter;
  private readonly inFlight: Gauge;
  // Hot-path series, bound on first use (bound.ts): recording them costs no label hashing.
  private readonly callChildren: Children<Children<BoundCounter>>;
  private readonly callSecondsChildren: Children<BoundHistogram>;
  private readonly httpChildren = new Map<number, BoundCounter>();
  private readonly batchSizeChild: BoundHistogram;

  constructor(registry: Registry) {
    const registers = [registry];
    this.calls = new Counter({
      name: 'switchyard_calls_total',
      help: 'JSON-RPC calls, each counted once, refused ones included: by method, outcome (ok, cached, node_error, client_error, service_error) and reason (the error catalogue name, or none)',
      labelNames: ['method', 'outcome', 'reason'],
      registers,
    });
    this.callSeconds = new Histogram({
      name: 'switchyard_call_duration_seconds',
      help: 'Time to answer one JSON-RPC call, by method',
      labelNames: ['method'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.httpRequests = new Counter({
      name: 'switchyard_http_requests_total',
      help: 'HTTP requests on the JSON-RPC ports (WebSocket upgrades included), by status',
      labelNames: ['status'],
      registers,
    });
    this.batchSize = new Histogram({
      name: 'switchyard_batch_size',
      help: 'Calls per HTTP request (1 for a single call)',
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 1000],
      registers,
    });
    this.rateLimited = new Counter({
      name: 'switchyard_rate_limited_calls_total',
      help: 'Calls refused by a limit, by reason (rate, ip_concurrency, overloaded)',
      labelNames: ['reason'],
      registers,
    });
    this.rateLimitFallback = new Counter({
      name: 'switchyard_rate_limit_fallback_total',
      help: 'Requests whose rate limits were applied from local memory because the shared Redis was unreachable',
      registers,
    });
    this.inFlight = new Gauge({ name: 'switchyard_in_flight_calls', help: 'Calls being worked on', registers });
    for (const reason of LIMIT_REFUSALS) this.rateLimited.inc({ reason }, 0);
    this.callChildren = new Children(
      (method, outcome) => new Children((reason) => new BoundCounter(this.calls, { method, outcome, reason })),
    );
    this.callSecondsChildren = new Children((method) => new BoundHistogram(this.callSeconds, { method }));
    this.batchSizeChild = new BoundHistogram(this.batchSize, {});
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
    if (calls > 0)
      this.calls.inc(
        { method, outcome: blameOf(reason) === 'client' ? 'client_error' : 'service_error', reason },
        calls,
      );
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

  recordRateLimited(reason: LimitRefusal, calls: number): void {
    this.rateLimited.inc({ reason }, calls);
  }

  recordRateLimitFallback(): void {
    this.rateLimitFallback.inc();
  }

  setInFlight(calls: number): void {
    this.inFlight.set(calls);
  }
}
