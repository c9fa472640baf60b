/**
 * The transport-neutral front: JSON-RPC text in, JSON-RPC text out. HTTP and WebSocket both use it,
 * so both get the same parsing, limits, errors and ordering. Each slot is worked on concurrently and
 * written back in request order; every call gets exactly one answer.
 */
import type { Logger } from 'pino';
import { RpcError } from '../jsonrpc/errors.js';
import { parseBody, type Call, type Slot } from '../jsonrpc/parse.js';
import { errorText, responseText, writeBody, type Outcome } from '../jsonrpc/response.js';
import type { Concurrency } from '../limits/concurrency.js';
import { limitKey } from '../limits/cidrs.js';
import type { Admission, Identity, RateLimits } from '../limits/rate.js';
import { INVALID_METHOD, type Metrics } from '../metrics/registry.js';
import { SENT_TOGETHER, type Pipeline, type SubscriptionSession } from '../pipeline/index.js';

export interface FrontResult {
  status: number;
  body: string;
  /** Calls in the request (null when the body never became calls). */
  calls: number | null;
  /** The first method labels, for the request log line (computed only when it is written). */
  methods: () => string[];
  upstreams: string[];
  /** Calls (or the whole body) answered with an error, ours or a node's: the log line's outcome. */
  errors: number;
  retryAfter?: number;
}

/** Who sent a body; a WebSocket connection also brings its subscriptions (eth_subscribe works only there). */
export interface Caller extends Identity {
  session?: SubscriptionSession;
}

export interface FrontDeps {
  pipeline: Pipeline;
  concurrency: Concurrency;
  rateLimits: RateLimits;
  metrics: Metrics;
  maxBatchSize: number;
  requestTimeoutMs: number;
}

/** How many method names a request log line lists before it says "...". */
const LOGGED_METHODS = 10;

export class Front {
  constructor(private readonly deps: FrontDeps) {}

  /**
   * The answer to one body. Synchronous (no promise) when every call is answered without waiting
   * (local answers, memory cache hits, refusals): each promise and microtask hop is a measurable
   * share of a cached answer's cost.
   */
  process(text: string, who: Caller, log: Logger): FrontResult | Promise<FrontResult> {
    const d = this.deps;
    const parsed = parseBody(text, d.maxBatchSize);
    if (parsed.kind === 'error') {
      d.metrics.recordRefused(INVALID_METHOD, parsed.error.reason);
      const one = errorText('null', parsed.error);
      return { status: parsed.status, body: parsed.asArray ? `[${one}]` : one, calls: null, methods: () => [], upstreams: NONE, errors: 1 };
    }
    const methods: string[] = [];
    for (const s of parsed.slots) {
      if (s.call) methods.push(s.call.method);
      else d.metrics.recordRefused(INVALID_METHOD, s.error.reason);
    }
    const admitting = d.rateLimits.admit(who, methods);
    if (Array.isArray(admitting)) return this.admitted(d, parsed.batch, parsed.slots, who, log, admitting);
    return admitting.then((a) => this.admitted(d, parsed.batch, parsed.slots, who, log, a));
  }

  private admitted(d: FrontDeps, batch: boolean, slots: Slot[], who: Caller, log: Logger, admissions: readonly Admission[]): FrontResult | Promise<FrontResult> {
    const methods = (): string[] => slots.slice(0, LOGGED_METHODS).map((s) => (s.call ? d.pipeline.label(s.call.method) : 'invalid'));
    // admissions[i] belongs to the i-th valid call; refused maps slot index -> seconds to wait, or 'never'.
    let refused: Map<number, number | 'never'> | null = null;
    let valid = 0;
    let retryAfter: number | undefined;
    for (const s of slots) {
      if (!s.call) continue;
      const wait = admissions[valid++];
      if (wait === null || wait === undefined) continue;
      (refused ??= new Map()).set(s.call.index, wait);
      if (wait !== 'never') retryAfter = Math.max(retryAfter ?? 0, wait);
    }
    const admitted = valid - (refused?.size ?? 0);
    // Every call over the limit: the whole request is refused, each call with its own -32005. It is
    // a 429 with Retry-After when a wait admits any of them; calls no wait admits promise no retry.
    if (valid > 0 && admitted === 0) {
      const errorFor = (c: Call): RpcError => rateRefusal(refused?.get(c.index) ?? 1);
      for (const s of slots) if (s.call) d.metrics.recordRefused(d.pipeline.label(s.call.method), errorFor(s.call).reason);
      const texts = refuseAll(slots, errorFor);
      // A notification is not answered, but a refusal with a status still carries a body (SPEC 3.2).
      const body = writeBody(batch, texts) || (retryAfter === undefined ? '' : errorText('null', rateRefusal(retryAfter)));
      return { status: retryAfter === undefined ? 200 : 429, body, calls: slots.length, methods, upstreams: NONE, errors: slots.length, retryAfter };
    }
    const ipKey = limitKey(who.ip);
    const admission = d.concurrency.acquire(ipKey, admitted);
    if (admission !== 'ok') {
      const error = new RpcError(admission === 'ip' ? 'IP_CONCURRENCY' : 'OVERLOADED', { data: { retryAfterSeconds: 1 } });
      d.metrics.recordRateLimited(admission === 'ip' ? 'ip_concurrency' : 'overloaded', admitted);
      for (const s of slots) if (s.call) d.metrics.recordRefused(d.pipeline.label(s.call.method), error.reason);
      const texts = refuseAll(slots, () => error);
      return { status: error.http, body: writeBody(batch, texts) || errorText('null', error), calls: slots.length, methods, upstreams: NONE, errors: slots.length, retryAfter: 1 };
    }
    let released = false;
    const release = (): void => {
      if (!released) d.concurrency.release(ipKey, admitted);
      released = true;
    };
    try {
      const ctx = d.pipeline.context(who.ip, d.requestTimeoutMs, log, who.session);
      const outcomes: (Outcome | Promise<Outcome> | undefined)[] = new Array(slots.length);
      // A batch's reads that go to a node are gathered and sent together once every call was
      // handled (a lone call is sent as it comes, joining other requests' calls in the micro-batcher).
      const outbound = slots.length > 1 ? d.pipeline.outbound(ctx, outcomes) : undefined;
      let waiting = false;
      for (let i = 0; i < slots.length; i++) {
        const s = slots[i]!;
        if (!s.call) continue;
        const wait = refused?.get(s.call.index);
        const refusal = wait === undefined ? undefined : rateRefusal(wait);
        if (refusal !== undefined) d.metrics.recordRefused(d.pipeline.label(s.call.method), refusal.reason);
        const o = refusal !== undefined ? { error: refusal } : d.pipeline.handle(ctx, s.call, outbound);
        if (o === SENT_TOGETHER) continue;
        if (o instanceof Promise) waiting = true;
        outcomes[i] = o;
      }
      const sent = outbound === undefined ? null : outbound.send();
      const finish = (done: readonly (Outcome | undefined)[]): FrontResult => {
        release();
        let errors = 0;
        const texts: (string | undefined)[] = new Array(slots.length);
        for (let i = 0; i < slots.length; i++) {
          const s = slots[i]!;
          if (!s.call) {
            errors++;
            texts[i] = errorText(s.id, s.error);
            continue;
          }
          const outcome = done[i]!;
          if (outcome.result === undefined) errors++;
          texts[i] = s.call.id === undefined ? undefined : responseText(s.call.id, outcome);
        }
        const upstreams = ctx.trail.length === 0 ? NONE : [...new Set(ctx.trail)];
        return { status: 200, body: writeBody(batch, texts), calls: slots.length, methods, upstreams, errors };
      };
      if (!waiting && sent === null) return finish(outcomes as (Outcome | undefined)[]);
      // The calls sent together write their slots before `sent` resolves.
      const all = !waiting ? sent!.then(() => outcomes as (Outcome | undefined)[]) : sent === null ? Promise.all(outcomes) : sent.then(() => Promise.all(outcomes));
      return all.then(finish, (err: unknown) => {
        release();
        throw err;
      });
    } catch (err) {
      release();
      throw err;
    }
  }
}

const NONE: string[] = [];

/** Every slot's answer when no call is worked on: each call refused with its error, invalid ones as they were. */
function refuseAll(slots: readonly Slot[], errorFor: (c: Call) => RpcError): (string | undefined)[] {
  return slots.map((s) => (s.call ? (s.call.id === undefined ? undefined : errorText(s.call.id, errorFor(s.call))) : errorText(s.id, s.error)));
}

function rateRefusal(wait: number | 'never'): RpcError {
  return wait === 'never' ? new RpcError('COST_OVER_LIMIT') : new RpcError('RATE_LIMITED', { data: { retryAfterSeconds: wait } });
}
