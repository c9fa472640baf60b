/**
 * Spans as a collector receives them (a real OTLP/HTTP endpoint, JSON) from Switchyard in front of
 * a real anvil fleet: the SERVER span under the client's traceparent, a span per call with the
 * JSON-RPC attributes, a CLIENT span per attempt naming the upstream, an exchange span linking the
 * calls sent together; the traceparent each node receives (its parent: the CLIENT span) and the
 * one the client gets back; trace_id in the request line; and nothing private in any attribute.
 */
import t from 'tap';
import { Readable, Writable } from 'node:stream';
import { request } from 'undici';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { createLogger } from '../../src/log/logger.js';
import { post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { VERSION } from '../../src/version.js';
import { waitFor } from '../helpers/wait.js';
import { startCollector, startHeaderProxy, type ReceivedSpan } from './collector.js';

const SERVER = 2;
const CLIENT = 3;
const API_KEY = 'tracing-test-key-0123456789';
const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';

const nodes = await Promise.all([startAnvil(), startAnvil()]);
t.teardown(() => Promise.all(nodes.map((n) => n.stop())));
const proxies = await Promise.all(nodes.map((n) => startHeaderProxy(t, n.url)));
const collector = await startCollector(t);
let logged = '';
const logger = createLogger(
  'info',
  new Writable({
    write(chunk: Buffer, _enc, done) {
      logged += chunk.toString();
      done();
    },
  }),
);
const sy = await startSwitchyard(
  t,
  {
    upstreams: proxies.map((p, i) => ({ name: `node-${i}`, url: p.url })),
    tracing: {
      enabled: true,
      endpoint: collector.url,
      headers: { authorization: 'Bearer collector-token' },
      sampleRate: 1,
      serviceName: 'switchyard-edge',
    },
    rateLimit: { perIp: null, apiKeys: [{ key: API_KEY, name: 'tester', ratePerSec: 1000, burst: 1000 }] },
    log: { level: 'info' },
  },
  { logger },
);

function spansOf(traceId: string): ReceivedSpan[] {
  return collector.spans.filter((s) => s.traceId === traceId);
}

function traceIdOf(header: unknown): string {
  t.match(header, /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/, 'the answer carries a traceparent');
  return String(header).split('-')[1]!;
}

t.test(
  'a call under a client traceparent: SERVER, call and CLIENT spans, and the traceparent the node saw',
  async (t) => {
    const r = await post(
      `${sy.url}/key/${API_KEY}`,
      { jsonrpc: '2.0', id: 'abc-1', method: 'eth_getBalance', params: [DEV_ADDRESS, 'latest'] },
      { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: 'vendor=opaque' },
    );
    t.equal(r.status, 200);
    t.equal(traceIdOf(r.headers.traceparent), CLIENT_TRACE, 'the answer continues the client trace');
    t.match(String(r.headers.traceparent), /-01$/, 'sampled');
    const spans = await waitFor('spans of the trace', () => {
      const got = spansOf(CLIENT_TRACE);
      return got.some((s) => s.kind === SERVER) ? got : undefined;
    });
    const server = spans.find((s) => s.kind === SERVER)!;
    t.equal(server.parentSpanId, CLIENT_SPAN, "the SERVER span's parent is the client's span");
    t.equal(String(r.headers.traceparent).split('-')[2], server.spanId, 'the answer names the SERVER span');
    t.equal(server.attributes['http.response.status_code'], 200);
    t.equal(server.resource['service.name'], 'switchyard-edge', 'tracing.serviceName names the service');
    t.match(
      server.resource['service.instance.id'],
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      'a random UUID names the instance',
    );
    t.equal(server.resource['service.version'], VERSION);
    const call = spans.find((s) => s.name === 'eth_getBalance')!;
    t.ok(call, 'a span named after the method');
    t.equal(call.parentSpanId, server.spanId, 'under the SERVER span');
    t.match(call.attributes, {
      'rpc.system.name': 'jsonrpc',
      'rpc.method': 'eth_getBalance',
      'jsonrpc.request.id': 'abc-1',
      'switchyard.attempts': 1,
    });
    t.ok(['miss', 'none'].includes(String(call.attributes['switchyard.cache'])), 'the cache was consulted or not');
    t.type(call.attributes['switchyard.block'], 'number', 'latest was pinned to a block');
    t.notOk('error.type' in call.attributes, 'no error');
    const attempt = spans.find((s) => s.kind === CLIENT)!;
    t.equal(attempt.parentSpanId, call.spanId, 'the attempt is under the call');
    t.match(attempt.attributes['switchyard.upstream'], /^node-[01]$/, 'the upstream by name');
    t.equal(attempt.attributes['switchyard.outcome'], 'result');
    const reached = proxies.flatMap((p) => p.seen);
    const sent = reached.find((s) => s.methods.includes('eth_getBalance'));
    t.equal(sent?.traceparent, `00-${CLIENT_TRACE}-${attempt.spanId}-01`, "the node's parent is the CLIENT span");
    t.equal(collector.posts[0]?.path, '/v1/traces', 'a bare collector address gets the traces path');
    t.equal(collector.posts[0]?.headers.authorization, 'Bearer collector-token', 'tracing.headers go with the export');
  },
);

t.test('a cache hit, a method outside the table, and a request line with trace_id', async (t) => {
  const block0 = { jsonrpc: '2.0', id: 7, method: 'eth_getBlockByNumber', params: ['0x0', false] };
  await post(sy.url, block0);
  const hit = await post(sy.url, block0);
  const hitTrace = traceIdOf(hit.headers.traceparent);
  const other = await post(sy.url, { jsonrpc: '2.0', id: null, method: 'acme_secretThing', params: [DEV_ADDRESS] });
  const otherTrace = traceIdOf(other.headers.traceparent);
  const spans = await waitFor('both traces', () => {
    const a = spansOf(hitTrace).find((s) => s.name === 'eth_getBlockByNumber');
    const b = spansOf(otherTrace).find((s) => s.name === '_OTHER');
    return a && b ? { a, b } : undefined;
  });
  t.equal(spans.a.attributes['switchyard.cache'], 'hit');
  t.equal(spans.a.attributes['switchyard.attempts'], 0, 'no node asked');
  t.equal(spans.b.attributes['rpc.method'], '_OTHER');
  t.equal(spans.b.attributes['rpc.method_original'], 'acme_secretThing');
  t.notOk('jsonrpc.request.id' in spans.b.attributes, 'no id for a null id');
  t.equal(spans.b.attributes['rpc.response.status_code'], '-32601');
  t.equal(spans.b.attributes['error.type'], 'METHOD_NOT_FOUND');
  t.equal(spans.b.status, 2, 'an error status');
  const line = await waitFor('request line', () =>
    logged.split('\n').find((l) => l.includes('"msg":"request"') && l.includes(hitTrace)),
  );
  t.equal(JSON.parse(line).trace_id, hitTrace, 'the request line names the trace');
});

t.test('calls sent to a node together share an exchange span that links each call', async (t) => {
  const batch = [3, 4, 5].map((n) => ({
    jsonrpc: '2.0',
    id: n,
    method: 'eth_getBalance',
    params: [`0x${String(n).repeat(40)}`, 'latest'],
  }));
  batch.push({ jsonrpc: '2.0', id: 6, method: 'eth_getTransactionCount', params: [DEV_ADDRESS, 'latest'] });
  const r = await post(sy.url, [...batch, { jsonrpc: '2.0', id: 9, method: 'eth_chainId', params: [] }]);
  t.equal(r.status, 200);
  const traceId = traceIdOf(r.headers.traceparent);
  const spans = await waitFor('the batch trace', () => {
    const got = spansOf(traceId);
    return got.some((s) => s.kind === SERVER) ? got : undefined;
  });
  const server = spans.find((s) => s.kind === SERVER)!;
  const exchanges = spans.filter((s) => s.kind === CLIENT && s.links.length > 1);
  t.ok(exchanges.length >= 1, 'an exchange span');
  const callIds = new Set(spans.filter((s) => s.parentSpanId === server.spanId && s.kind === 1).map((s) => s.spanId));
  // One assertion each over every exchange: the calls may leave in one exchange or more.
  t.ok(
    exchanges.every((x) => x.parentSpanId === server.spanId),
    'each exchange is under the request',
  );
  t.ok(
    exchanges.every((x) => x.links.every((l) => callIds.has(l.spanId) && l.traceId === traceId)),
    'each links call spans of the request',
  );
  const reached = proxies.flatMap((p) => p.seen);
  t.ok(
    exchanges.every((x) =>
      reached.some((s) => s.traceparent?.split('-')[2] === x.spanId && s.methods.length === x.links.length),
    ),
    'the node got each exchange as parent',
  );
  t.equal(spans.filter((s) => s.kind === 1).length, 5, 'a span per call');
});

t.test("the SERVER span: the HTTP conventions' attributes, on the plain lane and node:http's path", async (t) => {
  const port = Number(new URL(sy.url).port);
  const lane = await post(
    `${sy.url}/key/${API_KEY}?apikey=${API_KEY}&x`,
    { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
    {
      'user-agent': 'span-test/1.0',
    },
  );
  // A stream body goes chunked: node:http reads it, not the plain lane.
  const chunked = await request(sy.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', host: `localhost:${port}` },
    body: Readable.from([JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_chainId' })]),
  });
  await chunked.body.text();
  const missing = await post(`${sy.url}/nowhere/${API_KEY}`, { jsonrpc: '2.0', id: 3, method: 'eth_chainId' });
  t.equal(missing.status, 404);
  // Read once, outside the wait: traceIdOf asserts, and a wait's polls are as many as timing makes them.
  const traces = [lane.headers.traceparent, chunked.headers.traceparent, missing.headers.traceparent].map(traceIdOf);
  const servers = await waitFor('the three SERVER spans', () => {
    const got = traces.map((id) => spansOf(id).find((s) => s.kind === SERVER));
    return got.every((s) => s !== undefined) ? (got as ReceivedSpan[]) : undefined;
  });
  const [a, b, c] = servers as [ReceivedSpan, ReceivedSpan, ReceivedSpan];
  t.equal(a.name, 'POST /key/{key}', 'named {method} {route}');
  t.match(a.attributes, {
    'http.request.method': 'POST',
    'url.path': '/key/REDACTED',
    'url.query': 'apikey=REDACTED&x',
    'url.scheme': 'http',
    'http.route': '/key/{key}',
    'http.response.status_code': 200,
    'server.address': '127.0.0.1',
    'server.port': port,
    'network.protocol.version': '1.1',
    'user_agent.original': 'span-test/1.0',
  });
  t.notOk('client.address' in a.attributes, "no client's address (SPEC 13: no addresses in a span)");
  t.notOk('error.type' in a.attributes, 'no error');
  t.equal(b.name, 'POST /');
  t.match(b.attributes, {
    'http.request.method': 'POST',
    'url.path': '/',
    'url.scheme': 'http',
    'http.route': '/',
    'http.response.status_code': 200,
    'server.address': 'localhost',
    'server.port': port,
    'network.protocol.version': '1.1',
  });
  t.equal(c.name, 'POST', 'no route matched: the method alone');
  t.match(c.attributes, { 'url.path': '/nowhere/REDACTED', 'http.response.status_code': 404 });
  t.notOk('http.route' in c.attributes);
  t.notOk('error.type' in c.attributes, "a 404 is the client's error, not the span's");
});

t.test('no URL, address, param, key or token in any span', async (t) => {
  await post(`${sy.url}/key/${API_KEY}`, {
    jsonrpc: '2.0',
    id: 1,
    method: 'eth_call',
    params: [{ to: DEV_ADDRESS, data: '0xdeadbeefcafe' }, 'latest'],
  });
  await waitFor('an eth_call span', () => collector.spans.some((s) => s.name === 'eth_call'));
  // The Host a client asked for is the SERVER span's server.address (the HTTP conventions'): here
  // 127.0.0.1, the upstreams' host as well, which no other attribute may name.
  const text = JSON.stringify(
    collector.spans.map((s) => {
      const { 'server.address': _host, ...attributes } = s.attributes;
      return { name: s.name, attributes, resource: s.resource };
    }),
  );

  const secrets = [
    DEV_ADDRESS.toLowerCase().slice(2),
    DEV_ADDRESS.slice(2),
    'deadbeefcafe',
    API_KEY,
    'collector-token',
    '127.0.0.1',
    ...nodes.map((n) => String(n.port)),
    ...proxies.map((p) => new URL(p.url).port),
    'http:',
  ];
  for (const s of secrets) t.notOk(text.includes(s), `no ${s}`);
  t.ok(collector.spans.length > 10, `${collector.spans.length} spans looked at`);
});
