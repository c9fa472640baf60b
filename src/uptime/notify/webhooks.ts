/**
 * uptime.webhooks (SPEC 12.2): a POST to each webhook for every uptime event (events.ts), in the
 * webhook's format (webhook-body.ts).
 * Each webhook has its own sender: one delivery at a time (so a receiver sees events in order), a
 * bounded queue behind it (when full, the oldest waiting delivery is dropped), a time limit per
 * attempt, and retries with exponential backoff and jitter until retryForMs has passed since the
 * event, then the delivery is given up. A receiver that hangs or fails costs only its own
 * deliveries: send() only queues and returns, nothing waits on a receiver, and no sender waits
 * on another. Of an answer only the status is used: at most maxResponseBytes of its body are read.
 * Counted in switchyard_uptime_webhooks_total{outcome}.
 * A webhook URL is a secret (a Slack webhook's path is its key): logs and /status name a webhook
 * by its `name` or its place in the list, and an error is logged by its code, never its message
 * (undici's messages can carry the address).
 * Owns: queues, attempts, backoff. Refuses: what events happen (probe-loop.ts, incidents.ts, maintenance.ts) and what a body says.
 */
import type { Logger } from 'pino';
import { Agent, request, type Dispatcher } from 'undici';
import type { WebhookConfig } from '../../config/uptime-schema.js';
import type { WebhookOutcome } from '../../metrics/labels.js';
import type { UptimeEvent } from './events.js';
import { webhookBody, type PageContext } from './webhook-body.js';

/**
 * delivered: the receiver answered 2xx; retried: an attempt failed and another is scheduled;
 * failed: given up (retryForMs passed, or an answer that retrying cannot change: 3xx, 4xx but 408
 * and 429); dropped: never sent to the end (the queue was full, or a reload or shutdown removed it).
 */
export { WEBHOOK_OUTCOMES, type WebhookOutcome } from '../../metrics/labels.js';

export interface WebhookTuning {
  /** Deliveries waiting behind the one being sent, per webhook; beyond it the oldest waiting is dropped. */
  maxQueue: number;
  /** One attempt: connecting, sending and the answer's status and body. */
  attemptTimeoutMs: number;
  /** Retries stop once this long has passed since the event was queued (every delivery is tried once). */
  retryForMs: number;
  /** The first retry waits about this long, each next one twice as long, up to backoffMaxMs. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Bytes of an answer's body read (and discarded) at most. */
  maxResponseBytes: number;
}

export const WEBHOOK_DEFAULTS: Readonly<WebhookTuning> = Object.freeze({
  maxQueue: 100,
  attemptTimeoutMs: 10_000,
  retryForMs: 600_000,
  backoffBaseMs: 1_000,
  backoffMaxMs: 60_000,
  maxResponseBytes: 4_096,
});

export interface WebhookDeps {
  metrics: { recordUptimeWebhook(outcome: WebhookOutcome): void };
  log: Logger;
  /** Where the POSTs go through; by default an Agent of its own, closed with close(). */
  dispatcher?: Dispatcher;
  now?: () => number;
  random?: () => number;
  tuning?: Partial<WebhookTuning>;
}

interface Context {
  metrics: WebhookDeps['metrics'];
  log: Logger;
  dispatcher: Dispatcher;
  now: () => number;
  random: () => number;
  tuning: WebhookTuning;
}

interface Delivery {
  type: UptimeEvent['type'];
  body: string;
  queuedAt: number;
  attempts: number;
}

type Attempt = { ok: true } | { ok: false; retry: boolean; reason: string };

/** The wait before retry n (1, 2, ...): between half and all of min(max, base * 2^(n-1)) ("equal jitter"). */
export function backoffMs(
  retry: number,
  t: Pick<WebhookTuning, 'backoffBaseMs' | 'backoffMaxMs'>,
  random: () => number,
): number {
  const cap = Math.min(t.backoffMaxMs, t.backoffBaseMs * 2 ** Math.min(Math.max(0, retry - 1), 30));
  return Math.round(cap / 2 + (random() * cap) / 2);
}

/** An error's code (ECONNREFUSED, UND_ERR_SOCKET, ...) or class name: never its message. */
function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code)) return code;
  const name = (err as { name?: unknown } | null)?.name;
  return typeof name === 'string' && /^[A-Za-z]{1,40}$/.test(name) ? name : 'error';
}

class Sender {
  private readonly waiting: Delivery[] = [];
  private current: Delivery | null = null;
  private timer: NodeJS.Timeout | null = null;
  private abort: AbortController | null = null;
  private closed = false;

  constructor(
    readonly config: WebhookConfig,
    readonly name: string,
    private readonly c: Context,
  ) {}

  get format(): WebhookConfig['format'] {
    return this.config.format;
  }

  status(): Record<string, unknown> {
    return { name: this.name, format: this.format, waiting: this.waiting.length, sending: this.current !== null };
  }

  enqueue(d: Delivery): void {
    if (this.closed) return;
    if (this.waiting.length >= this.c.tuning.maxQueue) {
      const old = this.waiting.shift()!;
      this.c.metrics.recordUptimeWebhook('dropped');
      this.c.log.warn({ webhook: this.name, event: old.type }, 'uptime webhook delivery dropped: its queue is full');
    }
    this.waiting.push(d);
    this.next();
  }

  private next(): void {
    if (this.closed || this.current !== null) return;
    const d = this.waiting.shift();
    if (d === undefined) return;
    this.current = d;
    void this.attempt(d);
  }

  private done(): void {
    this.current = null;
    this.next();
  }

  private async attempt(d: Delivery): Promise<void> {
    d.attempts++;
    const r = await this.post(d.body);
    // close() counted it as dropped and stopped everything.
    if (this.closed) return;
    const { metrics, log, tuning } = this.c;
    if (r.ok) {
      metrics.recordUptimeWebhook('delivered');
      return this.done();
    }
    const wait = backoffMs(d.attempts, tuning, this.c.random);
    const seen = { webhook: this.name, event: d.type, attempts: d.attempts, reason: r.reason };
    if (!r.retry || this.c.now() + wait - d.queuedAt > tuning.retryForMs) {
      metrics.recordUptimeWebhook('failed');
      log.warn(seen, 'uptime webhook delivery failed; given up');
      return this.done();
    }
    metrics.recordUptimeWebhook('retried');
    log.debug({ ...seen, retryInMs: wait }, 'uptime webhook delivery failed; retrying');
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.attempt(d);
    }, wait);
  }

  private async post(body: string): Promise<Attempt> {
    const { dispatcher, tuning } = this.c;
    const ac = new AbortController();
    this.abort = ac;
    const limit = setTimeout(() => ac.abort(), tuning.attemptTimeoutMs);
    try {
      const res = await request(this.config.url, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'user-agent': 'switchyard-uptime' },
        signal: ac.signal,
        dispatcher,
      });
      // Only the status counts; a receiver's body is read up to the bound and dropped.
      await res.body.dump({ limit: tuning.maxResponseBytes, signal: ac.signal }).catch(() => undefined);
      const s = res.statusCode;
      if (s >= 200 && s < 300) return { ok: true };
      return { ok: false, retry: s === 408 || s === 429 || s >= 500, reason: `http_${s}` };
    } catch (err) {
      return { ok: false, retry: true, reason: ac.signal.aborted ? 'timeout' : errorCode(err) };
    } finally {
      clearTimeout(limit);
      if (this.abort === ac) this.abort = null;
    }
  }

  /** Stops at once: the attempt in flight is aborted, the backoff timer cleared, what was queued dropped. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.abort?.abort();
    const dropped = this.waiting.length + (this.current ? 1 : 0);
    this.waiting.length = 0;
    this.current = null;
    for (let i = 0; i < dropped; i++) this.c.metrics.recordUptimeWebhook('dropped');
    if (dropped > 0)
      this.c.log.warn(
        { webhook: this.name, dropped },
        'uptime webhook deliveries dropped: webhook removed or shut down',
      );
  }
}

/** The senders of uptime.webhooks; send() queues an event on each and returns. */
export class Webhooks {
  private senders: Sender[] = [];
  private page: PageContext;
  private readonly c: Context;
  private readonly ownDispatcher: Agent | null;

  constructor(list: readonly WebhookConfig[], page: PageContext, deps: WebhookDeps) {
    const tuning = { ...WEBHOOK_DEFAULTS, ...deps.tuning };
    this.ownDispatcher = deps.dispatcher ? null : new Agent({ connect: { timeout: tuning.attemptTimeoutMs } });
    this.c = {
      metrics: deps.metrics,
      log: deps.log,
      dispatcher: deps.dispatcher ?? this.ownDispatcher!,
      now: deps.now ?? Date.now,
      random: deps.random ?? Math.random,
      tuning,
    };
    this.page = page;
    this.apply(list, page);
  }

  /**
   * A reloaded list: a webhook the same as before (url, format, name) keeps its sender, its queue
   * and its retries; the others' senders are closed (their deliveries dropped and counted) and
   * new ones start empty.
   */
  apply(list: readonly WebhookConfig[], page: PageContext): void {
    this.page = page;
    const running = new Map(this.senders.map((s) => [key(s.config, s.name), s]));
    this.senders = list.map((w, i) => {
      const name = w.name ?? `webhooks[${i}]`;
      const k = key(w, name);
      const kept = running.get(k);
      running.delete(k);
      return kept ?? new Sender(w, name, this.c);
    });
    for (const gone of running.values()) gone.close();
  }

  send(e: UptimeEvent): void {
    const queuedAt = this.c.now();
    for (const s of this.senders)
      s.enqueue({ type: e.type, body: webhookBody(e, s.format, this.page), queuedAt, attempts: 0 });
  }

  /** For /status: each webhook by name, never its URL. */
  status(): Record<string, unknown>[] {
    return this.senders.map((s) => s.status());
  }

  async close(): Promise<void> {
    for (const s of this.senders) s.close();
    this.senders = [];
    await this.ownDispatcher?.destroy();
  }
}

function key(w: WebhookConfig, name: string): string {
  return JSON.stringify([w.url, w.format, name]);
}
