/**
 * The devnet's control API: a tiny HTTP surface over Devnet so faults can be injected by hand or by
 * tests (curl -X POST .../nodes/1/lag?blocks=3). It only translates requests; the behaviour is the
 * fleet's. It never returns anything but node metadata (no keys, no process details beyond pid).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { sendJson } from '../server/json-reply.js';
import type { Devnet } from './types.js';

export interface ControlServer {
  readonly url: string;
  close(): Promise<void>;
}

class DevnetHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type NodeAction = 'lag' | 'stall' | 'resume' | 'kill' | 'restart';
const NODE_ACTIONS = new Set<string>(['lag', 'stall', 'resume', 'kill', 'restart']);

/** A query parameter that must be a non-negative integer; absent means `fallback`. */
function intParam(url: URL, name: string, fallback: number | undefined): number {
  const raw = url.searchParams.get(name);
  if (raw === null) {
    if (fallback === undefined) throw new DevnetHttpError(400, `query parameter ${name} is required`);
    return fallback;
  }
  if (!/^\d{1,9}$/.test(raw))
    throw new DevnetHttpError(
      400,
      `query parameter ${name}: expected a non-negative integer, got ${JSON.stringify(raw)}`,
    );
  return Number(raw);
}

function requirePost(req: IncomingMessage): void {
  if (req.method !== 'POST') throw new DevnetHttpError(405, `expected POST, got ${req.method}`);
}

async function route(devnet: Devnet, req: IncomingMessage, url: URL): Promise<[number, unknown]> {
  const parts = url.pathname.split('/').filter(Boolean);
  if (parts.length === 1 && parts[0] === 'nodes') {
    if (req.method !== 'GET') throw new DevnetHttpError(405, `expected GET, got ${req.method}`);
    return [200, devnet.nodes()];
  }
  if (parts.length === 1 && parts[0] === 'mine') {
    requirePost(req);
    const count = intParam(url, 'count', 1);
    if (count < 1 || count > 10_000)
      throw new DevnetHttpError(400, `query parameter count: expected 1..10000, got ${count}`);
    return [200, { head: await devnet.mine(count) }];
  }
  if (parts.length === 3 && parts[0] === 'nodes' && NODE_ACTIONS.has(parts[2]!)) {
    requirePost(req);
    const nodes = devnet.nodes();
    const index = /^\d{1,4}$/.test(parts[1]!) ? Number(parts[1]) : -1;
    if (index < 0 || index >= nodes.length)
      throw new DevnetHttpError(404, `no node ${JSON.stringify(parts[1])}; nodes are 0..${nodes.length - 1}`);
    const action = parts[2] as NodeAction;
    if (action === 'lag') await devnet.lag(index, intParam(url, 'blocks', undefined));
    else await devnet[action](index);
    return [200, devnet.nodes()[index]];
  }
  throw new DevnetHttpError(404, `no route ${req.method} ${url.pathname}`);
}

export function startControlServer(devnet: Devnet, host: string, port: number, logger: Logger): Promise<ControlServer> {
  const log = logger.child({ component: 'devnet-control' });
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://control');
    // Bodies are not used; draining them keeps keep-alive connections reusable.
    req.resume();
    route(devnet, req, url).then(
      ([status, body]) => sendJson(res, status, body),
      (err: unknown) => {
        // The fleet throws TypeError/RangeError for bad arguments; anything else it refuses (a node
        // that is not running, no node to mine on) conflicts with its current state.
        const status =
          err instanceof DevnetHttpError
            ? err.status
            : err instanceof TypeError || err instanceof RangeError
              ? 400
              : 409;
        const message = err instanceof Error ? err.message : String(err);
        log.debug({ method: req.method, path: url.pathname, status, err: message }, 'control request refused');
        sendJson(res, status, { error: message });
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const addr = server.address() as AddressInfo;
      const shownHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      resolve({
        url: `http://${shownHost}:${addr.port}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
