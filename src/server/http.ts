/**
 * The HTTP front on server.port: node:http's server, the plain lane beside it (http-lane.ts), the
 * lingering close, and the answers to requests too broken to read. Each request is
 * http-request.ts's; everything JSON-RPC is the Front's. How an answer's bytes go out (pieces,
 * gzip) is http-answer.ts's.
 */
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { RpcError } from '../jsonrpc/errors.js';
import { acceptLane } from './http-lane.js';
import { lingeringOf } from './linger.js';
import { rawRefusal, refuseSocket } from './refusal.js';
import { crashed, handle, type HttpDeps } from './http-request.js';

export interface HttpTimeouts {
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

/** `idle`: told when a plain-lane connection owes no answer and holds no byte of another request. */
export function createHttpServer(
  getDeps: () => HttpDeps,
  timeouts: HttpTimeouts,
  idle?: (socket: Socket) => void,
): Server {
  const server = createServer(
    {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.headersTimeoutMs + timeouts.bodyTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      // Node checks the two timeouts above only this often (30 s by default): slow clients would linger.
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersTimeoutMs),
    },
    (req, res) => {
      const deps = getDeps();
      try {
        handle(deps, lingering, req, res);
      } catch (err) {
        crashed(deps, res, err);
      }
    },
  );
  const lingering = lingeringOf(server, () => getDeps().linger);
  // Plain JSON-RPC POSTs skip node:http's request and response objects (http-lane.ts).
  acceptLane(server, {
    serve: (req, reply, body) => {
      const deps = getDeps();
      try {
        handle(deps, lingering, req, reply, body);
      } catch (err) {
        crashed(deps, reply, err);
      }
    },
    maxBodyBytes: () => getDeps().maxBodyBytes,
    idle,
    enabled: () => getDeps().plainLane,
    lingering,
  });
  // A malformed request line or a slow client: answer 400/408 if the socket still can, never crash.
  // There is no response object here: the whole HTTP answer is written to the socket (Node docs),
  // and the socket is then closed for good with a linger, not left half-open (refusal.ts).
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    const answer = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? REQUEST_TIMEOUT_ANSWER : BAD_HTTP_REQUEST_ANSWER;
    refuseSocket(socket, answer, lingering);
  });
  return server;
}

const REQUEST_TIMEOUT_ANSWER = rawRefusal(new RpcError('REQUEST_TIMEOUT'));
const BAD_HTTP_REQUEST_ANSWER = rawRefusal(new RpcError('BAD_HTTP_REQUEST'));
