/**
 * The transport-neutral front: JSON-RPC text in, JSON-RPC text out. HTTP and WebSocket both use it,
 * so both get the same parsing, limits, errors and ordering. Each slot is worked on concurrently and
 * written back in request order; every call gets exactly one answer.
 */
import type { Logger } from 'pino';
import { RpcError } from '../jsonrpc/errors.js';
import { parseBody } from '../jsonrpc/parse.js';
import { errorText, responseText, writeBody } from '../jsonrpc/response.js';
import type { Concurrency } from '../limits/concurrency.js';
import type { Metrics } from '../metrics/registry.js';
import type { Pipeline } from '../pipeline/index.js';

export interface FrontResult {
  status: number;
  body: string;
  /** Calls in the request (null when the body never became calls). */
  calls: number | null;
  methods: string[];
  upstreams: string[];
  retryAfter?: number;
}

export interface FrontDeps {
  pipeline: Pipeline;
  concurrency: Concurrency;
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

  async process(text: string, clientIp: string, log: Logger): Promise<FrontResult> {
    const d = this.deps;
    const parsed = parseBody(text, d.maxBatchSize);
    if (parsed.kind === 'error') {
      const one = errorText('null', parsed.error);
      return { status: parsed.status, body: parsed.asArray ? `[${one}]` : one, calls: null, methods: [], upstreams: [] };
    }
    const { slots, batch } = parsed;
    const methods = slots.slice(0, LOGGED_METHODS).map((s) => (s.call ? d.pipeline.label(s.call.method) : 'invalid'));
    const calls = slots.filter((s) => s.call !== undefined).length;
    const admission = d.concurrency.acquire(clientIp, calls);
    if (admission !== 'ok') {
      const error = new RpcError(admission === 'ip' ? 'IP_CONCURRENCY' : 'OVERLOADED', { data: { retryAfterSeconds: 1 } });
      const texts = slots.map((s) => (s.call ? (s.call.id === undefined ? undefined : errorText(s.call.id, error)) : errorText(s.id, s.error)));
      return { status: error.http, body: writeBody(batch, texts) || errorText('null', error), calls: slots.length, methods, upstreams: [], retryAfter: 1 };
    }
    const ctx = d.pipeline.context(clientIp, d.requestTimeoutMs, log);
    try {
      const texts = await Promise.all(
        slots.map(async (s) => {
          if (!s.call) return errorText(s.id, s.error);
          const outcome = await d.pipeline.handle(ctx, s.call);
          return s.call.id === undefined ? undefined : responseText(s.call.id, outcome);
        }),
      );
      return { status: 200, body: writeBody(batch, texts), calls: slots.length, methods, upstreams: [...new Set(ctx.trail)] };
    } finally {
      d.concurrency.release(clientIp, calls);
    }
  }
}
