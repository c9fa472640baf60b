/**
 * At the connection caps, idle keep-alive connections are closed first, longest idle first (SPEC 6,
 * issue 42 item 3): connections that each had one answer and then sat idle, from several addresses
 * (127.0.0.x bound with localAddress), fill `server.maxConnections`; a client from a new address is
 * served, the longest idle connection is the one closed (on node:http's path and on the plain
 * lane alike), connections with a call in flight (a transaction anvil holds) or a request half
 * sent are not; the process's descriptors (/proc/<pid>/fd) stay bounded while a hundred newcomers
 * each take a place. At `server.maxConnectionsPerIp` the longest idle of that address goes, not an
 * older one of another. With nothing idle, a new connection is refused at once, as before.
 * Run on the built process.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { Agent, request } from 'undici';
import { startAnvil } from '../helpers/anvil.js';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { signTransfer } from '../helpers/transfer.js';
import { waitFor } from '../helpers/wait.js';

const anvil = await startAnvil();
t.teardown(() => anvil.stop());

const sockets = new Set<Socket>();
const agents = new Set<Agent>();
t.teardown(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all([...agents].map((a) => a.destroy()));
});

/** Descriptors the process may open besides the client connections (upstream pool, timers, logs). */
const FD_MARGIN = 30;
const CHAIN_ID_ANSWER = '{"jsonrpc":"2.0","id":1,"result":"0xba"}';

interface Running {
  pid: number;
  port: number;
  url: string;
  adminUrl: string;
}

async function start(t: Test, server: string): Promise<Running> {
  const file = join(t.testdir(), 'config.yaml');
  // Long keep-alive and header timeouts: the connections must stay idle (or half sent) for the test.
  writeFileSync(
    file,
    `
server: { host: 127.0.0.1, port: 0, wsPort: null, keepAliveTimeoutMs: 120000, headersTimeoutMs: 120000, ${server} }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [ { name: solo, url: "${anvil.url}" } ]
routing: { headPollMs: 100, sendRawTransactionSyncTimeoutMs: 120000 }
rateLimit: { perIp: null }
uptime: { store: null }
log: { level: info, requests: 'off' }
`,
  );
  const cli = runCli(t, ['--config', file]);
  const ports = await waitFor('listening line', () => listeningPorts(cli.stdout()));
  const adminUrl = `http://127.0.0.1:${ports.admin}`;
  await waitFor('ready', async () => (await request(`${adminUrl}/ready?upstreams=1`)).statusCode === 200);
  return { pid: cli.proc.pid!, port: ports.http, url: `http://127.0.0.1:${ports.http}`, adminUrl };
}

const fds = (pid: number): number => readdirSync(`/proc/${pid}/fd`).length;

async function connectionStats(sy: Running): Promise<{ open: number; refused: { total: number; ip: number } }> {
  const r = await request(`${sy.adminUrl}/status`);
  return (
    (await r.body.json()) as { limits: { connections: { open: number; refused: { total: number; ip: number } } } }
  ).limits.connections;
}

/** Calls being worked on (/status): a held call counts from when its request was read. */
async function inFlight(sy: Running): Promise<number> {
  const r = await request(`${sy.adminUrl}/status`);
  return ((await r.body.json()) as { limits: { concurrency: { inFlight: number } } }).limits.concurrency.inFlight;
}

async function metric(sy: Running, name: string, labels: Record<string, string>): Promise<number> {
  const r = await request(`${sy.adminUrl}/metrics`);
  return metricSamples(await r.body.text(), name, labels)[0] ?? Number.NaN;
}

/** A raw keep-alive client: each `ask` writes bytes and resolves with the next whole answer. */
class Client {
  private data = Buffer.alloc(0);
  private readonly waiting: ((answer: { status: number; body: string }) => void)[] = [];
  closed = false;
  answers = 0;

  constructor(
    readonly socket: Socket,
    readonly name: string,
  ) {
    socket.on('data', (d: Buffer) => {
      this.data = Buffer.concat([this.data, d]);
      this.read();
    });
    socket.on('error', () => undefined);
    socket.once('close', () => {
      this.closed = true;
      sockets.delete(socket);
    });
  }

  static dial(port: number, from: string, name: string): Promise<Client> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host: '127.0.0.1', localAddress: from });
      sockets.add(socket);
      socket.once('connect', () => resolve(new Client(socket, name)));
      socket.once('error', reject);
    });
  }

  private read(): void {
    for (;;) {
      const end = this.data.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = this.data.subarray(0, end).toString('latin1');
      const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (this.data.length < end + 4 + length) return;
      const body = this.data.subarray(end + 4, end + 4 + length).toString();
      this.data = this.data.subarray(end + 4 + length);
      this.answers++;
      this.waiting.shift()?.({ status: Number(head.split(' ')[1]), body });
    }
  }

  ask(bytes: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      this.waiting.push(resolve);
      this.socket.once('close', () => reject(new Error(`${this.name} closed before its answer`)));
      this.socket.write(bytes);
    });
  }
}

function post(body: string): string {
  return `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** A transfer anvil holds until its own timeout (30 s): a nonce gap (ANVIL-FACTS). */
const syncCall = (raw: string): string =>
  post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransactionSync', params: [raw] }));

const CHAIN_ID = post('{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}');
/** Not a plain POST: the plain lane hands the connection to node:http, which answers it. */
const GET_ROOT = 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

/** Opens a connection from `from` and makes it an idle keep-alive one: one call, answered. */
async function idleClient(t: Test, port: number, from: string, name: string, bytes = CHAIN_ID): Promise<Client> {
  const c = await Client.dial(port, from, name);
  const a = await c.ask(bytes);
  if (a.status !== 200) t.fail(`${name}: its first call answered ${a.status}`);
  return c;
}

/** One call from a new client at `from` on a connection it keeps open (its Agent is closed at teardown). */
async function newcomer(sy: Running, from: string): Promise<{ status: number; text: string }> {
  const agent = new Agent({ localAddress: from, keepAliveTimeout: 120_000 });
  agents.add(agent);
  const r = await request(sy.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
    dispatcher: agent,
  });
  return { status: r.statusCode, text: await r.body.text() };
}

t.test('at server.maxConnections the longest idle connection makes room for a new client', async (t) => {
  const TOTAL = 200;
  const sy = await start(t, `maxConnections: ${TOTAL}, maxConnectionsPerIp: 60`);
  const baseline = fds(sy.pid);
  const from = (i: number): string => `127.0.0.${20 + (i % 4)}`;
  // Each connection answered in turn: the order they became idle is the order they were opened.
  const clients: Client[] = [];
  for (let i = 0; i < TOTAL; i++) {
    // #6 takes node:http's path (GET), #7 and the rest the plain lane's.
    clients.push(await idleClient(t, sy.port, from(i), `#${i}`, i === 6 ? GET_ROOT : CHAIN_ID));
  }
  t.equal((await connectionStats(sy)).open, TOTAL, `${TOTAL} idle connections fill the cap`);
  const peak = fds(sy.pid);
  t.ok(peak >= baseline + TOTAL - FD_MARGIN, `the process holds them (${baseline} -> ${peak} descriptors)`);

  // Of the six longest idle, #5 gets half a request and #0-#4 a call anvil holds (a nonce gap):
  // busy, not idle. The half request is written first, so once the held calls are in flight its
  // bytes were read too.
  const [halfHead, halfRest] = [CHAIN_ID.slice(0, CHAIN_ID.length - 30), CHAIN_ID.slice(CHAIN_ID.length - 30)];
  clients[5]!.socket.write(halfHead);
  const held = await Promise.all([0, 1, 2, 3, 4].map((n) => signTransfer(1_000 + n)));
  const heldAnswers = held.map((raw, i) => clients[i]!.ask(syncCall(raw)).catch((err: Error) => err));
  await waitFor('the held calls in flight', async () => (await inFlight(sy)) === 5);

  const first = await newcomer(sy, '127.0.0.30');
  t.equal(first.status, 200, 'a client from a new address is served');
  t.equal(first.text, CHAIN_ID_ANSWER, 'with the right answer');
  await waitFor('a connection closed', () => clients.some((c) => c.closed), { timeoutMs: 10_000 });
  t.same(
    clients.filter((c) => c.closed).map((c) => c.name),
    ['#6'],
    'the longest idle one was closed (on node:http path), not the busy ones idle before it',
  );
  const second = await newcomer(sy, '127.0.0.31');
  t.equal(second.text, CHAIN_ID_ANSWER, 'a second new client is served');
  await waitFor('a second connection closed', () => clients[7]!.closed, { timeoutMs: 10_000 });
  t.same(
    clients.filter((c) => c.closed).map((c) => c.name),
    ['#6', '#7'],
    'the next longest idle was closed (on the plain lane)',
  );

  // A hundred more newcomers, each keeping its connection: each takes the place of the longest idle.
  const MORE = 100;
  let served = 0;
  let maxFds = 0;
  for (let i = 0; i < MORE; i++) {
    const r = await newcomer(sy, `127.0.${1 + Math.floor(i / 200)}.${40 + (i % 200)}`);
    if (r.status === 200 && r.text === CHAIN_ID_ANSWER) served++;
    maxFds = Math.max(maxFds, fds(sy.pid));
  }
  t.equal(served, MORE, `all ${MORE} more newcomers served`);
  const expectClosed = Array.from({ length: MORE + 2 }, (_, i) => `#${6 + i}`);
  await waitFor('their places given up', () => expectClosed.every((n) => clients[Number(n.slice(1))]!.closed), {
    timeoutMs: 10_000,
  });
  t.same(
    clients.filter((c) => c.closed).map((c) => c.name),
    expectClosed,
    `exactly the ${MORE + 2} longest idle were closed, in order of idleness`,
  );
  t.ok(
    clients.slice(0, 6).every((c) => !c.closed),
    'the connections with a call in flight or half a request stay open',
  );
  t.ok(maxFds <= baseline + TOTAL + FD_MARGIN, `descriptors stay bounded: at most ${maxFds} (baseline ${baseline})`);
  const stats = await connectionStats(sy);
  t.equal(stats.open, TOTAL, '/status: still at the cap');
  t.equal(stats.refused.total, 0, 'no connection refused');
  t.equal(
    await metric(sy, 'switchyard_connections_evicted_total', { reason: 'total' }),
    MORE + 2,
    'switchyard_connections_evicted_total{reason="total"} counts each',
  );
  // The half-sent request is still read and answered when its bytes come.
  const rest = clients[5]!.ask(halfRest);
  t.equal((await rest).body, CHAIN_ID_ANSWER, 'the half-sent request is answered once whole');
  for (const c of clients.slice(0, 5)) c.socket.destroy();
  await Promise.all(heldAnswers);
});

t.test('at server.maxConnectionsPerIp the longest idle connection of that address makes room', async (t) => {
  const PER_IP = 20;
  const sy = await start(t, `maxConnections: 200, maxConnectionsPerIp: ${PER_IP}`);
  // Idle longer than any of .50's: still not closed for .50's newcomer.
  const others: Client[] = [];
  for (let i = 0; i < 5; i++) others.push(await idleClient(t, sy.port, '127.0.0.51', `other #${i}`));
  const mine: Client[] = [];
  for (let i = 0; i < PER_IP; i++) mine.push(await idleClient(t, sy.port, '127.0.0.50', `#${i}`));
  const r = await newcomer(sy, '127.0.0.50');
  t.equal(r.text, CHAIN_ID_ANSWER, 'one more client from the capped address is served');
  await waitFor('a connection closed', () => mine[0]!.closed, { timeoutMs: 10_000 });
  t.same(
    [...others, ...mine].filter((c) => c.closed).map((c) => c.name),
    ['#0'],
    "that address's longest idle one was closed, not another address's idle longer",
  );
  t.equal(await metric(sy, 'switchyard_connections_evicted_total', { reason: 'ip' }), 1, 'counted as ip');
  t.equal((await connectionStats(sy)).refused.ip, 0, 'nothing refused');
});

t.test('with no connection idle, a new one past the cap is refused at once, as before', async (t) => {
  const TOTAL = 30;
  const sy = await start(t, `maxConnections: ${TOTAL}, maxConnectionsPerIp: 20`);
  // Ten that never sent a byte, ten with half a request after an answer, ten with a held call.
  const silent = await Promise.all(Array.from({ length: 10 }, (_, i) => Client.dial(sy.port, '127.0.0.60', `s${i}`)));
  const half: Client[] = [];
  for (let i = 0; i < 10; i++) {
    const c = await idleClient(t, sy.port, '127.0.0.61', `h${i}`);
    c.socket.write('POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    half.push(c);
  }
  const busy: Client[] = [];
  const heldAnswers: Promise<unknown>[] = [];
  for (let i = 0; i < 10; i++) {
    const c = await idleClient(t, sy.port, '127.0.0.62', `b${i}`);
    heldAnswers.push(c.ask(syncCall(await signTransfer(2_000 + i))).catch((err: Error) => err));
    busy.push(c);
  }
  // The half requests were written first: once the held calls are in flight, their bytes were read too.
  await waitFor('the held calls in flight', async () => (await inFlight(sy)) === 10);
  t.equal((await connectionStats(sy)).open, TOTAL, `${TOTAL} connections counted`);
  const extra = await Promise.all(
    ['127.0.0.63', '127.0.0.64', '127.0.0.65'].map((ip, i) => Client.dial(sy.port, ip, `x${i}`)),
  );
  const started = performance.now();
  await waitFor('the 3 past the cap closed', () => extra.every((c) => c.closed), { timeoutMs: 5_000 });
  t.ok(performance.now() - started < 2_000, 'at once');
  t.ok(
    extra.every((c) => c.answers === 0),
    'unanswered',
  );
  t.ok(
    [...silent, ...half, ...busy].every((c) => !c.closed),
    'none of the busy or silent connections was closed',
  );
  t.equal((await connectionStats(sy)).refused.total, 3, '/status counts 3 refused for the total');
  t.equal(await metric(sy, 'switchyard_connections_evicted_total', { reason: 'total' }), 0, 'none evicted');
  for (const c of busy) c.socket.destroy();
  await Promise.all(heldAnswers);
});
