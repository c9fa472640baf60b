/**
 * The transport-neutral front: JSON-RPC text in, JSON-RPC text out. HTTP and WebSocket both use it,
 * so both get the same parsing, limits, errors and ordering. One request: parse, admit, let the
 * pipeline decide each call, dispatch the request's plans once (routing/dispatch.ts), write the
 * slots back in request order. The front alone holds the request's slots; every call gets
 * exactly one answer.
 */
import type { Logger } from 'pino';
import { RpcError } from '../jsonrpc/errors.js';
import { parseBody, type Call, type Slot } from '../jsonrpc/parse.js';
import { errorText, responseText, writeBody, type Outcome } from '../jsonrpc/response.js';
import type { JsonText } from '../jsonrpc/raw.js';
import type { Concurrency, SlotGrant } from '../limits/concurrency.js';
import { limitKey } from '../net/cidrs.js';
import type { Admission, Payer, RateLimits } from '../limits/rate.js';
import { INVALID_METHOD, type Metrics } from '../metrics/registry.js';
import type { Pipeline, Plan, RequestContext, Split, SubscriptionSession } from '../pipeline/index.js';
import { fetchChunks } from '../pipeline/logs.js';
import { dispatch } from '../routing/dispatch.js';
import type { RequestTrace } from '../tracing/index.js';
import { summarize, type Diagnostics } from './diagnostics.js';
import { applyDirectives, type DirectiveHeaders } from './directives.js';
import { copyToShadows } from '../pipeline/shadow.js';
import type { BytePool } from '../upstream/answer-bytes.js';

export interface FrontResult {
  status: number;
  /** The answer: bytes when a large result is passed on as the node sent it (jsonrpc/raw.ts). */
  body: JsonText;
  /** Calls in the request (null when the body never became calls). */
  calls: number | null;
  /** The first method labels, for the request log line (computed only when it is written). */
  methods: () => string[];
  upstreams: string[];
  /** Calls (or the whole body) answered with an error, ours or a node's: the log line's outcome. */
  errors: number;
  retryAfter?: number;
  /** For the diagnostic headers; absent when no call of the request was worked on. */
  diagnostics?: Diagnostics;
}

/** Who sent a body; a WebSocket connection also brings its subscriptions (eth_subscribe works only there). */
export interface Caller extends Payer {
  session?: SubscriptionSession;
  /** The request's id (HTTP x-request-id), for log lines written about it later. */
  reqId?: string;
  /** The HTTP request's headers, where its directives are read (directives.ts); absent over WebSocket. */
  headers?: DirectiveHeaders;
}

export interface FrontDeps {
  pipeline: Pipeline;
  concurrency: Concurrency;
  rateLimits: RateLimits;
  metrics: Metrics;
  maxBatchSize: number;
  requestTimeoutMs: number;
  /** API keys whose entry has `directives: true` (directives.ts). */
  directiveKeys?: ReadonlySet<string>;
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
  process(text: string, who: Caller, log: Logger, trace?: RequestTrace | null): FrontResult | Promise<FrontResult> {
    const d = this.deps;
    const parsed = parseBody(text, d.maxBatchSize);
    if (parsed.kind === 'error') {
      d.metrics.recordRefused(INVALID_METHOD, parsed.error.reason);
      const one = errorText('null', parsed.error);
      return {
        status: parsed.status,
        body: parsed.asArray ? `[${one}]` : one,
        calls: null,
        methods: () => [],
        upstreams: NONE,
        errors: 1,
      };
    }
    const methods: string[] = [];
    for (const s of parsed.slots) {
      if (s.call) methods.push(s.call.method);
      else d.metrics.recordRefused(INVALID_METHOD, s.error.reason);
    }
    const admitting = d.rateLimits.admit(who, methods);
    if (Array.isArray(admitting)) return this.admitted(d, parsed.batch, parsed.slots, who, log, admitting, trace);
    return admitting.then((a) => this.admitted(d, parsed.batch, parsed.slots, who, log, a, trace));
  }

  private admitted(
    d: FrontDeps,
    batch: boolean,
    slots: Slot[],
    who: Caller,
    log: Logger,
    admissions: readonly Admission[],
    trace?: RequestTrace | null,
  ): FrontResult | Promise<FrontResult> {
    const methods = (): string[] =>
      slots.slice(0, LOGGED_METHODS).map((s) => (s.call ? d.pipeline.label(s.call.method) : 'invalid'));
    const waits = rateWaits(slots, admissions);
    // admissions holds one entry per valid call.
    const admitted = admissions.length - (waits?.refused.size ?? 0);
    if (waits !== null && admitted === 0) return refusedByRate(d, batch, slots, waits, methods);
    const refused = waits?.refused ?? null;
    const ipKey = limitKey(who.ip);
    const admission = d.concurrency.acquire(ipKey, admitted);
    if (admission !== 'ok') return refusedByConcurrency(d, batch, slots, admission, admitted, methods);
    let ctx: RequestContext;
    let outcomes: (Outcome | undefined)[];
    let working: Promise<void> | null;
    try {
      ctx = d.pipeline.context(who.ip, d.requestTimeoutMs, log, who.session);
      ctx.trace = trace ?? null;
      ctx.reqId = who.reqId;
      if (who.headers !== undefined) applyDirectives(who.headers, who.apiKey, d, ctx, trace);
      outcomes = new Array<Outcome | undefined>(slots.length);
      working = this.work(d, ctx, slots, refused, outcomes);
    } catch (err) {
      d.concurrency.release(ipKey, admitted);
      throw err;
    }
    if (working === null) {
      d.concurrency.release(ipKey, admitted);
      trace?.answered(outcomes);
      return withDiagnostics(written(batch, slots, outcomes, ctx.trail, methods), ctx, slots, outcomes);
    }
    return working.then(
      () => {
        d.concurrency.release(ipKey, admitted);
        trace?.answered(outcomes);
        const answer = withDiagnostics(written(batch, slots, outcomes, ctx.trail, methods), ctx, slots, outcomes);
        // Copies leave in a later turn than the one that writes this answer (routing/shadow.ts).
        if (ctx.copies !== undefined) copyToShadows(ctx);
        return answer;
      },
      (err: unknown) => {
        d.concurrency.release(ipKey, admitted);
        throw err;
      },
    );
  }

  /**
   * Each call's outcome into its slot of `outcomes` (the request's, owned here): what the pipeline
   * answers at once is written now; the plans for a node are dispatched together, once. Null when
   * every slot is written already; else what resolves once every one is.
   */
  private work(
    d: FrontDeps,
    ctx: RequestContext,
    slots: readonly Slot[],
    refused: Map<number, number | 'never'> | null,
    outcomes: (Outcome | undefined)[],
  ): Promise<void> | null {
    let plans: Plan[] | undefined;
    let waits: Promise<void>[] | undefined;
    for (let i = 0; i < slots.length; i++) {
      const call = slots[i]!.call;
      if (!call) continue;
      const wait = refused?.get(call.index);
      if (wait !== undefined) {
        const refusal = rateRefusal(wait);
        d.metrics.recordRefused(d.pipeline.label(call.method), refusal.reason);
        outcomes[i] = { error: refusal };
        continue;
      }
      ctx.trace?.call(i, call, d.pipeline.label(call.method));
      const decision = d.pipeline.decide(ctx, call);
      if (decision instanceof Promise) (waits ??= []).push(decision.then((o) => void (outcomes[i] = o)));
      else if (!('kind' in decision)) outcomes[i] = decision;
      else if (decision.kind === 'plan') {
        (plans ??= []).push(decision);
        ctx.trace?.planned(i, call, decision);
        if (decision.cache !== null) (ctx.cacheable ??= [])[i] = true;
      } else (waits ??= []).push(this.split(d, ctx, decision).then((o) => void (outcomes[i] = o)));
    }
    if (plans !== undefined) {
      const sent = plans;
      (waits ??= []).push(
        this.send(d, ctx, sent).then((done) => {
          for (let k = 0; k < sent.length; k++) outcomes[sent[k]!.index] = done[k];
        }),
      );
    }
    if (waits === undefined) return null;
    return waits.length === 1 ? waits[0]! : Promise.all(waits).then(noop);
  }

  /**
   * The plans' outcomes, in their order: answered from the Redis level where it holds them, the
   * rest dispatched to the nodes in one go and finished by the pipeline.
   */
  private send(d: FrontDeps, ctx: RequestContext, plans: Plan[]): Promise<Outcome[]> {
    const found = d.pipeline.lookupShared(ctx, plans);
    if (found === null) return this.dispatched(d, ctx, plans);
    return found.then(
      (got) => {
        const rest = plans.filter((_, k) => got[k] === undefined);
        if (rest.length === 0) return got as Outcome[];
        return this.dispatched(d, ctx, rest).then((done) => {
          let j = 0;
          for (let k = 0; k < got.length; k++) if (got[k] === undefined) got[k] = done[j++];
          return got as Outcome[];
        });
      },
      (err: unknown) => d.pipeline.failed(ctx, plans, err),
    );
  }

  private dispatched(d: FrontDeps, ctx: RequestContext, plans: Plan[]): Promise<Outcome[]> {
    return dispatch(plans, ctx).then(
      (answers) => {
        for (const a of answers) if (a.upstream !== undefined) (ctx.answered ??= []).push(a.upstream.name);
        return d.pipeline.finish(ctx, plans, answers);
      },
      (err: unknown) => d.pipeline.failed(ctx, plans, err),
    );
  }

  /** A split eth_getLogs: each chunk decided and sent on its own, with the byte budget of the whole. */
  private split(d: FrontDeps, ctx: RequestContext, s: Split): Promise<Outcome> {
    const chunk = (params: unknown[], budget: BytePool): Promise<Outcome> => {
      const decision = d.pipeline.decideChunk(ctx, { ...s.call, params, paramsText: undefined }, budget);
      if (decision instanceof Promise) return decision;
      if (!('kind' in decision)) return Promise.resolve(decision);
      decision.trace = ctx.trace?.at(s.call.index);
      return this.send(d, ctx, [decision]).then((done) => done[0]!);
    };
    return fetchChunks(s.chunks, s.maxBytes, chunk).then(
      (o) => d.pipeline.done(ctx, s.label, o),
      (err: unknown) => {
        ctx.log.error({ err, method: s.label }, 'call failed inside the pipeline');
        return d.pipeline.done(ctx, s.label, { error: new RpcError('INTERNAL_ERROR') });
      },
    );
  }
}

/** The request's answer once every slot has its outcome, written in slot order. */
function written(
  batch: boolean,
  slots: readonly Slot[],
  outcomes: readonly (Outcome | undefined)[],
  trail: string[],
  methods: () => string[],
): FrontResult {
  let errors = 0;
  const texts: (JsonText | undefined)[] = new Array(slots.length);
  for (let i = 0; i < slots.length; i++) {
    const s = slots[i]!;
    if (!s.call) {
      errors++;
      texts[i] = errorText(s.id, s.error);
      continue;
    }
    const outcome = outcomes[i]!;
    if (outcome.result === undefined) errors++;
    texts[i] = s.call.id === undefined ? undefined : responseText(s.call.id, outcome);
  }
  const upstreams = trail.length === 0 ? NONE : [...new Set(trail)];
  return { status: 200, body: writeBody(batch, texts), calls: slots.length, methods, upstreams, errors };
}

function noop(): void {}

function withDiagnostics(
  r: FrontResult,
  ctx: RequestContext,
  slots: readonly Slot[],
  outcomes: readonly (Outcome | undefined)[],
): FrontResult {
  r.diagnostics = summarize(ctx, slots, outcomes, ctx.cacheable);
  return r;
}

const NONE: string[] = [];

/** The calls a rate limit refused (slot index -> seconds to wait, or 'never'), and the longest wait; null: none. */
interface RateWaits {
  refused: Map<number, number | 'never'>;
  retryAfter: number | undefined;
}

/** admissions[i] belongs to the i-th valid call. Null when every call was admitted (no allocation then). */
function rateWaits(slots: readonly Slot[], admissions: readonly Admission[]): RateWaits | null {
  let waits: RateWaits | null = null;
  let valid = 0;
  for (const s of slots) {
    if (!s.call) continue;
    const wait = admissions[valid++];
    if (wait === null || wait === undefined) continue;
    waits ??= { refused: new Map(), retryAfter: undefined };
    waits.refused.set(s.call.index, wait);
    if (wait !== 'never') waits.retryAfter = Math.max(waits.retryAfter ?? 0, wait);
  }
  return waits;
}

/**
 * Every call over the limit: the whole request is refused, each call with its own -32005. It is a
 * 429 with Retry-After when a wait admits any of them; calls no wait admits promise no retry.
 */
function refusedByRate(
  d: FrontDeps,
  batch: boolean,
  slots: readonly Slot[],
  { refused, retryAfter }: RateWaits,
  methods: () => string[],
): FrontResult {
  const errorFor = (c: Call): RpcError => rateRefusal(refused.get(c.index) ?? 1);
  for (const s of slots) if (s.call) d.metrics.recordRefused(d.pipeline.label(s.call.method), errorFor(s.call).reason);
  const texts = refuseAll(slots, errorFor);
  // A notification is not answered, but a refusal with a status still carries a body (SPEC 3.2).
  const body = writeBody(batch, texts) || (retryAfter === undefined ? '' : errorText('null', rateRefusal(retryAfter)));
  const status = retryAfter === undefined ? 200 : 429;
  return { status, body, calls: slots.length, methods, upstreams: NONE, errors: slots.length, retryAfter };
}

/** No room for the request's calls (this IP's, or the process's): every call refused, retry in 1 s. */
function refusedByConcurrency(
  d: FrontDeps,
  batch: boolean,
  slots: readonly Slot[],
  admission: Exclude<SlotGrant, 'ok'>,
  admitted: number,
  methods: () => string[],
): FrontResult {
  const error = new RpcError(admission === 'ip' ? 'IP_CONCURRENCY' : 'OVERLOADED', { data: { retryAfterSeconds: 1 } });
  d.metrics.recordRateLimited(admission === 'ip' ? 'ip_concurrency' : 'overloaded', admitted);
  for (const s of slots) if (s.call) d.metrics.recordRefused(d.pipeline.label(s.call.method), error.reason);
  const body =
    writeBody(
      batch,
      refuseAll(slots, () => error),
    ) || errorText('null', error);
  return {
    status: error.http,
    body,
    calls: slots.length,
    methods,
    upstreams: NONE,
    errors: slots.length,
    retryAfter: 1,
  };
}

/** Every slot's answer when no call is worked on: each call refused with its error, invalid ones as they were. */
function refuseAll(slots: readonly Slot[], errorFor: (c: Call) => RpcError): (string | undefined)[] {
  return slots.map((s) =>
    s.call ? (s.call.id === undefined ? undefined : errorText(s.call.id, errorFor(s.call))) : errorText(s.id, s.error),
  );
}

function rateRefusal(wait: number | 'never'): RpcError {
  return wait === 'never'
    ? new RpcError('COST_OVER_LIMIT')
    : new RpcError('RATE_LIMITED', { data: { retryAfterSeconds: wait } });
}
