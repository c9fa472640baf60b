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
import type { Identity, RateLimits } from '../limits/rate.js';
import { INVALID_METHOD, type Metrics } from '../metrics/registry.js';
import type { Pipeline } from '../pipeline/index.js';

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
  constructor(private deps: FrontDeps) {}

  update(deps: FrontDeps): void {
    this.deps = deps;
  }

  async process(text: string, who: Identity, log: Logger): Promise<FrontResult> {
    const d = this.deps;
    const parsed = parseBody(text, d.maxBatchSize);
    if (parsed.kind === 'error') {
      d.metrics.recordRefused(INVALID_METHOD, parsed.error.reason);
      const one = errorText('null', parsed.error);
      return { status: parsed.status, body: parsed.asArray ? `[${one}]` : one, calls: null, methods: () => [], upstreams: [], errors: 1 };
    }
    const { slots, batch } = parsed;
    const methods = (): string[] => slots.slice(0, LOGGED_METHODS).map((s) => (s.call ? d.pipeline.label(s.call.method) : 'invalid'));
    const valid: Call[] = [];
    for (const s of slots) {
      if (s.call) valid.push(s.call);
      else d.metrics.recordRefused(INVALID_METHOD, s.error.reason);
    }
    const admitting = d.rateLimits.admit(who, valid.map((c) => c.method));
    const admissions = Array.isArray(admitting) ? admitting : await admitting;
    const refused = new Map<number, number>();
    valid.forEach((c, i) => {
      const wait = admissions[i];
      if (wait !== null && wait !== undefined) refused.set(c.index, wait);
    });
    const admitted = valid.length - refused.size;
    const retryAfter = refused.size > 0 ? Math.max(...refused.values()) : undefined;
    // Every call over the limit: the whole request is refused with 429, each call with its own -32005.
    if (valid.length > 0 && admitted === 0) {
      for (const c of valid) d.metrics.recordRefused(d.pipeline.label(c.method), 'RATE_LIMITED');
      const texts = refuseAll(slots, (c) => rateLimited(refused.get(c.index) ?? 1));
      return { status: 429, body: writeBody(batch, texts), calls: slots.length, methods, upstreams: [], errors: slots.length, retryAfter };
    }
    const admission = d.concurrency.acquire(who.ip, admitted);
    if (admission !== 'ok') {
      const error = new RpcError(admission === 'ip' ? 'IP_CONCURRENCY' : 'OVERLOADED', { data: { retryAfterSeconds: 1 } });
      d.metrics.recordRateLimited(admission === 'ip' ? 'ip_concurrency' : 'overloaded', admitted);
      for (const c of valid) d.metrics.recordRefused(d.pipeline.label(c.method), error.reason);
      const texts = refuseAll(slots, () => error);
      return { status: error.http, body: writeBody(batch, texts) || errorText('null', error), calls: slots.length, methods, upstreams: [], errors: slots.length, retryAfter: 1 };
    }
    let errors = 0;
    try {
      const ctx = d.pipeline.context(who.ip, d.requestTimeoutMs, log);
      const texts = await Promise.all(
        slots.map(async (s) => {
          if (!s.call) {
            errors++;
            return errorText(s.id, s.error);
          }
          const wait = refused.get(s.call.index);
          if (wait !== undefined) d.metrics.recordRefused(d.pipeline.label(s.call.method), 'RATE_LIMITED');
          const outcome: Outcome = wait !== undefined ? { error: rateLimited(wait) } : await d.pipeline.handle(ctx, s.call);
          if (outcome.result === undefined) errors++;
          return s.call.id === undefined ? undefined : responseText(s.call.id, outcome);
        }),
      );
      return { status: 200, body: writeBody(batch, texts), calls: slots.length, methods, upstreams: [...new Set(ctx.trail)], errors };
    } finally {
      d.concurrency.release(who.ip, admitted);
    }
  }
}

/** Every slot's answer when no call is worked on: each call refused with its error, invalid ones as they were. */
function refuseAll(slots: readonly Slot[], errorFor: (c: Call) => RpcError): (string | undefined)[] {
  return slots.map((s) => (s.call ? (s.call.id === undefined ? undefined : errorText(s.call.id, errorFor(s.call))) : errorText(s.id, s.error)));
}

function rateLimited(retryAfterSeconds: number): RpcError {
  return new RpcError('RATE_LIMITED', { data: { retryAfterSeconds } });
}
