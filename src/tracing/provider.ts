/**
 * The export, as the request path sees it: a worker thread (export-thread.ts) running
 * OpenTelemetry's BatchSpanProcessor and OTLP/HTTP (JSON) exporter to tracing.endpoint, behind
 * the tail decision (tail.ts), which hands it the kept requests' spans. Started once at start
 * when tracing.enabled; with tracing off there is none and the request path holds null.
 * Export runs in that thread, never on a request's way: a collector that is down or hangs loses
 * spans (counted), never a client's answer; a thread that dies loses what it held (counted as
 * export_failed, and logged).
 */
import { randomUUID } from 'node:crypto';
import { extname } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Metrics } from '../metrics/registry.js';
import { VERSION } from '../version.js';
import type { ExportSettings, FromExport, ToExport } from './export-thread.js';
import type { ExportSpan } from './record.js';
import { QueueCount, TailExport } from './tail.js';

export type TracingConfig = Config['tracing'];

/**
 * This process's `service.instance.id`: a random UUID (v4) made once when the process loads this
 * module, as the resource conventions suggest when nothing stable names the instance. Two
 * replicas on one host (or a restart) are two instances; an operator who wants a name of their own
 * gives it in tracing.resourceAttributes or OTEL_RESOURCE_ATTRIBUTES, which win.
 */
export const INSTANCE_ID = randomUUID();

/**
 * The exporter inside the thread would parse these again itself and merge its reading under
 * tracing.headers: reading them and the merge are otel-env.ts's alone, so the thread does not see them.
 */
const READ_HERE = ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'];

/** close() waits at most this long for the last export: a hanging collector must not hold the process. */
const SHUTDOWN_WAIT_MS = 2_000;

/** A bare collector address gets the OTLP/HTTP traces path, as the OTLP exporter configuration does. */
export function tracesUrl(endpoint: string): string {
  const u = new URL(endpoint);
  if (u.pathname === '/' || u.pathname === '') u.pathname = '/v1/traces';
  return u.toString();
}

/**
 * Kept spans go to the thread in batches, at most this long after the first: one message for
 * many requests. A message per kept request cost the serving thread about 35 us each (the copy,
 * waking the thread), 0.35 us a request at the default sampleRate under cache hits.
 */
const POST_DELAY_MS = 100;
/** ... or as soon as this many wait. */
const POST_BATCH = 256;

/** The thread's module beside this one: .js when built, .ts when run from the sources (tsx). */
const THREAD = new URL(`./export-thread${extname(new URL(import.meta.url).pathname)}`, import.meta.url);

export class Tracing {
  readonly tail: TailExport;
  private readonly thread: Worker;
  private readonly queue: QueueCount;
  private running = true;
  /** Spans an export took from the queue whose answer has not come yet. */
  private inFlight = 0;
  private closed: (() => void) | null = null;
  /** Kept spans not yet sent to the thread (counted in the queue already). */
  private pending: ExportSpan[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    config: TracingConfig,
    private readonly metrics: Metrics,
    log: Logger,
  ) {
    if (config.endpoint === null) throw new Error('tracing needs tracing.endpoint');
    this.queue = new QueueCount(config.maxQueueSize);
    const settings: ExportSettings = {
      url: tracesUrl(config.endpoint),
      headers: config.headers,
      timeoutMs: config.exportTimeoutMs,
      maxQueueSize: config.maxQueueSize,
      maxExportBatchSize: config.maxExportBatchSize,
      serviceName: config.serviceName,
      instanceId: INSTANCE_ID,
      attributes: config.resourceAttributes,
      version: VERSION,
    };
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of READ_HERE) delete env[name];
    this.thread = new Worker(THREAD, { workerData: settings, name: 'tracing export', env });
    // The thread never holds the process open: close() ends it.
    this.thread.unref();
    this.thread.on('message', (m: FromExport) => this.heard(m));
    this.thread.on('error', (err) => log.error({ err }, 'the tracing export thread failed: spans are dropped'));
    this.thread.on('exit', () => this.stopped());
    this.tail = new TailExport((spans) => this.post(spans), this.queue, metrics);
  }

  private post(spans: ExportSpan[]): void {
    if (!this.running) return this.lost(spans.length);
    // The first request's array (tail.ts made it for this hand-off) becomes the batch, uncopied.
    if (this.pending.length === 0) this.pending = spans;
    else for (const s of spans) this.pending.push(s);
    if (this.pending.length >= POST_BATCH) this.send();
    else if (this.timer === null) {
      this.timer = setTimeout(() => this.send(), POST_DELAY_MS);
      this.timer.unref();
    }
  }

  private send(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.length === 0) return;
    const spans = this.pending;
    this.pending = [];
    if (this.running) this.thread.postMessage({ spans } satisfies ToExport);
    else this.lost(spans.length);
  }

  private heard(m: FromExport): void {
    if ('taken' in m) {
      this.queue.queued = Math.max(0, this.queue.queued - m.taken);
      this.inFlight += m.taken;
    } else if ('exported' in m) {
      this.inFlight -= m.exported;
      this.metrics.recordSpansExported(m.exported);
    } else if ('failed' in m) {
      this.inFlight -= m.failed;
      this.metrics.recordSpansDropped('export_failed', m.failed);
    } else this.closed?.();
  }

  /** The thread is gone: what it held, and whatever comes later, is lost. */
  private stopped(): void {
    this.running = false;
    this.send();
    this.metrics.recordSpansDropped('export_failed', this.inFlight);
    this.inFlight = 0;
    this.lost(this.queue.queued);
    this.closed?.();
  }

  private lost(n: number): void {
    this.queue.queued = Math.max(0, this.queue.queued - n);
    this.metrics.recordSpansDropped('export_failed', n);
  }

  /** Sends what is queued, waiting at most SHUTDOWN_WAIT_MS; spans still held then are lost. */
  async close(): Promise<void> {
    if (this.running) {
      let timer: NodeJS.Timeout | undefined;
      const done = new Promise<void>((resolve) => {
        this.closed = resolve;
        timer = setTimeout(resolve, SHUTDOWN_WAIT_MS);
      });
      this.send();
      this.thread.postMessage({ close: true } satisfies ToExport);
      await done;
      clearTimeout(timer);
    }
    await this.thread.terminate();
  }
}
