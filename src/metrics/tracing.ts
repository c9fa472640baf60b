/**
 * Tracing (src/tracing/): spans handed to the collector, and spans lost on the way, by why. Both
 * series exist from the start (at 0) whether or not tracing is on, so an alert can read them.
 */
import { Counter, type Registry } from 'prom-client';

/** Why a span was not exported: the export queue was full, the collector failed or timed out, or one request made too many spans. */
export const SPAN_DROP_REASONS = ['queue_full', 'export_failed', 'trace_too_large'] as const;
export type SpanDropReason = (typeof SPAN_DROP_REASONS)[number];

export class TracingMetrics {
  private readonly dropped: Counter;
  private readonly exported: Counter;

  constructor(registry: Registry) {
    this.dropped = new Counter({
      name: 'switchyard_tracing_spans_dropped_total',
      help: 'Spans of kept traces that never reached the collector, by reason (queue_full, export_failed, trace_too_large)',
      labelNames: ['reason'],
      registers: [registry],
    });
    for (const reason of SPAN_DROP_REASONS) this.dropped.inc({ reason }, 0);
    this.exported = new Counter({
      name: 'switchyard_tracing_spans_exported_total',
      help: 'Spans the collector accepted',
      registers: [registry],
    });
  }

  recordSpansDropped(reason: SpanDropReason, n: number): void {
    if (n > 0) this.dropped.inc({ reason }, n);
  }

  recordSpansExported(n: number): void {
    if (n > 0) this.exported.inc(n);
  }
}
