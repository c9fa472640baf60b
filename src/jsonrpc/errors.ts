/**
 * The error catalogue: every error Switchyard itself produces, with a stable name, JSON-RPC code,
 * HTTP status and message. Nothing else in the code invents an error code or wording; errors that
 * nodes return are passed through verbatim and never pass through here.
 * docs/errors.md documents each entry (test/jsonrpc/error-catalogue.test.ts checks that it does).
 */

export interface CatalogueEntry {
  code: number;
  /** Status used when this error rejects a whole HTTP request before processing; 200 otherwise. */
  http: number;
  message: string;
  /** What an operator reads in docs/errors.md. */
  doc: string;
}

export const CATALOGUE = {
  PARSE_ERROR: {
    code: -32700,
    http: 200,
    message: 'parse error',
    doc: 'the body is not valid JSON (or not valid UTF-8)',
  },
  INVALID_REQUEST: {
    code: -32600,
    http: 200,
    message: 'invalid request',
    doc: 'an element is not a JSON-RPC 2.0 request object (jsonrpc "2.0", string method, id string/number/null)',
  },
  EMPTY_BATCH: { code: -32600, http: 200, message: 'empty batch', doc: 'the body is `[]`' },
  TOO_DEEP: {
    code: -32600,
    http: 200,
    message: 'invalid request: JSON nested too deeply',
    doc: 'a request object nests arrays/objects deeper than 64 levels (the request itself is level 1; a batch array does not count)',
  },
  BATCH_TOO_LARGE: {
    code: -32600,
    http: 413,
    message: 'batch too large',
    doc: 'a batch holds more than `server.maxBatchSize` calls',
  },
  BODY_TOO_LARGE: {
    code: -32600,
    http: 413,
    message: 'request body too large',
    doc: 'the body is over `server.maxBodyBytes` (counted as bytes arrive)',
  },
  BAD_CONTENT_TYPE: {
    code: -32600,
    http: 415,
    message: 'unsupported content type: expected application/json',
    doc: 'POST without a JSON content type',
  },
  BAD_HTTP_METHOD: {
    code: -32600,
    http: 405,
    message: 'HTTP method not allowed: use POST',
    doc: 'an HTTP method other than POST, GET, HEAD, OPTIONS',
  },
  BAD_HTTP_REQUEST: {
    code: -32600,
    http: 400,
    message: 'bad HTTP request',
    doc: 'the bytes are not an HTTP request Node can read (malformed request line or headers, headers too large); the connection is closed',
  },
  REQUEST_TIMEOUT: {
    code: -32600,
    http: 408,
    message: 'request timeout: the request did not arrive in time',
    doc: 'headers not in within `server.headersTimeoutMs`, or the body not within `server.bodyTimeoutMs` more; the connection is closed',
  },
  NOT_FOUND: { code: -32600, http: 404, message: 'not found: JSON-RPC is served at /', doc: 'a path other than `/`' },
  METHOD_NOT_FOUND: {
    code: -32601,
    http: 200,
    message: 'the method does not exist/is not available',
    doc: 'unknown method, or one the method policy denies (geth wording, with the method name)',
  },
  INVALID_PARAMS: {
    code: -32602,
    http: 200,
    message: 'invalid params',
    doc: '`params` is not an array, or a block parameter Switchyard must read is malformed',
  },
  INTERNAL_ERROR: {
    code: -32603,
    http: 200,
    message: 'internal error',
    doc: 'a Switchyard bug; never carries a stack trace or an upstream URL',
  },
  INVALID_API_KEY: {
    code: -32001,
    http: 401,
    message: 'invalid API key',
    doc: 'an `X-Api-Key` header or `/key/<key>` path with a key the configuration does not list',
  },
  RATE_LIMITED: {
    code: -32005,
    http: 429,
    message: 'rate limit exceeded',
    doc: 'the client IP is over its call budget; `data.retryAfterSeconds` says when to retry',
  },
  COST_OVER_LIMIT: {
    code: -32005,
    http: 200,
    message: 'call costs more than the rate limit ever admits',
    doc: "the method's `rateLimit.methodCost` is over both `ratePerSec` and `burst - ratePerSec` of the client's limits: no wait admits it, so no `retryAfterSeconds`",
  },
  IP_CONCURRENCY: {
    code: -32005,
    http: 429,
    message: 'too many concurrent calls from this client',
    doc: 'the client IP has `server.maxInFlightPerIp` calls being worked on',
  },
  OVERLOADED: {
    code: -32005,
    http: 503,
    message: 'server overloaded',
    doc: '`server.maxInFlight` calls are being worked on; shed at once',
  },
  SHUTTING_DOWN: {
    code: -32005,
    http: 503,
    message: 'server is shutting down',
    doc: 'SIGTERM received; retry on another replica',
  },
  NO_UPSTREAM: {
    code: -32002,
    http: 200,
    message: 'no upstream available',
    doc: 'no upstream is eligible for the call (`data.why`: none healthy, all cordoned, all held off, none in sync, none has the block, none has the capability)',
  },
  UPSTREAM_FAILED: {
    code: -32002,
    http: 200,
    message: 'upstream request failed',
    doc: 'every attempt failed in transport, with a bad answer, or timed out (`data.attempts`)',
  },
  EXPENSIVE_CALL_FAILED: {
    code: -32002,
    http: 200,
    message: 'upstream call timed out or was cut off: an expensive call runs on one node only',
    doc: 'an expensive call (`eth_call`, `eth_estimateGas`, `eth_createAccessList`, `eth_simulateV1`, `eth_getLogs`, `eth_getFilterLogs`, `debug_trace*`, an allowed `trace_*`) got no answer within its timeout (`routing.methodTimeoutsMs`, else `routing.upstreamTimeoutMs`) or lost its connection once sent; not retried on another node (`data.last`: `timeout` or `transport`)',
  },
  NO_QUORUM: {
    code: -32002,
    http: 200,
    message: 'no quorum: the nodes asked did not agree',
    doc: 'a quorum read (`routing.quorum`) got no `min` agreeing answers from `minGroups` groups (`data.why`: `dispute` when answers differed, `too few answers` when too many asked nodes failed, `too few nodes` when fewer than `min` nodes or `minGroups` groups were eligible; `data.asked`, `data.agreeing`)',
  },
  QUORUM_BUSY: {
    code: -32005,
    http: 503,
    message: 'too many quorum calls in flight: retry later',
    doc: '`routing.quorumMaxInFlight` quorum calls are in flight (each until its last asked node answered or timed out); answered at once, sent to no node; `data.retryAfterSeconds`',
  },
  FILTER_NOT_FOUND: {
    code: -32000,
    http: 200,
    message: 'filter not found',
    doc: 'a filter id that was never issued, or whose node is gone',
  },
  SUBSCRIPTIONS_NEED_WS: {
    code: -32601,
    http: 200,
    message: 'subscriptions need a WebSocket connection (ws://, server.wsPort or an upgrade on server.port)',
    doc: '`eth_subscribe`/`eth_unsubscribe` sent over plain HTTP',
  },
  TOO_MANY_SUBSCRIPTIONS: {
    code: -32005,
    http: 200,
    message: 'too many subscriptions on this connection',
    doc: 'the connection already holds `subscriptions.maxPerConnection` subscriptions; the socket stays open',
  },
  TOO_MANY_IP_SUBSCRIPTIONS: {
    code: -32005,
    http: 200,
    message: 'too many subscriptions from this client address',
    doc: 'the client IP (an IPv6 /64) already holds `subscriptions.maxPerIp` subscriptions across its sockets; the socket stays open',
  },
  RESPONSE_TOO_LARGE: {
    code: -32005,
    http: 200,
    message: 'response too large: narrow the request',
    doc: "the node's answer is over `upstreams[].maxResponseBytes`, its result would take the request's results past `server.maxResponseBytes`, or a split eth_getLogs's chunks together are over `routing.maxLogsResponseBytes` (e.g. an eth_getLogs over too many logs); not retried on another node",
  },
  ANSWERS_BUSY: {
    code: -32005,
    http: 503,
    message: 'server overloaded: too many large answers being received, retry later',
    doc: 'the answer is large (over 1 MiB) and `routing.maxLargeAnswerBytes` of large answers are being received already; cut off at once, not retried on another node; `data.retryAfterSeconds`',
  },
  UPSTREAM_BUDGET: {
    code: -32005,
    http: 503,
    message: 'upstream budget exhausted',
    doc: 'every node the call could go to has spent its budget (`upstreams[].rateLimit`) for now; answered at once, never queued; `data.retryAfterSeconds` says when the first budget refills',
  },
  HELD_LANE_FULL: {
    code: -32005,
    http: 503,
    message: 'too many held calls at the upstreams: retry later',
    doc: 'a held call (`eth_sendRawTransactionSync`, `debug_trace*`, an allowed `trace_*`) found the held lane of every node it could go to full (`upstreams[].heldConnections` held calls each); answered at once, never queued, and not sent to any node; `data.retryAfterSeconds`',
  },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorName = keyof typeof CATALOGUE;

/**
 * Who caused an error: `service` when Switchyard or its nodes could not serve a good call
 * (internal errors, -32002 no upstream / every attempt failed, and refusals with an HTTP 5xx
 * status: overload shedding, shutting down); `client` for everything the caller can fix (bad
 * requests, unknown methods, its own rate limit). The metrics and the error-ratio alert use it.
 */
export function blameOf(name: ErrorName): 'client' | 'service' {
  const e: CatalogueEntry = CATALOGUE[name];
  return e.code === -32603 || e.code === -32002 || e.http >= 500 ? 'service' : 'client';
}

/**
 * An error Switchyard produces for one call: serialised into that call's slot. It carries no stack
 * (its `stack` is its first line alone): it is an answer for a client, never a fault to trace, and
 * capturing the stack was most of what a refused call cost (a batch of 25 calls of an unknown
 * method, in process: 15.4 us a call with it; test/bench/calls.ts). A fault inside the service is
 * logged with the error that caused it, which keeps its stack.
 */
export class RpcError extends Error {
  readonly code: number;
  readonly http: number;
  readonly data: Record<string, unknown>;

  constructor(
    readonly reason: ErrorName,
    extra: { message?: string; data?: Record<string, unknown> } = {},
  ) {
    const entry: CatalogueEntry = CATALOGUE[reason];
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(extra.message ?? entry.message);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.code = entry.code;
    this.http = entry.http;
    this.data = { reason, ...extra.data };
  }

  /** The JSON text of the `error` member. */
  toJSON(): { code: number; message: string; data: Record<string, unknown> } {
    return { code: this.code, message: this.message, data: this.data };
  }
}

export const rpcErrors = {
  methodNotFound: (method: string) =>
    new RpcError('METHOD_NOT_FOUND', { message: `the method ${method} does not exist/is not available` }),
  invalidParams: (why: string) => new RpcError('INVALID_PARAMS', { message: `invalid params: ${why}` }),
  batchTooLarge: (n: number, max: number) =>
    new RpcError('BATCH_TOO_LARGE', { message: `batch too large: ${n} calls, at most ${max} allowed` }),
  noUpstream: (why: string) => new RpcError('NO_UPSTREAM', { message: `no upstream available: ${why}`, data: { why } }),
};
