/**
 * A span as the request path records it: plain data (a name, a kind, its parent's and its own
 * id, two clock readings, attributes), made into the SDK's ReadableSpan only when its request's
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
  const hex = POOL.toString('hex', used, used + bytes);
  used += bytes;
  // All zeros is the W3C's invalid id; 1 in 2^64 at worst, and then one more draw.
  return /^0+$/.test(hex) ? randomHex(bytes) : hex;
}

export const newTraceId = (): string => randomHex(16);
export const newSpanId = (): string => randomHex(8);

/** Milliseconds since the epoch, with the monotonic clock's fraction. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

export class SpanRecord {
  readonly spanId = newSpanId();
  readonly start = nowMs();
  end = 0;
  failed = false;

  constructor(
    readonly name: string,
    readonly kind: SpanKind,
    /** The parent span's id in the same trace; null for a request's root span. */
    readonly parentId: string | null,
    readonly attributes: Attributes,
    /** Span ids (same trace) this span links to: an exchange's calls. */
    readonly links?: readonly string[],
  ) {}

  close(): void {
    if (this.end === 0) this.end = nowMs();
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
    r.parentId !== null
      ? { traceId: trace.traceId, spanId: r.parentId, traceFlags: TraceFlags.SAMPLED }
      : (trace.remote ?? undefined);
  const end = r.end === 0 ? nowMs() : r.end;
  const links: Link[] = (r.links ?? []).map((spanId) => ({
    context: { traceId: trace.traceId, spanId, traceFlags: TraceFlags.SAMPLED },
  }));
  return {
    name: r.name,
    kind: r.kind,
    spanContext: () => ctx,
    parentSpanContext: parent,
    startTime: hrTime(r.start),
    endTime: hrTime(end),
    duration: hrTime(end - r.start),
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
