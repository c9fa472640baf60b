/**
 * A span as the request path records it: plain data (a name, a kind, its parent, an id drawn
 * only when needed, two monotonic clock readings, attributes), made into the SDK's ReadableSpan only when its request's
 * trace is exported. Every request is recorded (a slow or failed one is exported whatever the
 * sample, and that is known only at its end), while most are let go: building SDK spans for all
 * of them cost a traced hit and miss 16-29% of their throughput, these records cost a few
 * microseconds (docs/tracing.md#cost).
 */
import { randomFillSync } from 'node:crypto';
import {
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Attributes,
  type HrTime,
  type Link,
  type SpanContext,
} from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

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

export const newTraceId = (): string => randomHex(16);
export const newSpanId = (): string => randomHex(8);

/** Milliseconds since the epoch of a performance.now() reading (the monotonic clock's fraction kept). */
export function epochMs(monotonic: number): number {
  return performance.timeOrigin + monotonic;
}

export class SpanRecord {
  /** performance.now() readings; end is 0 while the span is open. */
  readonly start = performance.now();
  end = 0;
  failed = false;
  private id: string | undefined = undefined;

  constructor(
    readonly name: string,
    readonly kind: SpanKind,
    /** The parent span in the same trace; null for a request's root span. */
    readonly parent: SpanRecord | null,
    readonly attributes: Attributes,
    /** Spans (same trace) this span links to: an exchange's calls. */
    readonly links?: readonly SpanRecord[],
  ) {}

  /**
   * Drawn when first asked for: a traceparent names it (the root's, an attempt's), or the span is
   * exported. A call's span is neither on most requests, and its id is never drawn.
   */
  get spanId(): string {
    return (this.id ??= newSpanId());
  }

  close(): void {
    if (this.end === 0) this.end = performance.now();
  }
}

/** What every exported span of a process shares. */
export interface SpanOrigin {
  readonly resource: Resource;
  readonly scope: InstrumentationScope;
}

/** The trace a request's records belong to: its id and, for the root span, the client's parent. */
export interface TraceOf {
  readonly traceId: string;
  readonly remote: SpanContext | null;
}

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

/** A record as the SDK's export pipeline reads a span (flagged sampled: it is being exported). */
export function toReadable(r: SpanRecord, trace: TraceOf, origin: SpanOrigin): ReadableSpan {
  const ctx: SpanContext = {
    traceId: trace.traceId,
    spanId: r.spanId,
    traceFlags: TraceFlags.SAMPLED,
    traceState: trace.remote?.traceState,
  };
  const parent =
    r.parent !== null
      ? { traceId: trace.traceId, spanId: r.parent.spanId, traceFlags: TraceFlags.SAMPLED }
      : (trace.remote ?? undefined);
  const start = epochMs(r.start);
  const end = epochMs(r.end === 0 ? performance.now() : r.end);
  const links: Link[] = (r.links ?? []).map((l) => ({
    context: { traceId: trace.traceId, spanId: l.spanId, traceFlags: TraceFlags.SAMPLED },
  }));
  return {
    name: r.name,
    kind: r.kind,
    spanContext: () => ctx,
    parentSpanContext: parent,
    startTime: hrTime(start),
    endTime: hrTime(end),
    duration: hrTime(end - start),
    status: { code: r.failed ? SpanStatusCode.ERROR : SpanStatusCode.UNSET },
    attributes: r.attributes,
    links,
    events: [],
    ended: true,
    resource: origin.resource,
    instrumentationScope: origin.scope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}
