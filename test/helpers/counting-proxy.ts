/**
 * A transparent HTTP proxy in front of one real node that records every JSON-RPC call reaching it
 * (method and params, read from the request body; batches counted per element). Bytes go through
 * unchanged both ways, so "calls reaching the node" are counted at the node side, independently of
 * Switchyard's own metrics. Closed with the test.
 * It can also hold matching calls (a node slow to answer), before or after the node has answered.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Test } from 'tap';
import { Pool } from 'undici';

export interface ProxiedCall {
  method: string;
  params: unknown[];
  /** Position in arrival order, for "since this mark" counts. */
  seq: number;
}

export type ParamsMatch = readonly unknown[] | ((params: unknown[]) => boolean);

export interface HoldOptions {
  /** Hold the node's answer (the node has answered, the client has not got it) instead of the call. */
  afterNode?: boolean;
  /** Hold only the first matching call; later ones go through. */
  once?: boolean;
}

export interface Hold {
  /** Matching calls held so far (for `afterNode`, counted once the node has answered). */
  readonly held: number;
  /** Lets every held call (and any later one) go on. */
  release(): void;
}

export interface CountingProxy {
  /** Where Switchyard should send its calls. */
  url: string;
  /** The node behind it. */
  target: string;
  calls: ProxiedCall[];
  /** A mark for `count(..., since)`: calls recorded from now on. */
  mark(): number;
  /** Calls of `method` (whose params match, when given: an array compares as JSON text). */
  count(method: string, params?: ParamsMatch, since?: number): number;
  /** Holds matching calls until released: a node that is slow to answer. */
  hold(method: string, params?: ParamsMatch, opts?: HoldOptions): Hold;
  close(): Promise<void>;
}

interface Gate {
  method: string;
  params: ParamsMatch | undefined;
  opts: HoldOptions;
  held: number;
  released: Promise<void>;
  release: () => void;
}

function matches(call: ProxiedCall, method: string, params: ParamsMatch | undefined): boolean {
  if (call.method !== method) return false;
  if (params === undefined) return true;
  if (typeof params === 'function') return params(call.params);
  return JSON.stringify(call.params) === JSON.stringify(params);
}

/** Records the calls of one request body; returns them. */
function record(calls: ProxiedCall[], body: Buffer): ProxiedCall[] {
  const start = calls.length;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    calls.push({ method: '(unparseable)', params: [], seq: calls.length });
    return calls.slice(start);
  }
  for (const el of Array.isArray(parsed) ? parsed : [parsed]) {
    const o = (el ?? {}) as { method?: unknown; params?: unknown };
    calls.push({
      method: typeof o.method === 'string' ? o.method : '(none)',
      params: Array.isArray(o.params) ? o.params : [],
      seq: calls.length,
    });
  }
  return calls.slice(start);
}

export async function startCountingProxy(t: Test, target: string): Promise<CountingProxy> {
  const origin = new URL(target).origin;
  const pool = new Pool(origin, { connections: 256, pipelining: 1 });
  const calls: ProxiedCall[] = [];
  const sockets = new Set<Socket>();
  const gates = new Set<Gate>();

  /** The gates these calls must wait at (counting them as held there). */
  const gatesFor = (these: ProxiedCall[], afterNode: boolean): Promise<void>[] => {
    const out: Promise<void>[] = [];
    for (const g of gates) {
      if (Boolean(g.opts.afterNode) !== afterNode || !these.some((c) => matches(c, g.method, g.params))) continue;
      if (g.opts.once && g.held > 0) continue;
      g.held++;
      out.push(g.released);
    }
    return out;
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const these = record(calls, body);
      Promise.all(gatesFor(these, false))
        .then(() =>
          pool.request({
            path: req.url ?? '/',
            method: (req.method ?? 'POST') as 'POST',
            headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
            body,
          }),
        )
        .then(async (up) => {
          const bytes = Buffer.from(await up.body.arrayBuffer());
          await Promise.all(gatesFor(these, true));
          const type = up.headers['content-type'];
          res.writeHead(up.statusCode, {
            'content-type': typeof type === 'string' ? type : 'application/json',
            'content-length': bytes.length,
          });
          res.end(bytes);
        })
        .catch(() => {
          // The node is gone: the client sees what a dead node gives, a dropped connection.
          req.socket.destroy();
        });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  let closed: Promise<void> | null = null;
  const proxy: CountingProxy = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    target,
    calls,
    mark: () => calls.length,
    count: (method, params, since = 0) => calls.slice(since).filter((c) => matches(c, method, params)).length,
    hold: (method, params, opts = {}) => {
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      const g: Gate = { method, params, opts, held: 0, released, release };
      gates.add(g);
      return {
        get held() {
          return g.held;
        },
        release: () => {
          gates.delete(g);
          release();
        },
      };
    },
    close: () =>
      (closed ??= (async () => {
        for (const g of gates) g.release();
        gates.clear();
        for (const s of sockets) s.destroy();
        await new Promise<void>((r) => server.close(() => r()));
        await pool.destroy().catch(() => undefined);
      })()),
  };
  t.teardown(() => proxy.close());
  return proxy;
}
