/**
 * An HTTP proxy in front of one real node that makes it late: each request body is read, its
 * calls recorded (method per call, batches per element), and the request forwarded after the
 * delay `delayOf` gives it (0: at once), or held until `release()` when `hold` matches. A request
 * whose client goes away before its answer was written is counted in `aborted` (and never
 * forwarded when it goes away while waiting): what a cancelled call looks like from the node's side.
 * Used by the hedged-read tests and the bench (test/bench/hedge.ts). Closed with the test, or by close().
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Pool } from 'undici';

export interface DelayProxy {
  url: string;
  /** Calls seen, by method (a batch counts each of its calls). */
  seen(method: string): number;
  /** Requests whose client went away before their answer was written. */
  readonly aborted: number;
  /** Requests being held now (hold matched, not released yet). */
  readonly holding: number;
  /** ms to wait before forwarding a request whose first call has this method; default 0. */
  delayOf: (method: string) => number;
  /** Requests whose first call has a method this says true for are held until release(). */
  hold: (method: string) => boolean;
  /** Lets every held request go on. */
  release(): void;
  close(): Promise<void>;
}

export async function startDelayProxy(
  target: string,
  teardown?: (fn: () => Promise<void>) => void,
): Promise<DelayProxy> {
  const pool = new Pool(new URL(target).origin, { connections: 256, pipelining: 1 });
  const counts = new Map<string, number>();
  const sockets = new Set<Socket>();
  let held: (() => void)[] = [];
  let aborted = 0;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    let gone = false;
    // The client went away before the answer was written: a cancelled call.
    res.on('close', () => {
      if (!res.writableFinished) {
        gone = true;
        aborted++;
      }
    });
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const method = firstMethod(body, counts);
      const go = (): void => {
        if (gone) return;
        pool
          .request({ path: req.url ?? '/', method: 'POST', headers: { 'content-type': 'application/json' }, body })
          .then(async (up) => {
            const bytes = Buffer.from(await up.body.arrayBuffer());
            if (gone) return;
            res.writeHead(up.statusCode, { 'content-type': 'application/json', 'content-length': bytes.length });
            res.end(bytes);
          })
          .catch(() => req.socket.destroy());
      };
      if (proxy.hold(method)) held.push(go);
      else {
        const ms = proxy.delayOf(method);
        if (ms > 0) setTimeout(go, ms);
        else go();
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  let closed: Promise<void> | null = null;
  const proxy: DelayProxy = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen: (method) => counts.get(method) ?? 0,
    get aborted() {
      return aborted;
    },
    get holding() {
      return held.length;
    },
    delayOf: () => 0,
    hold: () => false,
    release: () => {
      const go = held;
      held = [];
      for (const g of go) g();
    },
    close: () =>
      (closed ??= (async () => {
        held = [];
        for (const s of sockets) s.destroy();
        await new Promise<void>((r) => server.close(() => r()));
        await pool.destroy().catch(() => undefined);
      })()),
  };
  teardown?.(() => proxy.close());
  return proxy;
}

/** Counts the body's calls by method; the first call's method (`(unparseable)` when it is not JSON). */
function firstMethod(body: Buffer, counts: Map<string, number>): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return '(unparseable)';
  }
  let first: string | undefined;
  for (const el of Array.isArray(parsed) ? parsed : [parsed]) {
    const m = (el as { method?: unknown } | null)?.method;
    const method = typeof m === 'string' ? m : '(none)';
    first ??= method;
    counts.set(method, (counts.get(method) ?? 0) + 1);
  }
  return first ?? '(none)';
}
