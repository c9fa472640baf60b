/**
 * An answer made before the request's body was read reaches the client (issue 48, SPEC 6): a raw
 * socket writing an over-large body 64 KiB at a time, as fast as the kernel takes it, reads the
 * 413 and its JSON-RPC error every time, on the plain lane's path and on node:http's (a declared
 * length, and a chunked body counted as it arrives); a 401, a 415 and node:http's 400 ahead of such a
 * body too. A
 * client that never stops sending is cut off at server.lingerMs or server.lingerBytes, and its
 * connection's descriptor is given back. Another client is measured all along (failures, p99).
 */
import { readdirSync } from 'node:fs';
import { connect } from 'node:net';
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const MAX_BODY = 64 * 1024;
/** What each client sends: 128 times maxBodyBytes, more than the kernels on both sides hold, inside the default lingerBytes (16 MiB). */
const SENT = 8 * 1024 * 1024;
const PIECE = Buffer.alloc(64 * 1024, 0x61);
const ROUNDS = 50;

const anvil = await startAnvil();
t.teardown(() => anvil.stop());
const sy = await startSwitchyard(t, {
  upstreams: [{ name: 'anvil', url: anvil.url }],
  server: { maxBodyBytes: MAX_BODY },
  rateLimit: { apiKeys: [{ name: 'k', key: 'known-key-0123456789', ratePerSec: 1000, burst: 1000 }] },
});

const fds = (): number => readdirSync('/proc/self/fd').length;

const openConnections = async (s: RunningSwitchyard): Promise<number> =>
  ((await get(`${s.adminUrl}/status`)).json() as { limits: { connections: { open: number } } }).limits.connections.open;

interface Outcome {
  /** What the server sent, as text. */
  received: string;
  /** The error the client's socket met (EPIPE, ECONNRESET), if any. */
  error: string | null;
  /** Body bytes the client got written before it stopped. */
  written: number;
  /** From the first body byte to the close. */
  ms: number;
}

/**
 * A client that writes `head` and then `total` body bytes (chunked when asked) as fast as the
 * socket takes them and reads only once it wrote them all (as a script does: send all, then read;
 * meanwhile its answer waits in the kernel), then closes its side. `total` Infinity: it never
 * stops on its own, and reads as it goes.
 */
function sendLarge(s: RunningSwitchyard, head: string, total: number, chunked = false): Promise<Outcome> {
  const { port } = new URL(s.url);
  return new Promise((resolve) => {
    // allowHalfOpen: the server's FIN after its answer does not stop this client; it writes on.
    const socket = connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true });
    let received = '';
    let error: string | null = null;
    let written = 0;
    let started = 0;
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
    socket.once('close', () => resolve({ received, error, written, ms: performance.now() - started }));
    if (total !== Number.POSITIVE_INFINITY) socket.pause();
    socket.once('connect', async () => {
      socket.write(head);
      started = performance.now();
      while (written < total && !socket.destroyed) {
        const piece = chunked ? Buffer.concat([Buffer.from('10000\r\n'), PIECE, Buffer.from('\r\n')]) : PIECE;
        written += PIECE.length;
        if (!socket.write(piece))
          await new Promise<void>((r) => {
            const go = (): void => {
              socket.off('drain', go);
              socket.off('close', go);
              r();
            };
            socket.on('drain', go);
            socket.on('close', go);
          });
      }
      if (!socket.destroyed) socket.end(chunked ? '0\r\n\r\n' : '');
      socket.resume();
    });
  });
}

const lengthHead = (extra = '', path = '/', type = 'application/json'): string =>
  `POST ${path} HTTP/1.1\r\nHost: a\r\nContent-Type: ${type}\r\n${extra}Content-Length: ${SENT}\r\n\r\n`;
const CHUNKED_HEAD =
  'POST / HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';

/** Another client: one call at a time until stopped; failures and the 99th percentile. */
function otherClient(url: string): { stop: () => Promise<{ calls: number; failures: number; p99: number }> } {
  let running = true;
  let failures = 0;
  const ms: number[] = [];
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const r = await post(url, { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] });
        if (r.status !== 200 || !r.text.includes('"result"')) failures++;
      } catch {
        failures++;
      }
      ms.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      ms.sort((a, b) => a - b);
      return { calls: ms.length, failures, p99: ms[Math.floor(ms.length * 0.99)] ?? 0 };
    },
  };
}

/** The answer's status and its JSON-RPC error, read from what the client received. */
function answerOf(received: string): { status: number; code?: number; message?: string } {
  const status = Number(received.slice(9, 12));
  const at = received.indexOf('\r\n\r\n');
  try {
    const body = JSON.parse(received.slice(at + 4)) as { error: { code: number; message: string } };
    return { status, code: body.error.code, message: body.error.message };
  } catch {
    return { status };
  }
}

const cases: [string, () => string, boolean, number, string][] = [
  [
    "the plain lane's path (a plain head, its Content-Length over the cap)",
    () => lengthHead(),
    false,
    413,
    'request body too large',
  ],
  [
    "node:http's path (a repeated header), a declared length",
    () => lengthHead('X-A: 1\r\nX-A: 2\r\n'),
    false,
    413,
    'request body too large',
  ],
  ["node:http's path, a chunked body counted as it arrives", () => CHUNKED_HEAD, true, 413, 'request body too large'],
  [
    'a 401 ahead of such a body (an unknown API key)',
    () => lengthHead('', '/key/unknown-key-0000'),
    false,
    401,
    'invalid API key',
  ],
  ['a 400 for a malformed header ahead of such a body', () => lengthHead('X A: 1\r\n'), false, 400, 'bad HTTP request'],
  [
    'a 415 ahead of such a body, on node:http',
    () => lengthHead('X-A: 1\r\nX-A: 2\r\n', '/', 'text/plain'),
    false,
    415,
    'unsupported content type: expected application/json',
  ],
];

for (const [name, head, chunked, status, message] of cases) {
  t.test(`${name}: ${ROUNDS} clients writing as fast as they can all read the answer`, async (t) => {
    const before = fds();
    const other = otherClient(sy.url);
    let answered = 0;
    const misses: string[] = [];
    const rounds = ROUNDS;
    for (let i = 0; i < rounds; i++) {
      const o = await sendLarge(sy, head(), SENT, chunked);
      const a = answerOf(o.received);
      if (a.status === status && a.message === message && a.code !== undefined) answered++;
      else misses.push(`${a.status} ${o.error ?? ''} after ${o.written} bytes`);
    }
    const o = await other.stop();
    t.equal(
      answered,
      rounds,
      `every client read its ${status}${misses.length > 0 ? `; not: ${misses.slice(0, 3).join(', ')}` : ''}`,
    );
    t.equal(o.failures, 0, `the other client: 0 failures of ${o.calls} calls, p99 ${Math.round(o.p99)} ms`);
    t.ok(o.p99 < 2_000, `the other client's p99: ${Math.round(o.p99)} ms`);
    await waitFor('every connection closed', async () => (await openConnections(sy)) === 0);
    t.ok(fds() <= before + 5, `descriptors ${before} -> ${fds()}`);
  });
}

t.test('a client that never stops sending is cut off at server.lingerMs', async (t) => {
  const LINGER_MS = 1_500;
  const s = await startSwitchyard(t, {
    upstreams: [{ name: 'anvil', url: anvil.url }],
    server: { maxBodyBytes: MAX_BODY, lingerMs: LINGER_MS, lingerBytes: 2 ** 40 },
  });
  const before = fds();
  for (const [path, head] of [
    ['lane', lengthHead()],
    ['node:http', lengthHead('X-A: 1\r\nX-A: 2\r\n')],
  ] as const) {
    const o = await sendLarge(s, head, Number.POSITIVE_INFINITY);
    t.equal(answerOf(o.received).status, 413, `${path}: the 413 came first (${o.error})`);
    t.ok(o.written > SENT, `${path}: it sent ${o.written} bytes past the answer`);
    // From the first body byte: the linger starts with the answer, a moment later.
    t.ok(o.ms >= LINGER_MS - 100 && o.ms < LINGER_MS + 5_000, `${path}: closed after ${Math.round(o.ms)} ms`);
  }
  await waitFor('every connection closed', async () => (await openConnections(s)) === 0);
  t.ok(fds() <= before + 5, `descriptors ${before} -> ${fds()}`);
});

t.test('a client that never stops sending is cut off at server.lingerBytes', async (t) => {
  const LINGER_BYTES = 4 * 1024 * 1024;
  const s = await startSwitchyard(t, {
    upstreams: [{ name: 'anvil', url: anvil.url }],
    server: { maxBodyBytes: MAX_BODY, lingerMs: 600_000, lingerBytes: LINGER_BYTES },
  });
  const before = fds();
  for (const [path, head] of [
    ['lane', lengthHead()],
    ['node:http', lengthHead('X-A: 1\r\nX-A: 2\r\n')],
  ] as const) {
    const o = await sendLarge(s, head, Number.POSITIVE_INFINITY);
    t.equal(answerOf(o.received).status, 413, `${path}: the 413 came first (${o.error})`);
    // Past the bound, plus what the kernels' buffers on both sides held when the server let go.
    t.ok(
      o.written > LINGER_BYTES && o.written < LINGER_BYTES + 32 * 1024 * 1024,
      `${path}: cut off after ${o.written} bytes`,
    );
  }
  await waitFor('every connection closed', async () => (await openConnections(s)) === 0);
  t.ok(fds() <= before + 5, `descriptors ${before} -> ${fds()}`);
});
