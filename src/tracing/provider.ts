/**
 * The export: OpenTelemetry's BatchSpanProcessor in front of the OTLP/HTTP (JSON) exporter to
 * tracing.endpoint, behind the tail decision (tail.ts), which hands it the kept requests' span
 * records as the SDK's ReadableSpans (record.ts). Built once at start when tracing.enabled; with
 * tracing off there is none and the request path holds null.
 * Export runs on the SDK's timer over node:http, never on a request's way: a collector that is
 * down or hangs loses spans (counted), never a client's answer.
 */
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { Config } from '../config/schema.js';
import type { Metrics } from '../metrics/registry.js';
import { VERSION } from '../version.js';
import { CountingExporter, QueueCount, TailExport } from './tail.js';

export type TracingConfig = Config['tracing'];

/** How often the queue is sent when it holds less than a batch. */
const EXPORT_DELAY_MS = 1_000;
/** shutdown() waits at most this long for the last export: a hanging collector must not hold the process. */
const SHUTDOWN_WAIT_MS = 2_000;

/** A bare collector address gets the OTLP/HTTP traces path, as the OTLP exporter configuration does. */
export function tracesUrl(endpoint: string): string {
  const u = new URL(endpoint);
  if (u.pathname === '/' || u.pathname === '') u.pathname = '/v1/traces';
  return u.toString();
}

export class Tracing {
  readonly tail: TailExport;

  constructor(config: TracingConfig, metrics: Metrics) {
    if (config.endpoint === null) throw new Error('tracing needs tracing.endpoint');
    const queue = new QueueCount(config.maxQueueSize);
    const exporter = new OTLPTraceExporter({
      url: tracesUrl(config.endpoint),
      headers: { ...config.headers },
      timeoutMillis: config.exportTimeoutMs,
      concurrencyLimit: 2,
    });
    const batch = new BatchSpanProcessor(new CountingExporter(exporter, queue, metrics), {
      maxQueueSize: config.maxQueueSize,
      maxExportBatchSize: config.maxExportBatchSize,
      scheduledDelayMillis: EXPORT_DELAY_MS,
      // The exporter's own timeout answers first, so its spans are counted as failed.
      exportTimeoutMillis: config.exportTimeoutMs + 1_000,
    });
    this.tail = new TailExport(batch, queue, metrics, {
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: VERSION }),
      scope: { name: 'switchyard', version: VERSION },
    });
  }

  /** Sends what is queued, waiting at most SHUTDOWN_WAIT_MS; spans still held then are lost. */
  async close(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, SHUTDOWN_WAIT_MS);
    });
    await Promise.race([this.tail.shutdown().catch(() => undefined), waited]);
    clearTimeout(timer);
  }
}
