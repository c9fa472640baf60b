/**
 * The tail decision for a request's spans: every span of a traced request is recorded (record.ts)
 * and held by its request until it ends; then they all go to the export queue (a sampled, slow or
 * failed request) or are let go. Held spans are bounded per request (MAX_SPANS_PER_TRACE) and open
 * requests in all (MAX_OPEN_TRACES: past it a request is not traced); the export queue is the
 * BatchSpanProcessor's, bounded by tracing.maxQueueSize. Every span of a kept trace that does not
 * reach the collector is counted by why (switchyard_tracing_spans_dropped_total).
 */
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { Metrics } from '../metrics/registry.js';
import { toReadable, type SpanOrigin, type SpanRecord, type TraceOf } from './record.js';

/** More spans than any request makes unless it fails over call after call: the rest are counted, not held. */
export const MAX_SPANS_PER_TRACE = 512;
/** Requests being traced at once; past it a request goes untraced (the server's own caps are lower). */
export const MAX_OPEN_TRACES = 20_000;

/** How many spans the BatchSpanProcessor holds now: handed to it, less those taken for export. */
export class QueueCount {
  queued = 0;
  constructor(readonly max: number) {}
}

export class TailExport {
  private open = 0;

  constructor(
    private readonly next: SpanProcessor,
    private readonly queue: QueueCount,
    private readonly metrics: Metrics,
    private readonly origin: SpanOrigin,
  ) {}

  /** A request's trace begins; false when too many are open to trace one more. */
  begin(): boolean {
    if (this.open >= MAX_OPEN_TRACES) return false;
    this.open++;
    return true;
  }

  /** A request's trace ended: its records go to the export queue (keep) or are let go. */
  settle(trace: TraceOf, records: readonly SpanRecord[], overflow: number, keep: boolean): void {
    this.open--;
    if (!keep) return;
    this.metrics.recordSpansDropped('trace_too_large', overflow);
    let full = 0;
    for (const r of records) {
      if (this.queue.queued >= this.queue.max) full++;
      else {
        this.queue.queued++;
        this.next.onEnd(toReadable(r, trace, this.origin));
      }
    }
    this.metrics.recordSpansDropped('queue_full', full);
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.next.shutdown();
  }
}

/**
 * The OTLP exporter as the BatchSpanProcessor sees it, counting: spans leave the queue when an
 * export takes them, and are exported or dropped by the collector's answer (or its silence, which
 * the exporter's own timeout turns into a failure).
 */
export class CountingExporter implements SpanExporter {
  constructor(
    private readonly inner: SpanExporter,
    private readonly queue: QueueCount,
    private readonly metrics: Metrics,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.queue.queued = Math.max(0, this.queue.queued - spans.length);
    let settled = false;
    this.inner.export(spans, (result) => {
      if (settled) return;
      settled = true;
      if (result.code === ExportResultCode.SUCCESS) this.metrics.recordSpansExported(spans.length);
      else this.metrics.recordSpansDropped('export_failed', spans.length);
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}
