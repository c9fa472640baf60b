/**
 * Slow clients (SPEC 6; docs/limits.md): a client trickling its headers is cut off by
 * `server.headersTimeoutMs`, one trickling its body by headers + `server.bodyTimeoutMs` (408 and the
 * connection closed); idle connections that never send a byte are closed by the same headers
 * timeout; and while 1,000 of them are open, and slow clients trickle, other clients are served.
 */
import { connect, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const HEADERS_MS = 2_000;
const BODY_MS = 2_000;
/** Node checks the two timeouts once a second (server.connectionsCheckingInterval), so allow that and some. */
const CHECK_SLACK_MS = 2_500;
const TRICKLE_MS = 500;

const anvil = await startAnvil();
t.teardown(() => anvil.stop());

interface Tracked {
  socket: Socket;
  received: () => string;
  /** ms from connect to close; undefined while open. */
  closedAfter: () => number | undefined;
  closed: Promise<number>;
}

const open = new Set<Socket>();
t.teardown(() => {
  for (const s of open) s.destroy();
});

function dial(port: number): Promise<Tracked> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1');
    open.add(socket);
    let data = '';
    let closedAt: number | undefined;
    socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
    socket.on('error', () => undefined);
    const closed = new Promise<number>((r) =>
      socket.once('close', () => {
        open.delete(socket);
        closedAt = performance.now() - started;
        r(closedAt);
      }),
    );
    socket.once('connect', () => resolve({ socket, received: () => data, closedAfter: () => closedAt, closed }));
    socket.once('error', reject);
  });
}

/** Writes `text` one byte every TRICKLE_MS until it is all sent or the socket closes. */
function trickle(s: Socket, text: string): { stop: () => void } {
  let i = 0;
  const timer = setInterval(() => {
    if (s.destroyed || !s.writable || i >= text.length) return clearInterval(timer);
    s.write(text[i++]!);
  }, TRICKLE_MS);
  return { stop: () => clearInterval(timer) };
}

const HEAD = 'POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n';
const CALL = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';

async function servedQuickly(t: Test, sy: RunningSwitchyard, what: string): Promise<void> {
  const started = performance.now();
  const r = await post(sy.url, CALL);
  const ms = performance.now() - started;
  t.equal(r.text, '{"jsonrpc":"2.0","id":1,"result":"0xba"}', `${what}: another client is answered`);
  t.ok(ms < 1_000, `${what}: quickly (${Math.round(ms)} ms)`);
  const bal = await post(sy.url, {
    jsonrpc: '2.0',
    id: 2,
    method: 'eth_getBalance',
    params: ['0x0000000000000000000000000000000000000001', 'latest'],
  });
  t.match(bal.json().result, /^0x/, `${what}: and a call that goes to the node too`);
}

const port = (sy: RunningSwitchyard): number => Number(new URL(sy.url).port);
const cutOff = (text: string): boolean => text === '' || text.startsWith('HTTP/1.1 408');

/** A 408 still carries a JSON-RPC error body (SPEC 3.2): -32600 REQUEST_TIMEOUT, id null. */
function timeoutBodies(t: Test, answers: string[]): void {
  const timeouts = answers.filter((a) => a.startsWith('HTTP/1.1 408'));
  t.ok(
    timeouts.every((a) => {
      const [head, body] = a.split('\r\n\r\n', 2) as [string, string];
      const rpc = JSON.parse(body);
      return (
        /content-type: application\/json/i.test(head) &&
        rpc.id === null &&
        rpc.error.code === -32600 &&
        rpc.error.data.reason === 'REQUEST_TIMEOUT'
      );
    }),
    `each 408 carries a -32600 body with id null (${timeouts.length} answers)`,
  );
}

t.test('trickled headers are cut off by server.headersTimeoutMs', async (t) => {
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: anvil.url }],
    server: { headersTimeoutMs: HEADERS_MS, bodyTimeoutMs: BODY_MS },
  });
  const clients = await Promise.all(Array.from({ length: 20 }, () => dial(port(sy))));
  const trickles = clients.map((c) => trickle(c.socket, `${HEAD}X-Slow: ${'a'.repeat(1000)}\r\n\r\n`));
  t.teardown(() => trickles.forEach((x) => x.stop()));
  await servedQuickly(t, sy, 'while 20 clients trickle headers');
  const times = await Promise.all(clients.map((c) => c.closed));
  const worst = Math.max(...times);
  const best = Math.min(...times);
  t.ok(best >= HEADERS_MS - 100, `not cut before the headers timeout (first after ${Math.round(best)} ms)`);
  t.ok(
    worst <= HEADERS_MS + CHECK_SLACK_MS,
    `all 20 cut off within ${HEADERS_MS} + ${CHECK_SLACK_MS} ms (last after ${Math.round(worst)} ms)`,
  );
  const answers = clients.map((c) => c.received());
  t.ok(
    answers.every(cutOff),
    `each got 408 or a closed connection (${[...new Set(answers.map((a) => a.split('\r\n')[0] || '(nothing)'))].join(', ')})`,
  );
  t.ok(
    answers.some((a) => a.startsWith('HTTP/1.1 408')),
    '408 Request Timeout where the socket could still take it',
  );
  timeoutBodies(t, answers);
});

t.test('headers in time, then a trickled body: cut off by headers + bodyTimeoutMs', async (t) => {
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: anvil.url }],
    server: { headersTimeoutMs: HEADERS_MS, bodyTimeoutMs: BODY_MS },
  });
  const clients = await Promise.all(Array.from({ length: 20 }, () => dial(port(sy))));
  const body = `[${Array.from({ length: 20 }, () => CALL).join(',')}]`;
  for (const c of clients) c.socket.write(`${HEAD}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`);
  const trickles = clients.map((c) => trickle(c.socket, body));
  t.teardown(() => trickles.forEach((x) => x.stop()));
  await servedQuickly(t, sy, 'while 20 clients trickle bodies');
  const times = await Promise.all(clients.map((c) => c.closed));
  const worst = Math.max(...times);
  const best = Math.min(...times);
  t.ok(
    best >= HEADERS_MS + BODY_MS - 100,
    `the body may take headers + body timeouts (first cut after ${Math.round(best)} ms)`,
  );
  t.ok(
    worst <= HEADERS_MS + BODY_MS + CHECK_SLACK_MS,
    `all 20 cut off within ${HEADERS_MS + BODY_MS} + ${CHECK_SLACK_MS} ms (last after ${Math.round(worst)} ms)`,
  );
  const answers = clients.map((c) => c.received());
  t.ok(
    answers.every(cutOff),
    `each got 408 or a closed connection (${[...new Set(answers.map((a) => a.split('\r\n')[0] || '(nothing)'))].join(', ')})`,
  );
  t.notOk(
    answers.some((a) => a.includes('"result"')),
    'none got its batch processed',
  );
  timeoutBodies(t, answers);
});

t.test('1,000 idle connections: others are served; the idle ones are closed by the headers timeout', async (t) => {
  // One IP holds them all here: the per-IP connection cap (256 by default) is raised out of the way.
  const IDLE_HEADERS_MS = 5_000;
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: anvil.url }],
    server: { headersTimeoutMs: IDLE_HEADERS_MS, maxConnectionsPerIp: 2_000 },
  });
  const started = performance.now();
  const idle: Tracked[] = [];
  // In rounds of 100: a listen backlog is finite, and this is about holding connections, not a SYN flood.
  for (let i = 0; i < 10; i++) idle.push(...(await Promise.all(Array.from({ length: 100 }, () => dial(port(sy))))));
  const openedMs = performance.now() - started;
  t.equal(idle.length, 1_000, `1,000 idle connections open (in ${Math.round(openedMs)} ms)`);
  await servedQuickly(t, sy, 'while 1,000 connections sit idle');
  const stillOpen = idle.filter((c) => c.closedAfter() === undefined).length;
  if (openedMs + 1_000 < IDLE_HEADERS_MS)
    t.equal(stillOpen, 1_000, 'all 1,000 were still open when that call was answered');
  else t.comment(`opening took ${Math.round(openedMs)} ms: ${stillOpen} still open at the call`);
  await waitFor('idle connections closed', () => idle.every((c) => c.closedAfter() !== undefined), {
    timeoutMs: IDLE_HEADERS_MS + CHECK_SLACK_MS + 5_000,
  });
  const worst = Math.max(...idle.map((c) => c.closedAfter()!));
  t.ok(
    worst <= openedMs + IDLE_HEADERS_MS + CHECK_SLACK_MS,
    `every idle connection closed by the headers timeout (last after ${Math.round(worst)} ms)`,
  );
  await servedQuickly(t, sy, 'afterwards');
});
