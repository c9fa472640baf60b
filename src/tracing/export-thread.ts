/**
 * The export thread (a worker thread, started by provider.ts): OpenTelemetry's BatchSpanProcessor
 * in front of the OTLP/HTTP (JSON) exporter to tracing.endpoint. The request path hands it the
 * kept requests' spans as plain data (record.ts ExportSpan); here they become the SDK's
 * ReadableSpans, and the thread tells the request path how many spans each export took from the
 * queue and whether the collector accepted them (the queue bound and the metrics live there).
 *
 * Why a thread of its own: under cache hits, a node:http client request once a second in the
 * serving thread, with no span in it, cost every hit about 6 us of CPU (13%), as much as the
 * whole export: Node's HTTP and stream code, shared by the server and that client, ran slower
 * for both. Here the export shares no compiled code with the server, and its serializing and
 * sending run beside it (docs/tracing.md#cost).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SpanStatusCode, TraceFlags, type HrTime, type SpanContext } from '@opentelemetry/api';
import { ExportResultCode, TraceState, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_INSTANCE_ID, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { ExportSpan } from './record.js';

/** What the thread is started with (workerData). */
export interface ExportSettings {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly maxQueueSize: number;
  readonly maxExportBatchSize: number;
  readonly serviceName: string;
  readonly instanceId: string;
  /** tracing.resourceAttributes (with OTEL_RESOURCE_ATTRIBUTES under it): they win over the two ids. */
  readonly attributes: Readonly<Record<string, string>>;
  readonly version: string;
}

/** From the request path: kept spans, or close (send what is queued, then answer `closed`). */
export type ToExport = { readonly spans: readonly ExportSpan[] } | { readonly close: true };
/** To the request path: an export took `taken` spans from the queue; then `exported` or `failed` of them. */
export type FromExport =
  | { readonly taken: number }
  | { readonly exported: number }
  | { readonly failed: number }
  | { readonly closed: true };

/** How often the queue is sent when it holds less than a batch. */
const EXPORT_DELAY_MS = 1_000;

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

/** An exported span as the SDK's export pipeline reads it (flagged sampled: it is being exported). */
export function toReadable(
  s: ExportSpan,
  origin: Pick<ReadableSpan, 'resource' | 'instrumentationScope'>,
): ReadableSpan {
  const traceState = s.traceState === undefined ? undefined : new TraceState(s.traceState);
  const ctx: SpanContext = { traceId: s.traceId, spanId: s.spanId, traceFlags: TraceFlags.SAMPLED, traceState };
  const parent: SpanContext | undefined =
    s.parentSpanId !== undefined
      ? { traceId: s.traceId, spanId: s.parentSpanId, traceFlags: TraceFlags.SAMPLED }
      : s.remote === undefined
        ? undefined
        : { traceId: s.traceId, spanId: s.remote.spanId, traceFlags: s.remote.traceFlags, traceState, isRemote: true };
  return {
    name: s.name,
    kind: s.kind,
    spanContext: () => ctx,
    parentSpanContext: parent,
    startTime: hrTime(s.start),
    endTime: hrTime(s.end),
    duration: hrTime(s.end - s.start),
    status: { code: s.failed ? SpanStatusCode.ERROR : SpanStatusCode.UNSET },
    attributes: s.attributes,
    links: s.links.map((spanId) => ({ context: { traceId: s.traceId, spanId, traceFlags: TraceFlags.SAMPLED } })),
    events: [],
    ended: true,
    resource: origin.resource,
    instrumentationScope: origin.instrumentationScope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/**
 * The OTLP exporter as the BatchSpanProcessor sees it, reporting: spans leave the queue when an
 * export takes them, and are exported or failed by the collector's answer (or its silence, which
 * the exporter's own timeout turns into a failure).
 */
class ReportingExporter implements SpanExporter {
  constructor(
    private readonly inner: SpanExporter,
    private readonly report: (m: FromExport) => void,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.report({ taken: spans.length });
    let settled = false;
    this.inner.export(spans, (result) => {
      if (settled) return;
      settled = true;
      this.report(result.code === ExportResultCode.SUCCESS ? { exported: spans.length } : { failed: spans.length });
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

function run(settings: ExportSettings, port: NonNullable<typeof parentPort>): void {
  const exporter = new OTLPTraceExporter({
    url: settings.url,
    headers: { ...settings.headers },
    timeoutMillis: settings.timeoutMs,
    concurrencyLimit: 2,
  });
  const batch = new BatchSpanProcessor(new ReportingExporter(exporter, (m) => port.postMessage(m)), {
    maxQueueSize: settings.maxQueueSize,
    maxExportBatchSize: settings.maxExportBatchSize,
    scheduledDelayMillis: EXPORT_DELAY_MS,
    // The exporter's own timeout answers first, so its spans are counted as failed.
    exportTimeoutMillis: settings.timeoutMs + 1_000,
  });
  const origin = {
    resource: resourceFromAttributes({
      [ATTR_SERVICE_INSTANCE_ID]: settings.instanceId,
      [ATTR_SERVICE_VERSION]: settings.version,
      ...settings.attributes,
      [ATTR_SERVICE_NAME]: settings.serviceName,
    }),
    instrumentationScope: { name: 'switchyard', version: settings.version },
  };
  port.on('message', (m: ToExport) => {
    if ('spans' in m) for (const s of m.spans) batch.onEnd(toReadable(s, origin));
    else
      void batch
        .shutdown()
        .catch(() => undefined)
        .then(() => port.postMessage({ closed: true } satisfies FromExport));
  });
}

if (parentPort !== null) run(workerData as ExportSettings, parentPort);
