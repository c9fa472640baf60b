/**
 * One HTTP request on the front, from its head to its answer: CORS, the statuses of SPEC 3.2, the
 * GET pages, the body handed to the Front, the request line. Read by node:http or the plain lane
 * (http-lane.ts); the server that accepts them is http.ts's.
 */
import type { Logger } from 'pino';
import { RpcError } from '../jsonrpc/errors.js';
import { toQuantity } from '../jsonrpc/hex.js';
import type { Admission } from '../limits/rate.js';
import { errorText } from '../jsonrpc/response.js';
import type { RawText } from '../jsonrpc/raw.js';
import { INVALID_METHOD, type Metrics } from '../metrics/registry.js';
import {
  type HttpServerRequest,
  remoteParent,
  startTrace,
  type RequestTrace,
  type RequestTracing,
} from '../tracing/index.js';
import type { UptimePages } from '../uptime/pages/routes.js';
import { memoUptimeAnswer } from '../uptime/pages/page-memo.js';
import { type BodyResult, isJsonContentType } from './body.js';
import type { ClientIp } from './client-ip.js';
import { diagnosticHeaders } from './diagnostics.js';
import type { BodyReceiver, Exchange, ExchangeRequest } from './exchange.js';
import { headersOf, NO_HEADERS, sendAnswer, sendLargeAnswer } from './http-answer.js';
import type { LingerBounds, Lingering } from './linger.js';
import type { Front, FrontResult } from './front.js';
import { peerAddress } from './proxy-protocol.js';
import { requestIdOf, userAgentOf } from './request-id.js';
import { routeOf, rpcTarget } from './rpc-target.js';

export interface HttpDeps {
  front: Front;
  clientIp: ClientIp;
  metrics: Metrics;
  log: Logger;
  maxBodyBytes: number;
  corsOrigins: readonly string[];
  chainId: number;
  version: string;
  isReady: () => boolean;
  isDraining: () => boolean;
  /** During the shutdown delay: every answer carries Connection: close (the socket closes after it). */
  closeConnections?: () => boolean;
  knowsKey: (key: string) => boolean;
  /**
   * Charges one unit of the client IP's rate budget for a request that is no call (a GET page, a
   * guess at an API key): null when admitted, else seconds to wait (limits/rate.ts admitRequest).
   */
  admitRequest: (ip: string) => Admission | Promise<Admission>;
  /** The configured name of an API key, for the request line (the key never is logged). */
  keyName?: (key: string) => string | undefined;
  /** Answers of at least this many bytes are gzip-compressed for clients that accept it; null = never. */
  gzipMinBytes?: number | null;
  /** log.requests: which requests get an info line (lifecycle lines are not affected). */
  logRequests?: 'all' | 'errors' | 'off';
  /** The public uptime page and its JSON and badge (SPEC 12); null when uptime.enabled is false. */
  uptime?: UptimePages | null;
  /** Tracing with the path's sampling (tracing/); null or absent when tracing is off. */
  tracing?: RequestTracing | null;
  /** server.diagnosticHeaders: X-Switchyard-* and Server-Timing on JSON-RPC answers (absent = on). */
  diagnosticHeaders?: boolean;
  /** server.lingerMs, server.lingerBytes and the idle gap: the lingering close's bounds (linger.ts). */
  linger: LingerBounds;
  /** server.plainLane: plain JSON-RPC POSTs read by the lane (http-lane.ts); false: every request by node:http. */
  plainLane: boolean;
}

export function crashed(deps: HttpDeps, x: Exchange, err: unknown): void {
  deps.log.error({ err }, 'http handler crashed');
  if (!x.headersSent)
    sendAnswer(x, 500, errorText('null', new RpcError('INTERNAL_ERROR')), undefined, NO_HEADERS, NO_HEADERS);
}

/**
 * Browsers hide other response headers from scripts: a dapp reads when to retry, what served it,
 * its trace, and the X-Request-Id the uptime page's "Report a problem" asks users to quote (SPEC 12.3).
 */
const EXPOSE =
  'Retry-After, X-Request-Id, X-Switchyard-Upstream, X-Switchyard-Cache, X-Switchyard-Attempts, X-Switchyard-Quorum, Server-Timing, traceparent';
const EXPOSED = { 'access-control-expose-headers': EXPOSE };

const ALLOW_ANY: Readonly<Record<string, string>> = Object.freeze({ 'access-control-allow-origin': '*', ...EXPOSED });
const VARY: Readonly<Record<string, string>> = Object.freeze({ vary: 'Origin' });

function corsHeaders(deps: HttpDeps, req: ExchangeRequest): Readonly<Record<string, string>> {
  const origin = req.headers.origin;
  if (deps.corsOrigins.length === 0) return NO_HEADERS;
  if (deps.corsOrigins.includes('*')) return origin === undefined ? NO_HEADERS : ALLOW_ANY;
  // The answer depends on Origin whether or not this one is listed: a shared cache must key on it.
  if (origin === undefined || !deps.corsOrigins.includes(origin)) return VARY;
  return { 'access-control-allow-origin': origin, vary: 'Origin', ...EXPOSED };
}

interface LogInfo {
  calls?: number | null;
  methods?: () => string[];
  upstreams?: string[];
  errors?: number;
}

type Rejection =
  | 'BAD_HTTP_METHOD'
  | 'BAD_CONTENT_TYPE'
  | 'BODY_TOO_LARGE'
  | 'NOT_FOUND'
  | 'SHUTTING_DOWN'
  | 'INVALID_API_KEY';

/** One request, read by node:http or the plain lane (exchange.ts), to its answer. */
export function handle(deps: HttpDeps, lingering: Lingering, x: Exchange): void {
  const req = x.req;
  const r = new HttpRequest(deps, x, lingering);
  if (deps.isDraining()) return r.reject('SHUTTING_DOWN', CONNECTION_CLOSE);
  const target = rpcTarget(req);
  // HEAD as GET (monitors probe with it; Node sends no body for HEAD).
  if (req.method === 'GET' || req.method === 'HEAD') return r.charged(() => r.page(target));
  // Only POSTs take the plain lane: an OPTIONS is always node:http's.
  if (req.method === 'OPTIONS') return preflight(deps, x, r.cors, r.reqId);
  if (req.method !== 'POST') return r.reject('BAD_HTTP_METHOD', ALLOW);
  if (target === null) return r.reject('NOT_FOUND');
  r.apiKey = target.apiKey;
  // An unknown key costs the guesser its IP's budget: 401 while it lasts, then 429.
  if (target.apiKey !== undefined && !deps.knowsKey(target.apiKey)) return r.charged(() => r.reject('INVALID_API_KEY'));
  if (!isJsonContentType(req.headers['content-type'])) return r.reject('BAD_CONTENT_TYPE');
  x.readBody(deps.maxBodyBytes, r);
}

/**
 * One request on its way to its answer: who sent it, its id and logger, and the answer's writing
 * and request line. One object per request, its steps methods rather than closures.
 */
class HttpRequest implements HttpServerRequest, BodyReceiver {
  /** The exchange's request (the trace reads it: tracing/http-server.ts). */
  readonly req: ExchangeRequest;
  readonly cors: Readonly<Record<string, string>>;
  readonly clientIp: string;
  readonly reqId: string;
  readonly log: Logger;
  /** Only when a request line or the diagnostic headers can be written is the clock read (`started`). */
  private readonly logRequests: boolean;
  private readonly started: number;
  apiKey: string | undefined = undefined;
  /** The request's trace when tracing is on (a SERVER span, ended as the answer is written). */
  readonly trace: RequestTrace | null;
  /** The diagnostic headers of a JSON-RPC answer (flat name, value pairs), when on. */
  private diagnostics: string[] | undefined = undefined;
  /** The clock reading the diagnostic headers took when the answer was made (the trace ends at it); 0 if none. */
  private answeredAt = 0;

  constructor(
    readonly deps: HttpDeps,
    readonly x: Exchange,
    private readonly lingering: Lingering,
  ) {
    const req = x.req;
    this.req = req;
    this.cors = corsHeaders(deps, req);
    this.clientIp = deps.clientIp.resolve(peerAddress(req.socket), req.headers['x-forwarded-for']);
    this.reqId = requestIdOf(req);
    // The per-request child logger and its line cost more than the rest of a cached answer: only
    // when request lines (log.requests, at info) or debug lines can be written is one made.
    this.logRequests = deps.logRequests !== 'off' && deps.log.isLevelEnabled('info');
    this.started = this.logRequests || deps.diagnosticHeaders !== false ? performance.now() : 0;
    this.log = this.logRequests || deps.log.isLevelEnabled('debug') ? deps.log.child({ req: this.reqId }) : deps.log;
    // JSON-RPC requests only: a GET page or a preflight is no call.
    this.trace =
      deps.tracing && req.method === 'POST'
        ? startTrace(
            deps.tracing,
            'http',
            remoteParent(req.headers.traceparent, req.headers.tracestate),
            this.started === 0 ? undefined : this.started,
            this,
          )
        : null;
  }

  /** Read only for a trace that is exported (tracing/http-server.ts). */
  get route(): string | undefined {
    return routeOf(this.req);
  }

  finish(
    status: number,
    body: string | Buffer | RawText,
    extra: Readonly<Record<string, string>>,
    info: LogInfo = {},
  ): void {
    const { deps, x } = this;
    closeIfStopping(deps, x);
    x.beforeAnswer(extra, deps.maxBodyBytes, this.lingering);
    let diagnostics = this.diagnostics;
    if (this.trace !== null) {
      // As a header pair, not a spread into `extra`: the answer keeps the short writeHead (http-answer.ts).
      const errors = info.errors ?? (status === 200 ? 0 : 1);
      const traceparent = this.trace.end(
        status,
        errors,
        info.calls ?? null,
        this.answeredAt === 0 ? undefined : this.answeredAt,
      );
      // The diagnostic headers are this answer's own array (diagnostics.ts makes one per answer).
      if (diagnostics === undefined) diagnostics = ['traceparent', traceparent];
      else diagnostics.push('traceparent', traceparent);
    }
    if (deps.gzipMinBytes === undefined || deps.gzipMinBytes === null || body.length < deps.gzipMinBytes)
      sendAnswer(x, status, body, this.reqId, this.cors, extra, diagnostics);
    else {
      const all = diagnostics === undefined ? extra : { ...extra, ...headersOf(diagnostics) };
      sendLargeAnswer(x, status, body, this.reqId, this.cors, all);
    }
    deps.metrics.recordHttp(status, info.calls ?? null);
    if (this.logRequests) this.requestLine(status, info);
  }

  private requestLine(status: number, info: LogInfo): void {
    const deps = this.deps;
    // errors: how many calls (or the whole body) were answered with an error: the request's outcome.
    const errors = info.errors ?? (status === 200 ? 0 : 1);
    if ((deps.logRequests ?? 'all') !== 'all' && errors <= 0 && status < 400) return;
    const apiKey = this.apiKey === undefined ? undefined : (deps.keyName?.(this.apiKey) ?? 'unknown');
    this.log.info(
      {
        ip: this.clientIp,
        status,
        calls: info.calls ?? 0,
        errors,
        methods: info.methods?.(),
        upstreams: info.upstreams,
        ms: Math.round(performance.now() - this.started),
        ua: userAgentOf(this.req),
        apiKey,
        trace_id: this.trace?.traceId,
      },
      'request',
    );
  }

  reject(reason: Rejection, extra: Readonly<Record<string, string>> = NO_HEADERS): void {
    const e = new RpcError(reason);
    const method = this.req.method;
    // A request refused before it became calls counts as one call (method `invalid`); a GET, HEAD
    // or OPTIONS is no call at all.
    if (method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS')
      this.deps.metrics.recordRefused(INVALID_METHOD, reason);
    this.finish(e.http, errorText('null', e), extra);
  }

  /** GET pages and API key guesses are charged to the client IP's rate budget; over it, 429. */
  charged(go: () => void): void {
    chargeRequest(this.deps, this.x, this.clientIp, go, (seconds) => {
      if (this.req.method === 'POST') this.deps.metrics.recordRefused(INVALID_METHOD, 'RATE_LIMITED');
      this.finish(429, errorText('null', new RpcError('RATE_LIMITED', { data: { retryAfterSeconds: seconds } })), {
        'retry-after': String(seconds),
      });
    });
  }

  /** A GET or HEAD: the uptime page when it is on and asked for, else what this is at `/`. */
  page(target: { apiKey?: string } | null): void {
    const deps = this.deps;
    if (deps.uptime) {
      const page = memoUptimeAnswer(deps.uptime, this.req.url ?? '/', this.req.headers);
      // Public and read-only: its own CORS and cache headers, whatever server.cors says.
      if (page !== null) return this.finish(page.status, page.body, page.headers);
    }
    if (target === null) return this.reject('NOT_FOUND');
    const info = {
      name: 'switchyard',
      version: deps.version,
      chainId: toQuantity(deps.chainId),
      ready: deps.isReady(),
    };
    // With the uptime page on, a browser's GET / gets the page: this answer depends on Accept too.
    return this.finish(200, JSON.stringify(info), deps.uptime ? VARY_ACCEPT : NO_HEADERS);
  }

  /** A POST's body, read whole under the cap: its calls go to the front. */
  received(body: BodyResult): void {
    const deps = this.deps;
    try {
      if (!body.ok) {
        if (body.why === 'aborted') return void this.trace?.end(499, 1, null);
        if (body.why === 'too_large') return this.reject('BODY_TOO_LARGE', CONNECTION_CLOSE);
        deps.metrics.recordRefused(INVALID_METHOD, 'PARSE_ERROR');
        return this.finish(200, errorText('null', new RpcError('PARSE_ERROR')), NO_HEADERS, { errors: 1 });
      }
      const out = deps.front.process(
        body.text,
        { ip: this.clientIp, apiKey: this.apiKey, reqId: this.reqId, headers: this.req.headers },
        this.log,
        this.trace,
      );
      if (out instanceof Promise) out.then((o) => this.answer(o)).catch((err: unknown) => this.crashed(err));
      else this.answer(out);
    } catch (err) {
      this.crashed(err);
    }
  }

  private crashed(err: unknown): void {
    crashed(this.deps, this.x, err);
    this.trace?.end(500, 1, null);
  }

  private answer(out: FrontResult): void {
    const extra = out.retryAfter !== undefined ? { 'retry-after': String(out.retryAfter) } : NO_HEADERS;
    if (this.deps.diagnosticHeaders !== false) {
      this.answeredAt = performance.now();
      this.diagnostics = diagnosticHeaders(out.diagnostics, this.answeredAt - this.started);
    }
    this.finish(out.status, out.body, extra, out);
  }
}

/** Charges one unit of the client IP's rate budget, then `go`, or `over` with the seconds to wait. */
function chargeRequest(
  deps: HttpDeps,
  x: Exchange,
  clientIp: string,
  go: () => void,
  over: (seconds: number) => void,
): void {
  const run = (wait: Admission): void => {
    try {
      if (wait === null) go();
      else over(wait === 'never' ? 1 : wait);
    } catch (err) {
      crashed(deps, x, err);
    }
  };
  const admission = deps.admitRequest(clientIp);
  if (admission instanceof Promise) admission.then(run, (err: unknown) => crashed(deps, x, err));
  else run(admission);
}

/** A CORS preflight: 204, never charged nor counted as a call. */
function preflight(deps: HttpDeps, x: Exchange, cors: Readonly<Record<string, string>>, reqId: string): void {
  closeIfStopping(deps, x);
  const res = x.response();
  res.writeHead(204, {
    ...cors,
    'x-request-id': reqId,
    'access-control-allow-methods': 'POST, GET, HEAD, OPTIONS',
    'access-control-allow-headers': x.req.headers['access-control-request-headers'] ?? 'content-type',
    'access-control-max-age': '86400',
  });
  res.end();
  deps.metrics.recordHttp(204, null);
}

/**
 * During the shutdown delay every answer carries Connection: close, including answers to calls that
 * began before SIGTERM: decided as the answer is written, not when the request arrived. Node merges
 * the header into the writeHead that follows and closes the socket after the answer.
 */
function closeIfStopping(deps: HttpDeps, x: Exchange): void {
  if (deps.closeConnections?.()) x.closeConnection();
}

const CONNECTION_CLOSE: Readonly<Record<string, string>> = Object.freeze({ connection: 'close' });
const ALLOW: Readonly<Record<string, string>> = Object.freeze({ allow: 'POST, GET, HEAD, OPTIONS' });
const VARY_ACCEPT: Readonly<Record<string, string>> = Object.freeze({ vary: 'Accept' });
