/**
 * Tracing (SPEC 13): OpenTelemetry spans for requests, calls and upstream attempts, W3C trace
 * context in and out, and the export to a collector over OTLP/HTTP. Nothing else imports the
 * OpenTelemetry SDK. With tracing off the request path holds null and no span object is made.
 * Refuses: deciding anything about a call (it only watches), and the diagnostic response headers.
 */
export { remoteParent } from './context.js';
export type { HttpServerRequest } from './http-server.js';
export { Tracing, type TracingConfig } from './provider.js';
export { Attempt, CallTrace, RequestTrace, startTrace, type RequestTracing } from './spans.js';
