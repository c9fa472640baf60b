/**
 * The plain lane (src/server/http-lane.ts): which requests it reads itself and which it leaves to
 * node:http, and, over real sockets in front of a real anvil, that every request gets its one
 * answer in its place: pipelined answers in the order asked (a call to the node before a local
 * one), a connection handed to node:http in the middle, and a client that pipelines without
 * reading held to its bounds while another is served.
 */
import { connect, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { readPlain } from '../../src/server/http-head.js';
import { startAnvil } from '../helpers/anvil.js';
import { startHoldingNode } from '../helpers/fake-node.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}';
const plain = (extra = '', body = BODY): string =>
  `POST / HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

t.test('what the lane reads itself, and what it leaves to node:http', async (t) => {
  const bytes = Buffer.from(`${plain('X-Request-Id: abc\r\nconnection: Keep-Alive\r\n')}POST`);
  const r = readPlain(bytes, 1000);
  t.ok(r, 'a plain POST');
  t.equal(r?.url, '/');
  t.same(r?.headers, {
    host: 'a',
    'content-type': 'application/json',
    'x-request-id': 'abc',
    connection: 'Keep-Alive',
    'content-length': String(BODY.length),
  });
  t.equal(bytes.subarray(r!.bodyStart, r!.bodyEnd).toString(), BODY, 'the body, and not what follows');
  t.ok(readPlain(Buffer.from(plain().replace('POST /', 'POST /key/0123456789abcdef')), 1000), 'an API key path');
  const left: [string, string][] = [
    ['GET', 'GET / HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['HTTP/1.0', plain().replace('HTTP/1.1', 'HTTP/1.0')],
    ['absolute form', plain().replace('POST /', 'POST http://a/')],
    ['chunked', plain('Transfer-Encoding: chunked\r\n')],
    ['Expect', plain('Expect: 100-continue\r\n')],
    ['Upgrade', plain('Upgrade: websocket\r\n')],
    ['Connection: close', plain('Connection: close\r\n')],
    ['a repeated header', plain('X-A: 1\r\nx-a: 2\r\n')],
    ['two lengths', plain(`Content-Length: ${BODY.length}\r\n`)],
    ['a signed length', plain().replace(/Content-Length: (\d+)/, 'Content-Length: +$1')],
    ['no length', plain().replace(/Content-Length: \d+\r\n/, '')],
    ['no Host', plain().replace('Host: a\r\n', '')],
    ['a folded header', plain('X-A: 1\r\n  2\r\n')],
    ['a control character', plain('X-A: 1\x012\r\n')],
    ['a byte past ASCII', plain('X-A: caf\xe9\r\n')],
    ['a space in a name', plain('X A: 1\r\n')],
    ['__proto__', plain('__proto__: 1\r\n')],
    ['the head not all read', plain().slice(0, 30)],
    ['the body not all read', plain().slice(0, -3)],
    ['a head over 16 KiB', plain(`X-A: ${'a'.repeat(17_000)}\r\n`)],
  ];
  for (const [why, text] of left) t.equal(readPlain(Buffer.from(text, 'latin1'), 1000), null, `node:http's: ${why}`);
  const over = readPlain(Buffer.from(plain('', 'x'.repeat(1001))), 1000);
  t.ok(over?.tooLarge, 'a body over maxBodyBytes: the head is read, the body not (the answer is a 413)');
});

const anvil = await startAnvil();
t.teardown(() => anvil.stop());
const sy = await startSwitchyard(t, { upstreams: [{ name: 'anvil', url: anvil.url }] });

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A raw connection and the HTTP answers read off it, in order. */
function dial(t: Test, url = sy.url): Promise<{ socket: Socket; answers: Answer[] }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const answers: Answer[] = [];
    let buf = Buffer.alloc(0);
    const socket = connect(Number(port), hostname, () => resolve({ socket, answers }));
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const [status, ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
        const headers: Record<string, string> = {};
        for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
        const length = Number(headers['content-length']);
        if (buf.length < end + 4 + length) return;
        answers.push({
          status: Number(status!.split(' ')[1]),
          headers,
          body: buf.subarray(end + 4, end + 4 + length).toString(),
        });
        buf = buf.subarray(end + 4 + length);
      }
    });
    socket.on('error', reject);
    t.teardown(() => socket.destroy());
  });
}

const call = (id: number, method: string, params: unknown[] = []): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method, params });
const idOf = (a: Answer): unknown => (JSON.parse(a.body) as { id: unknown }).id;

t.test('pipelined answers go out in the order asked, a call to the node before a local one', async (t) => {
  const c = await dial(t);
  const balance = call(1, 'eth_getBalance', ['0x0000000000000000000000000000000000000001', 'latest']);
  c.socket.write(
    plain('X-Request-Id: first\r\n', balance) + plain('', call(2, 'eth_chainId')) + plain('', call(3, 'eth_chainId')),
  );
  await waitFor('three answers', () => c.answers.length === 3);
  t.same(c.answers.map(idOf), [1, 2, 3], 'each in its place');
  t.same(
    c.answers.map((a) => a.status),
    [200, 200, 200],
  );
  t.equal(JSON.parse(c.answers[1]!.body).result, '0xba');
  const first = c.answers[0]!.headers;
  t.equal(first['x-request-id'], 'first', "the client's request id");
  t.equal(first['content-type'], 'application/json');
  t.equal(first.connection, 'keep-alive');
  t.match(first['keep-alive'], /^timeout=\d+$/);
  t.ok(Date.parse(first.date!) > 0, 'a Date');
  t.equal(first['x-switchyard-cache'], 'miss', 'the diagnostic headers');
  t.notOk(c.socket.destroyed, 'the connection stays open');
});

t.test('a request that is not plain: node:http answers it and the rest, still in order', async (t) => {
  const c = await dial(t);
  const chunked = call(2, 'eth_chainId');
  c.socket.write(
    plain('', call(1, 'eth_getBalance', ['0x0000000000000000000000000000000000000002', 'latest'])) +
      `POST / HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunked.length.toString(16)}\r\n${chunked}\r\n0\r\n\r\n` +
      plain('', call(3, 'eth_blockNumber')),
  );
  await waitFor('three answers', () => c.answers.length === 3);
  t.same(c.answers.map(idOf), [1, 2, 3]);
  c.socket.write(plain('', call(4, 'eth_chainId')));
  await waitFor('the fourth', () => c.answers.length === 4);
  t.equal(idOf(c.answers[3]!), 4, 'the connection goes on, node:http reading it');
});

t.test(
  'a client pipelining without reading is not read past its bounds (the lane, then node:http); another is served meanwhile',
  async (t) => {
    const N = 200_000;
    const c = await dial(t);
    c.socket.pause();
    // About 24 MB of requests and 30 MB of answers: more than the kernel's buffers on both sides hold.
    const requests = Array.from({ length: N }, (_, i) => plain('', call(i + 1, 'eth_chainId'))).join('');
    c.socket.write(requests);
    // Read on past every bound, the server would work on all of them while the client reads nothing.
    const answered = async (): Promise<number> =>
      metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_http_requests_total', {}).reduce(
        (a, b) => a + b,
        0,
      );
    let last = -1;
    const held = await waitFor(
      'the server stops reading it',
      async () => {
        const now = await answered();
        const still = now === last ? now : undefined;
        last = now;
        return still;
      },
      { intervalMs: 250, timeoutMs: 30_000 },
    );
    t.ok(held < N / 2, `it stopped after ${held} of ${N} requests`);
    const other = await post(sy.url, { jsonrpc: '2.0', id: 7, method: 'eth_blockNumber', params: [] });
    t.equal(other.status, 200, 'another client is answered meanwhile');
    c.socket.resume();
    await waitFor('every answer', () => c.answers.length === N, { timeoutMs: 120_000 });
    let inOrder = true;
    for (let i = 0; i < N && inOrder; i++) inOrder = idOf(c.answers[i]!) === i + 1;
    t.ok(inOrder, `all ${N} answers, each in its place`);
  },
);

t.test('answers made at once to a client that reads none: reading stops, and goes on once it reads', async (t) => {
  const c = await dial(t);
  c.socket.pause();
  const counted = async (): Promise<number> =>
    metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_http_requests_total', {}).reduce(
      (a, b) => a + b,
      0,
    );
  const base = await counted();
  // Writes of 100 whole requests (about 12 KB: one read each), each answered at once (local
  // eth_chainId), until the answers fill the socket and the server stops reading.
  let sent = 0;
  let taken = 0;
  while (taken === sent && sent < 500_000) {
    c.socket.write(Array.from({ length: 100 }, (_, i) => plain('', call(sent + i + 1, 'eth_chainId'))).join(''));
    sent += 100;
    let last = -1;
    taken =
      (await waitFor(
        'the server took them, or stopped',
        async () => {
          const now = (await counted()) - base;
          const stopped = now === last;
          last = now;
          return now === sent || stopped ? now + 1 : undefined;
        },
        { intervalMs: 100 },
      )) - 1;
  }
  t.ok(taken < sent, `the server stopped reading after ${taken} of ${sent}`);
  c.socket.resume();
  await waitFor('every answer', () => c.answers.length === sent, { timeoutMs: 60_000 });
  let inOrder = true;
  for (let i = 0; i < sent && inOrder; i++) inOrder = idOf(c.answers[i]!) === i + 1;
  t.ok(inOrder, `all ${sent} answered once it read, each in its place`);
});

t.test('pipelined calls worked on at once per connection: 32, the rest read only as answers go out', async (t) => {
  // A node that holds every eth_getBalance: the calls stay in flight until released.
  const { node, held, release } = await startHoldingNode(t);
  const holding = await startSwitchyard(t, {
    upstreams: [{ name: 'held', url: node.url }],
    rateLimit: { perIp: null },
  });
  const c = await dial(t, holding.url);
  const balance = (i: number): string =>
    plain('', call(i, 'eth_getBalance', [`0x${i.toString(16).padStart(40, '0')}`, 'latest']));
  // 100 requests in one write (about 17 KB): read at once, but only 32 of them are worked on.
  c.socket.write(Array.from({ length: 100 }, (_, i) => balance(i + 1)).join(''));
  await waitFor('32 calls at the node', () => held() >= 32);
  const other = await dial(t, holding.url);
  other.socket.write(balance(1000));
  await waitFor("another connection's call at the node", () => held() >= 33);
  t.equal(held(), 33, 'the first connection has 32 calls at the node, not 100');
  release();
  await waitFor('every answer', () => c.answers.length === 100 && other.answers.length === 1);
  t.same(
    c.answers.map(idOf),
    Array.from({ length: 100 }, (_, i) => i + 1),
    'all 100 answered, each in its place',
  );
  t.equal(idOf(other.answers[0]!), 1000);
});

t.test(
  'an answer with Connection: close (the shutdown delay) closes the socket, even for a peer that keeps its side open',
  async (t) => {
    const closing = await startSwitchyard(t, {
      upstreams: [{ name: 'anvil', url: anvil.url }],
      server: { shutdownDelayMs: 60_000, keepAliveTimeoutMs: 60_000, headersTimeoutMs: 60_000 },
    });
    const { hostname, port } = new URL(closing.url);
    const open = async (): Promise<number> =>
      ((await get(`${closing.adminUrl}/status`)).json() as { limits: { connections: { open: number } } }).limits
        .connections.open;
    let seen = '';
    // allowHalfOpen: this peer does not close its side when the server closes its own.
    const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
    t.teardown(() => socket.destroy());
    socket.on('data', (d: Buffer) => (seen += d.toString()));
    await new Promise((r) => socket.once('connect', r));
    await waitFor('the connection counted', async () => (await open()) === 1);
    void closing.app.drain();
    socket.write(plain());
    await waitFor('the answer', () => seen.includes('"result":"0xba"'));
    t.match(seen, /\r\nConnection: close\r\n/, 'it says Connection: close');
    await waitFor('the server closed the socket', async () => (await open()) === 0);
    t.pass('no socket left half-open');
  },
);
