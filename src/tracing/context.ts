/**
 * W3C Trace Context on the wire: the `traceparent` (and `tracestate`) a client sends becomes the
 * parent of its request's SERVER span; a `traceparent` is written for the client's answer and for
 * every upstream attempt. What a client sends is input: a malformed header is ignored (the request
 * starts a trace of its own), and a tracestate is kept only within the W3C's 512-character bound.
 */
import { TraceFlags, type SpanContext } from '@opentelemetry/api';
import { TraceState, parseTraceParent } from '@opentelemetry/core';

/** W3C Trace Context: vendors must propagate at least 512 characters of tracestate; more may be cut. */
const MAX_TRACESTATE = 512;

/** The remote parent a request's headers name, or null when they name none (or none that parses). */
export function remoteParent(
  traceparent: string | string[] | undefined,
  tracestate: string | string[] | undefined,
): SpanContext | null {
  if (typeof traceparent !== 'string') return null;
  const parent = parseTraceParent(traceparent.trim());
  if (parent === null) return null;
  if (typeof tracestate === 'string' && tracestate.length <= MAX_TRACESTATE)
    parent.traceState = new TraceState(tracestate);
  return parent;
}

export function isSampled(parent: SpanContext): boolean {
  return (parent.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED;
}

/** version 00, the span as parent, and whether it is sampled (flags 01) or not (00). */
export function traceparentOf(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}
