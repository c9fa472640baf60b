/**
 * The process's listening sockets: server.port (HTTP and WebSocket upgrades), server.wsPort (the
 * same, on its own port) and the admin port; listening, and the drain of SIGTERM.
 * Every wait here is on an event (a server's close, the last call ending, the last frame
 * answered) bounded by a deadline, never a poll.
 * Owns: creating and wiring the servers, listen errors, drain and close. Refuses: what a request
 * means (http-request.ts, front.ts) and which settings are in force (the request path: path.ts).
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Concurrency } from '../limits/concurrency.js';
import { ConnectionCaps, type ConnectionLimits } from '../limits/connections.js';
import type { Metrics } from '../metrics/registry.js';
import { WsFront } from './ws.js';
import { createAdminServer, type AdminDeps } from './admin.js';
import { createHttpServer, type HttpFront } from './http.js';
import type { RequestPath } from './path.js';
import type { ProxyProtocolOptions } from './proxy-protocol.js';

export interface Listeners {
  http: HttpFront;
  /** The separate WebSocket port (null when server.wsPort is null). */
  wsHttp: HttpFront | null;
  admin: Server;
  ws: WsFront;
  connections: ConnectionCaps;
}

export interface Ports {
  http: number;
  /** The separate WebSocket port (null when server.wsPort is null). */
  ws: number | null;
  admin: number;
}

/**
 * Creates the servers over `current` (the request path in force, read per request, frame and
 * accepted connection). Listening addresses and PROXY protocol are the start path's: they are
 * restart keys (config/restart.ts).
 */
export function createListeners(current: () => RequestPath, metrics: Metrics, adminDeps: () => AdminDeps): Listeners {
  const { server } = current().config;
  const limits: ConnectionLimits = {
    get maxConnections() {
      return current().connectionLimits.maxConnections;
    },
    get maxConnectionsPerIp() {
      return current().connectionLimits.maxConnectionsPerIp;
    },
  };
  const connections = new ConnectionCaps(
    limits,
    {
      address: (remote) => current().clientIp.resolve(remote, undefined),
      trusted: (ip) => current().clientIp.isTrusted(ip),
    },
    metrics,
  );
  // Read for each connection: a reload's headersTimeoutMs applies to the next one.
  const proxy: ProxyProtocolOptions | null = server.proxyProtocol
    ? {
        trusted: (peer) => current().clientIp.isTrusted(peer),
        get timeoutMs() {
          return current().config.server.headersTimeoutMs;
        },
        refused: (why) => metrics.recordProxyRefused(why),
      }
    : null;
  const http = createHttpServer(() => current().http, server, connections, proxy);
  const ws = new WsFront(() => current().ws);
  ws.attach(http.server, http.lingering);
  // The WebSocket port serves the same HTTP as server.port, and upgrades.
  const wsHttp = server.wsPort === null ? null : createHttpServer(() => current().http, server, connections, proxy);
  if (wsHttp) ws.attach(wsHttp.server, wsHttp.lingering);
  return { http, wsHttp, admin: createAdminServer(adminDeps), ws, connections };
}

/**
 * Listens, or fails with an error naming the listener and its address. These are Switchyard's own
 * listen addresses, not upstream URLs, so they may be logged; the log scrubs `host:port` from
 * error text, hence "host port N".
 */
async function listenOn(server: Server, listener: 'http' | 'ws' | 'admin', host: string, port: number): Promise<void> {
  server.listen(port, host);
  try {
    await once(server, 'listening');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw Object.assign(new Error(`${listener} listener could not listen on ${host} port ${port}: ${code}`), {
      code,
      listener,
      host,
      port,
    });
  }
}

export async function listen(l: Listeners, config: RequestPath['config']): Promise<void> {
  const { server, admin } = config;
  await Promise.all([
    listenOn(l.http.server, 'http', server.host, server.port),
    listenOn(l.admin, 'admin', admin.host, admin.port),
    ...(l.wsHttp ? [listenOn(l.wsHttp.server, 'ws', server.host, server.wsPort ?? 0)] : []),
  ]);
}

export function portsOf(l: Listeners): Ports {
  return {
    http: (l.http.server.address() as AddressInfo).port,
    admin: (l.admin.address() as AddressInfo).port,
    ws: l.wsHttp ? (l.wsHttp.server.address() as AddressInfo).port : null,
  };
}

/**
 * A reload's HTTP timeouts, on server.port and server.wsPort alike (the wsPort listener serves the
 * same JSON-RPC over HTTP). Node reads them per connection: open keep-alive connections keep theirs.
 */
export function applyTimeouts(l: Listeners, server: RequestPath['config']['server']): void {
  for (const front of [l.http, l.wsHttp]) {
    if (front === null) continue;
    const s = front.server;
    s.headersTimeout = server.headersTimeoutMs;
    s.requestTimeout = server.headersTimeoutMs + server.bodyTimeoutMs;
    s.keepAliveTimeout = server.keepAliveTimeoutMs;
  }
}

/** Resolves after `ms` (at once for 0 or less); the timer never holds the process open. */
function after(ms: number): { done: Promise<void>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => {
    if (ms > 0) timer = setTimeout(resolve, ms).unref();
    else resolve();
  });
  return { done, cancel: () => clearTimeout(timer) };
}

/**
 * The drain after the shutdown delay (SPEC 9): the JSON-RPC listeners stop accepting, idle
 * connections close, WebSocket frames already received are answered before their sockets get
 * 1001, and calls in flight may finish until `deadline` (epoch ms); then every connection closes.
 */
export async function drainListeners(l: Listeners, concurrency: Concurrency, deadline: number): Promise<void> {
  const closed = new Promise<void>((resolve) => l.http.server.close(() => resolve()));
  l.http.pipeline.closeIdle();
  l.wsHttp?.server.close();
  l.wsHttp?.pipeline.closeIdle();
  await l.ws.close(1001, deadline);
  const grace = after(deadline - Date.now());
  await Promise.race([concurrency.idle(), grace.done]);
  grace.cancel();
  l.http.pipeline.closeAll();
  await closed;
}

/** Closes every socket and listener at once: WebSockets with 1001, HTTP connections cut. */
export async function closeListeners(l: Listeners): Promise<void> {
  await l.ws.close(1001);
  l.http.pipeline.closeAll();
  if (l.wsHttp) {
    l.wsHttp.pipeline.closeAll();
    await new Promise<void>((r) => l.wsHttp!.server.close(() => r()));
  }
  await Promise.all([
    new Promise<void>((r) => l.http.server.close(() => r())),
    new Promise<void>((r) => {
      l.admin.closeAllConnections();
      l.admin.close(() => r());
    }),
  ]);
}
