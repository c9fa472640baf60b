/**
 * The HTTP front on server.port: node:http's server, the connection pipeline in front of it
 * (connection-pipeline.ts: caps, PROXY header, plain lane, node:http), the lingering close, and
 * the answers to requests too broken to read. Each request is http-request.ts's; everything
 * JSON-RPC is the Front's. How an answer's bytes go out (pieces, gzip) is http-answer.ts's.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { RpcError } from '../jsonrpc/errors.js';
import type { ConnectionCaps } from '../limits/connections.js';
import { ConnectionPipeline } from './connection-pipeline.js';
import { Lingering } from './linger.js';
import { NodeExchange } from './node-exchange.js';
import type { ProxyProtocolOptions } from './proxy-protocol.js';
import { rawRefusal, refuseSocket } from './refusal.js';
import { crashed, handle, type HttpDeps } from './http-request.js';

export interface HttpTimeouts {
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

/** A JSON-RPC listener's HTTP: its server, its connections and its lingering sockets. */
export interface HttpFront {
  readonly server: Server;
  readonly pipeline: ConnectionPipeline;
  readonly lingering: Lingering;
}

export function createHttpServer(
  getDeps: () => HttpDeps,
  timeouts: HttpTimeouts,
  caps: ConnectionCaps,
  proxy: ProxyProtocolOptions | null,
): HttpFront {
  // node:http makes each request's response a NodeExchange: both readers answer through one interface.
  const server = createServer<typeof IncomingMessage, typeof NodeExchange>(
    {
      ServerResponse: NodeExchange,
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.headersTimeoutMs + timeouts.bodyTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      // Node checks the two timeouts above only this often (30 s by default): slow clients would linger.
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersTimeoutMs),
    },
    (req, res) => {
      caps.follow(req.socket, res);
      const deps = getDeps();
      try {
        handle(deps, lingering, res);
      } catch (err) {
        crashed(deps, res, err);
      }
    },
  );
  const lingering = new Lingering(() => getDeps().linger);
  // A malformed request line or a slow client: answer 400/408 if the socket still can, never crash.
  // There is no response object here: the whole HTTP answer is written to the socket (Node docs),
  // and the socket is then closed for good with a linger, not left half-open (refusal.ts).
  const refuse = (socket: Duplex, answer: string): void => refuseSocket(socket, answer, lingering);
  server.on('clientError', (err: NodeJS.ErrnoException, socket) =>
    refuse(socket, err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? REQUEST_TIMEOUT_ANSWER : BAD_HTTP_REQUEST_ANSWER),
  );
  const pipeline = new ConnectionPipeline(server, {
    caps,
    proxy,
    plainLane: () => getDeps().plainLane,
    // Plain JSON-RPC POSTs skip node:http's request and response objects (http-lane.ts).
    lane: {
      serve: (x) => {
        const deps = getDeps();
        try {
          handle(deps, lingering, x);
        } catch (err) {
          crashed(deps, x, err);
        }
      },
      maxBodyBytes: () => getDeps().maxBodyBytes,
      timedOut: (socket: Socket) => refuse(socket, REQUEST_TIMEOUT_ANSWER),
    },
    lingering,
  });
  return { server, pipeline, lingering };
}

const REQUEST_TIMEOUT_ANSWER = rawRefusal(new RpcError('REQUEST_TIMEOUT'));
const BAD_HTTP_REQUEST_ANSWER = rawRefusal(new RpcError('BAD_HTTP_REQUEST'));
