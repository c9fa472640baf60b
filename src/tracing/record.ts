/**
 * A span as the request path records it: plain data (a name, a kind, its parent, an id drawn
 * only when needed, two monotonic clock readings, attributes), handed to the export thread
 * (export-thread.ts), where it becomes the SDK's ReadableSpan, only when its request's trace is
 * exported. Every request is traced while it runs (a slow or failed one is exported whatever the
 * sample, and that is known only at its end), while most are let go: building SDK spans for all
 * of them cost a traced hit and miss 16-29% of their throughput. Records are made only when
 * something needs them (spans.ts), and cost a few microseconds (docs/tracing.md#cost).
 */
import { randomFillSync } from 'node:crypto';
import { SpanKind, type Attributes, type SpanContext } from '@opentelemetry/api';

export { SpanKind };

/** Random bytes for ids, taken from a pool filled a few kilobytes at a time (one syscall per 512 spans). */
const POOL = Buffer.alloc(4096);
let used = POOL.length;

function randomHex(bytes: number): string {
  if (used + bytes > POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  const from = used;
  used += bytes;
  // All zeros is the W3C's invalid id; 1 in 2^64 at worst, and then one more draw.
  for (let i = from; i < used; i++) if (POOL[i] !== 0) return POOL.toString('hex', from, used);
  return randomHex(bytes);
}

export const newSpanId = (): string => randomHex(8);

/** A new trace's id and its root span's, from one draw (one conversion to hex a request). */
export function newTraceIds(): { traceId: string; rootSpanId: string } {
  const hex = randomHex(24);
  return { traceId: hex.slice(0, 32), rootSpanId: hex.slice(32) };
}

/** Milliseconds since the epoch of a performance.now() reading (the monotonic clock's fraction kept). */
export function epochMs(monotonic: number): number {
  return performance.timeOrigin + monotonic;
}

export class SpanRecord {
  /** performance.now() readings; end is 0 while the span is open. */
  readonly start: number;
  end = 0;
  failed = false;
  private id: string | undefined = undefined;

  constructor(
    /** A SERVER span's is final when it ends: its route is known only then. */
    public name: string,
    readonly kind: SpanKind,
    /** The parent span in the same trace; null for a request's root span. */
    readonly parent: SpanRecord | null,
    readonly attributes: Attributes,
    /** Spans (same trace) this span links to: an exchange's calls. */
    readonly links?: readonly SpanRecord[],
    /** Its id when already drawn (a root's, with its trace's). */
    id?: string,
    /** When it began, if not now (a performance.now() reading). */
    start = performance.now(),
  ) {
    this.id = id;
    this.start = start;
  }

  /**
   * Drawn when first asked for: a traceparent names it (the root's, an attempt's), or the span is
   * exported. A call's span is neither on most requests, and its id is never drawn.
   */
  get spanId(): string {
    return (this.id ??= newSpanId());
  }

  /** Ends the span now, or at `at` (a clock reading the caller has already taken). */
  close(at?: number): void {
    if (this.end === 0) this.end = at ?? performance.now();
  }
}

/** The trace a request's records belong to: its id and, for the root span, the client's parent. */
export interface TraceOf {
  readonly traceId: string;
  readonly remote: SpanContext | null;
}

/**
 * A kept span as it crosses to the export thread (export-thread.ts): plain data, copied by
 * postMessage. Times are epoch milliseconds; ids hex.
 */
export interface ExportSpan {
  readonly name: string;
  readonly kind: SpanKind;
  readonly traceId: string;
  readonly spanId: string;
  /** The parent span in the same trace; absent for a request's root span. */
  readonly parentSpanId: string | undefined;
  /** The client's span, the root's parent (its traceparent); absent when the trace is our own. */
  readonly remote: { readonly spanId: string; readonly traceFlags: number } | undefined;
  /** The client's tracestate, carried by every span of its trace. */
  readonly traceState: string | undefined;
  readonly start: number;
  readonly end: number;
  readonly failed: boolean;
  readonly attributes: Attributes;
  /** Span ids (same trace) this span links to: an exchange's calls. */
  readonly links: readonly string[];
}

/** A record as it leaves for the export thread; a span still open ends now. */
export function toExportSpan(r: SpanRecord, trace: TraceOf): ExportSpan {
  const remote = r.parent === null && trace.remote !== null ? trace.remote : undefined;
  return {
    name: r.name,
    kind: r.kind,
    traceId: trace.traceId,
    spanId: r.spanId,
    parentSpanId: r.parent?.spanId,
    remote: remote === undefined ? undefined : { spanId: remote.spanId, traceFlags: remote.traceFlags },
    traceState: trace.remote?.traceState?.serialize(),
    start: epochMs(r.start),
    end: epochMs(r.end === 0 ? performance.now() : r.end),
    failed: r.failed,
    attributes: r.attributes,
    links: (r.links ?? []).map((l) => l.spanId),
  };
}
