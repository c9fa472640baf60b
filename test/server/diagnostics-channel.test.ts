/**
 * node:http's diagnostics_channel events (what APM agents listen to) fire for every request on
 * server.port, the plain lane's included (SPEC 8): a subscriber in this process, Switchyard started
 * in it through the embedding API (src/api.ts) in front of a real anvil, sees
 * `http.server.response.created`, `http.server.request.start` and `http.server.response.finish`
 * with node:http's objects (an IncomingMessage, a ServerResponse, the socket, the server) for a
 * plain POST, pipelined plain POSTs, a refused oversized one, a chunked POST (node:http's) and a
 * GET; a header the subscriber adds at request.start reaches the client on both paths, and every
 * answer is the right one for its request. And an agent preloaded into the built process
 * (`node --import`) sees the same for a plain POST and a chunked one.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { IncomingMessage, Server, ServerResponse } from 'node:http';
import { writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { start } from '../../src/api.js';
import { startAnvil } from '../helpers/anvil.js';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { get, post } from '../helpers/rpc.js';
import { testConfig } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

interface Seen {
  channel: string;
  request: unknown;
  response: unknown;
  socket: unknown;
  server: unknown;
}

const anvil = await startAnvil();
t.teardown(() => anvil.stop());
const sy = await start(testConfig({ upstreams: [{ name: 'solo', url: anvil.url }], server: { maxBodyBytes: 4096 } }));
t.teardown(() => sy.stop());
const url = `http://127.0.0.1:${sy.ports.http}`;
await waitFor('ready', () => sy.ready);

const seen: Seen[] = [];
const CHANNELS = ['http.server.response.created', 'http.server.request.start', 'http.server.response.finish'];
/** Only this Switchyard's requests: the test process runs no other server, but be sure. */
const listener = (message: unknown, name: string | symbol): void => {
  const m = message as Partial<Seen>;
  const socket = (m.socket ?? (m.request as IncomingMessage | undefined)?.socket) as Socket | undefined;
  if (socket?.localPort !== sy.ports.http) return;
  seen.push({ channel: String(name), request: m.request, response: m.response, socket: m.socket, server: m.server });
  // As an APM agent does: a header of its own on the answer.
  if (name === 'http.server.request.start') (m.response as ServerResponse).setHeader('x-apm-seen', '1');
};
for (const c of CHANNELS) subscribe(c, listener);
t.teardown(() => {
  for (const c of CHANNELS) unsubscribe(c, listener);
});

const CHAIN_ID = { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] };

/** The three events of one request, asserted to be node:http's, in node:http's order and shapes. */
function checkOne(t: Test, events: Seen[], method: string, status: number): void {
  t.same(
    events.map((e) => e.channel),
    CHANNELS,
    'response.created, request.start, response.finish, in that order',
  );
  const [created, begun, finished] = events as [Seen, Seen, Seen];
  t.ok(begun.request instanceof IncomingMessage, 'the request is an IncomingMessage');
  t.ok(begun.response instanceof ServerResponse, 'the response is a ServerResponse');
  t.equal(created.request, begun.request, 'one request object throughout');
  t.equal(finished.request, begun.request);
  t.equal(created.response, begun.response, 'one response object throughout');
  t.equal(finished.response, begun.response);
  t.ok(begun.server instanceof Server, 'the server is the node:http Server');
  t.equal(finished.server, begun.server);
  t.equal(begun.socket, (begun.request as IncomingMessage).socket, "the socket is the request's");
  const req = begun.request as IncomingMessage;
  t.equal(req.method, method);
  t.equal(req.httpVersion, '1.1');
  t.type(req.headers.host, 'string', 'the headers are there');
  t.equal((finished.response as ServerResponse).statusCode, status, 'the status is known at finish');
}

/** Waits for `n` requests' events (three each) after `from`, grouped by request. */
async function eventsOf(from: number, n: number): Promise<Seen[][]> {
  await waitFor(`${n} requests' events`, () => seen.length - from >= 3 * n && seen.at(-1)?.channel === CHANNELS[2]);
  const mine = seen.slice(from);
  const requests = [...new Set(mine.map((e) => e.request))];
  return requests.map((r) => mine.filter((e) => e.request === r));
}

t.test('a plain POST (the lane reads it): the three events, and the answer', async (t) => {
  const from = seen.length;
  const r = await post(url, CHAIN_ID);
  t.equal(r.status, 200);
  t.same(r.json(), { jsonrpc: '2.0', id: 1, result: '0xba' }, 'its answer');
  t.equal(r.headers['x-apm-seen'], '1', "the subscriber's header reached the client");
  t.ok(r.headers['x-request-id'], "Switchyard's own headers are there too");
  const [events] = await eventsOf(from, 1);
  checkOne(t, events!, 'POST', 200);
  t.equal((events![1]!.request as IncomingMessage).url, '/');
});

t.test('pipelined plain POSTs on one connection: each its events and its own answer, in order', async (t) => {
  const from = seen.length;
  const socket = connect(sy.ports.http, '127.0.0.1');
  t.teardown(() => socket.destroy());
  const one = (id: number): string => {
    const body = JSON.stringify({ ...CHAIN_ID, id });
    return `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  };
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  socket.write(one(11) + one(12) + one(13));
  await waitFor('three answers', () => (text.match(/"result":"0xba"/g) ?? []).length === 3);
  t.same(
    [...text.matchAll(/"id":(\d+)/g)].map((m) => Number(m[1])),
    [11, 12, 13],
    'the answers in the order asked',
  );
  t.equal((text.match(/x-apm-seen: 1/gi) ?? []).length, 3, "each answer has the subscriber's header");
  const groups = await eventsOf(from, 3);
  t.equal(groups.length, 3, 'three requests seen');
  for (const g of groups) checkOne(t, g, 'POST', 200);
});

t.test('an oversized plain POST: refused 413 and the connection closed, its events seen', async (t) => {
  const from = seen.length;
  const socket = connect(sy.ports.http, '127.0.0.1');
  t.teardown(() => socket.destroy());
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  socket.write(
    'POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
  );
  await closed;
  t.match(text, /^HTTP\/1\.1 413 /, 'a 413');
  t.match(text, /connection: close/i, 'and the connection closes');
  const [events] = await eventsOf(from, 1);
  checkOne(t, events!, 'POST', 413);
});

t.test("requests node:http reads (chunked, GET): node:http's own events, the same shapes", async (t) => {
  const from = seen.length;
  const chunked = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    // A stream body goes chunked: not a plain request, node:http reads it.
    body: Readable.from([JSON.stringify(CHAIN_ID)]),
  });
  t.equal(chunked.statusCode, 200);
  t.same(await chunked.body.json(), { jsonrpc: '2.0', id: 1, result: '0xba' });
  t.equal(chunked.headers['x-apm-seen'], '1');
  const page = await get(`${url}/`);
  t.equal(page.status, 200);
  t.equal(page.headers['x-apm-seen'], '1');
  const groups = await eventsOf(from, 2);
  t.equal(groups.length, 2);
  checkOne(t, groups[0]!, 'POST', 200);
  t.equal((groups[0]![1]!.request as IncomingMessage).headers['transfer-encoding'], 'chunked');
  checkOne(t, groups[1]!, 'GET', 200);
});

t.test('with nothing subscribed, the lane publishes nothing and answers as before', async (t) => {
  for (const c of CHANNELS) unsubscribe(c, listener);
  t.teardown(() => {
    for (const c of CHANNELS) subscribe(c, listener);
  });
  const from = seen.length;
  const r = await post(url, CHAIN_ID);
  t.same(r.json(), { jsonrpc: '2.0', id: 1, result: '0xba' });
  t.equal(r.headers['x-apm-seen'], undefined);
  t.equal(seen.length, from, 'no event');
});

/** What the preloaded subscriber writes, one JSON line per event, on stderr. */
const PRELOAD = `
import { subscribe } from 'node:diagnostics_channel';
import { IncomingMessage, ServerResponse } from 'node:http';
for (const name of ${JSON.stringify(CHANNELS)}) {
  subscribe(name, (m) => {
    if (name === 'http.server.request.start') m.response.setHeader('x-apm-seen', '1');
    process.stderr.write('APM ' + JSON.stringify({
      name,
      method: m.request.method,
      url: m.request.url,
      incoming: m.request instanceof IncomingMessage,
      response: m.response instanceof ServerResponse,
      status: name === 'http.server.response.finish' ? m.response.statusCode : undefined,
    }) + '\\n');
  });
}
`;

t.test('an agent preloaded into the built process sees plain and node:http requests alike', async (t) => {
  const dir = t.testdir();
  const agent = join(dir, 'agent.mjs');
  writeFileSync(agent, PRELOAD);
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    `
server: { host: 127.0.0.1, port: 0, wsPort: null }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [ { name: solo, url: "${anvil.url}", discover: false } ]
rateLimit: { perIp: null }
uptime: { store: null }
log: { level: info, requests: 'off' }
`,
  );
  const cli = runCli(t, ['--config', file], { NODE_OPTIONS: `--import=${agent}` });
  const ports = await waitFor('listening line', () => listeningPorts(cli.stdout()));
  const admin = `http://127.0.0.1:${ports.admin}`;
  await waitFor('ready', async () => (await request(`${admin}/ready?upstreams=1`)).statusCode === 200);
  const base = `http://127.0.0.1:${ports.http}`;
  const plain = await post(`${base}/`, CHAIN_ID);
  const chunked = await request(`${base}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: Readable.from([JSON.stringify(CHAIN_ID)]),
  });
  const chunkedBody = await chunked.body.json();
  t.same(plain.json(), { jsonrpc: '2.0', id: 1, result: '0xba' });
  t.same(chunkedBody, { jsonrpc: '2.0', id: 1, result: '0xba' });
  t.equal(plain.headers['x-apm-seen'], '1', "the agent's header on the plain answer");
  t.equal(chunked.headers['x-apm-seen'], '1', "and on node:http's");
  const events = await waitFor('six events', () => {
    const lines = cli
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('APM '))
      .map((l) => JSON.parse(l.slice(4)) as { name: string; method: string; url: string; status?: number })
      // The admin port's requests (the readiness checks above) are node:http's too: not these.
      .filter((e) => e.method === 'POST');
    return lines.length >= 6 ? lines : undefined;
  });
  t.same(
    events.map((e) => e.name),
    [...CHANNELS, ...CHANNELS],
    'each request: created, start, finish',
  );
  t.ok(
    events.every((e) => e.method === 'POST' && e.url === '/' && (e as { incoming?: boolean }).incoming),
    'IncomingMessages',
  );
  t.ok(
    events.every((e) => (e as { response?: boolean }).response),
    'ServerResponses',
  );
  t.same(
    events.filter((e) => e.status !== undefined).map((e) => e.status),
    [200, 200],
  );
});
