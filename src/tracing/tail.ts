/**
 * The tail decision for a request's spans: every span of a traced request is recorded, and held
 * here until the request ends; then they all go to the export queue (a sampled, slow or failed
 * request) or are let go. Held spans are bounded per request (MAX_SPANS_PER_TRACE) and open
 * requests in all (MAX_OPEN_TRACES: past it a request is not traced); the export queue is the
 * BatchSpanProcessor's, bounded by tracing.maxQueueSize. Every span of a kept trace that does not
 * reach the collector is counted by why (switchyard_tracing_spans_dropped_total).
 */
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { Metrics } from '../metrics/registry.js';

/** More spans than any request makes unless it fails over call after call: the rest are counted, not held. */
export const MAX_SPANS_PER_TRACE = 512;
/** Requests being traced at once; past it a request goes untraced (the server's own caps are lower). */
export const MAX_OPEN_TRACES = 20_000;

interface Held {
  spans: ReadableSpan[];
  /** Requests of this trace still open: two requests may carry one client trace id. */
  open: number;
  keep: boolean;
  overflow: number;
}

/** How many spans the BatchSpanProcessor holds now: handed to it, less those taken for export. */
export class QueueCount {
  queued = 0;
  constructor(readonly max: number) {}
}

export class TailProcessor implements SpanProcessor {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly next: SpanProcessor,
    private readonly queue: QueueCount,
    private readonly metrics: Metrics,
  ) {}

  /** A request of trace `traceId` begins; false when too many are open to trace one more. */
  open(traceId: string): boolean {
    const h = this.held.get(traceId);
    if (h !== undefined) {
      h.open++;
      return true;
    }
    if (this.held.size >= MAX_OPEN_TRACES) return false;
    this.held.set(traceId, { spans: [], open: 1, keep: false, overflow: 0 });
    return true;
  }

  /** A request of the trace ended: once the trace's last one has, its spans are exported (keep) or let go. */
  settle(traceId: string, keep: boolean): void {
    const h = this.held.get(traceId);
    if (h === undefined) return;
    h.keep ||= keep;
    if (--h.open > 0) return;
    this.held.delete(traceId);
    if (!h.keep) return;
    this.metrics.recordSpansDropped('trace_too_large', h.overflow);
    let full = 0;
    for (const span of h.spans) {
      if (this.queue.queued >= this.queue.max) full++;
      else {
        this.queue.queued++;
        this.next.onEnd(span);
      }
    }
    this.metrics.recordSpansDropped('queue_full', full);
  }

  onStart(_span: Span): void {}

  onEnd(span: ReadableSpan): void {
    // A span of no open request (its request already settled) is not exported.
    const h = this.held.get(span.spanContext().traceId);
    if (h === undefined) return;
    if (h.spans.length < MAX_SPANS_PER_TRACE) h.spans.push(span);
    else h.overflow++;
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    this.held.clear();
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
