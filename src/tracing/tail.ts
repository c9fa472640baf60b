/**
 * The tail decision for a request's spans: every span of a traced request is recorded (record.ts)
 * and held by its request until it ends; then they all go to the export queue (a sampled, slow or
 * failed request) or are let go. Held spans are bounded per request (MAX_SPANS_PER_TRACE) and open
 * requests in all (MAX_OPEN_TRACES: past it a request is not traced); the export queue (spans
 * handed to the export thread and not yet taken by an export) is bounded by tracing.maxQueueSize.
 * Every span of a kept trace that does not reach the collector is counted by why
 * (switchyard_tracing_spans_dropped_total).
 */
import type { Metrics } from '../metrics/registry.js';
import { toExportSpan, type ExportSpan, type SpanRecord, type TraceOf } from './record.js';

/** More spans than any request makes unless it fails over call after call: the rest are counted, not held. */
export const MAX_SPANS_PER_TRACE = 512;
/** Requests being traced at once; past it a request goes untraced (the server's own caps are lower). */
export const MAX_OPEN_TRACES = 20_000;

/** How many spans the export queue holds now: handed to the export thread, less those an export took. */
export class QueueCount {
  queued = 0;
  constructor(readonly max: number) {}
}

export class TailExport {
  private open = 0;

  constructor(
    /** Hands kept spans to the export thread (provider.ts). */
    private readonly post: (spans: ExportSpan[]) => void,
    private readonly queue: QueueCount,
    private readonly metrics: Metrics,
  ) {}

  /** A request's trace begins; false when too many are open to trace one more. */
  begin(): boolean {
    if (this.open >= MAX_OPEN_TRACES) return false;
    this.open++;
    return true;
  }

  /** A request's trace ended: its records go to the export queue (keep), as far as it has room, or are let go. */
  settle(trace: TraceOf, records: readonly SpanRecord[], overflow: number, keep: boolean): void {
    this.open--;
    if (!keep) return;
    this.metrics.recordSpansDropped('trace_too_large', overflow);
    const taken = Math.min(records.length, Math.max(0, this.queue.max - this.queue.queued));
    if (taken > 0) {
      const spans: ExportSpan[] = new Array(taken);
      for (let i = 0; i < taken; i++) spans[i] = toExportSpan(records[i]!, trace);
      this.queue.queued += taken;
      this.post(spans);
    }
    this.metrics.recordSpansDropped('queue_full', records.length - taken);
  }
}
