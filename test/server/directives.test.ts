/**
 * Request directives (SPEC 13) against a real anvil fleet of two: a caller whose API key has
 * `directives: true` pins a batch to one node (X-Switchyard-Use-Upstream), gets -32002 for an
 * unknown or cordoned node with no failover, reaches a node again for a cached call
 * (X-Switchyard-Skip-Cache), and has its request exported at sampleRate 0 (X-Switchyard-Trace:
 * force). The same headers from a caller without directives (no key, or a key without them) and
 * on a WebSocket upgrade are ignored and counted in switchyard_directives_ignored_total.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startCountingProxy } from '../helpers/counting-proxy.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket } from '../helpers/ws.js';
import { startCollector } from '../tracing/collector.js';

const ONCALL = 'oncall-key-0123456789abcdef';
const PARTNER = 'partner-key-0123456789abcdef';

const nodes = await Promise.all([startAnvil(), startAnvil()]);
t.teardown(() => Promise.all(nodes.map((n) => n.stop())));
const proxies = await Promise.all(nodes.map((n) => startCountingProxy(t, n.url)));
const collector = await startCollector(t);
const sy = await startSwitchyard(t, {
  upstreams: [
    { name: 'node-a', url: proxies[0]!.url },
    { name: 'node-b', url: proxies[1]!.url },
  ],
  tracing: { enabled: true, endpoint: collector.url, sampleRate: 0, slowMs: 60_000 },
  rateLimit: {
    perIp: null,
    apiKeys: [
      { name: 'oncall', key: ONCALL, ratePerSec: 1000, burst: 1000, directives: true },
      { name: 'partner', key: PARTNER, ratePerSec: 1000, burst: 1000 },
    ],
  },
});
const oncall = `${sy.url}/key/${ONCALL}`;

let nextAddress = 1;
/** A balance of an address no other call asks about: never answered from the cache. */
function freshBalances(n: number): object[] {
  return Array.from({ length: n }, (_, i) => ({
    jsonrpc: '2.0',
    id: i,
    method: 'eth_getBalance',
    params: [`0x${(nextAddress++).toString(16).padStart(40, '0')}`, 'latest'],
  }));
}

/** Each proxy's mark: calls recorded from now on. */
function marks(): number[] {
  return proxies.map((p) => p.mark());
}

function reached(i: number, since: number[], method = 'eth_getBalance', params?: unknown[]): number {
  return proxies[i]!.count(method, params, since[i]);
}

async function ignored(directive: string): Promise<number> {
  const text = (await get(`${sy.adminUrl}/metrics`)).text;
  return metricSamples(text, 'switchyard_directives_ignored_total', { directive })[0] ?? -1;
}

t.test('Use-Upstream pins every call of a batch to the named node', async (t) => {
  for (const [name, i] of [
    ['node-b', 1],
    ['node-a', 0],
  ] as const) {
    const since = marks();
    for (let round = 0; round < 6; round++) {
      const r = await post(oncall, freshBalances(4), { 'x-switchyard-use-upstream': name });
      t.equal(r.status, 200);
      t.ok(
        r.json().every((a: { result?: string }) => typeof a.result === 'string'),
        'every call answered',
      );
      t.equal(r.headers['x-switchyard-upstream'], name, `answered by ${name} only`);
    }
    t.equal(reached(i, since), 24, `${name} got every call`);
    t.equal(reached(1 - i, since), 0, 'the other node got none');
  }
});

t.test('an unknown or cordoned node: -32002 saying why, and no other node asked', async (t) => {
  const since = marks();
  const unknown = await post(oncall, freshBalances(2), { 'x-switchyard-use-upstream': 'node-z' });
  for (const a of unknown.json()) {
    t.equal(a.error?.code, -32002);
    t.equal(a.error?.data?.why, 'the requested upstream is unknown');
    t.notMatch(a.error?.message, /node-z/, 'the name sent is not echoed');
  }
  t.equal((await post(`${sy.adminUrl}/upstreams/node-b/cordon`, {})).status, 200);
  t.teardown(() => post(`${sy.adminUrl}/upstreams/node-b/uncordon`, {}));
  const cordoned = await post(oncall, freshBalances(3), { 'x-switchyard-use-upstream': 'node-b' });
  for (const a of cordoned.json()) {
    t.equal(a.error?.code, -32002);
    t.equal(a.error?.data?.why, 'the requested upstream is cordoned');
  }
  t.equal(reached(0, since) + reached(1, since), 0, 'no node was asked');
  const local = await post(
    oncall,
    { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] },
    {
      'x-switchyard-use-upstream': 'node-z',
    },
  );
  t.type(local.json().result, 'string', 'what Switchyard answers itself is still answered');
});

t.test('Skip-Cache: a cached call reaches a node again, and its answer is still stored', async (t) => {
  const block0 = { jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: ['0x0', false] };
  await post(oncall, block0);
  const hit = await post(oncall, block0);
  t.equal(hit.headers['x-switchyard-cache'], 'hit', 'cached');
  const since = marks();
  const skipped = await post(oncall, block0, { 'x-switchyard-skip-cache': 'true' });
  t.equal(skipped.headers['x-switchyard-cache'], 'miss');
  t.equal(skipped.headers['x-switchyard-attempts'], '1');
  t.same(skipped.json().result, hit.json().result, 'the same block');
  // Block 0 exactly: Switchyard's own head polls ask for `latest` and `finalized`.
  const asked = [0, 1].reduce((n, i) => n + reached(i, since, 'eth_getBlockByNumber', ['0x0', false]), 0);
  t.equal(asked, 1, 'a node was asked');
  t.equal((await post(oncall, block0)).headers['x-switchyard-cache'], 'hit', 'the cache still answers others');
});

t.test('Skip-Cache: no joining an identical call in flight', async (t) => {
  const [call] = freshBalances(1) as { params: string[] }[];
  const address = call!.params[0];
  const holds = proxies.map((p) => p.hold('eth_getBalance', (params) => params[0] === address));
  const release = (): void => holds.forEach((h) => h.release());
  t.teardown(release);
  const held = (): number => holds.reduce((n, h) => n + h.held, 0);
  const first = post(sy.url, call!);
  await waitFor('the first call held at a node', () => held() === 1 || undefined);
  const second = post(oncall, call!, { 'x-switchyard-skip-cache': 'true' });
  // Well within routing.upstreamTimeoutMs (10 s): not the first call failing over to the other node.
  await waitFor('the second call at a node too', () => held() === 2 || undefined, { timeoutMs: 5_000 });
  release();
  for (const r of await Promise.all([first, second])) t.type(r.json().result, 'string');
});

t.test('Trace: force exports the request at sampleRate 0', async (t) => {
  const plain = await post(oncall, freshBalances(1)[0]!);
  t.match(String(plain.headers.traceparent), /-00$/, 'not sampled without it');
  const forced = await post(oncall, freshBalances(1)[0]!, { 'x-switchyard-trace': 'force' });
  t.match(String(forced.headers.traceparent), /-01$/, 'kept');
  const traceId = String(forced.headers.traceparent).split('-')[1]!;
  const spans = await waitFor('the forced trace at the collector', () => {
    const got = collector.spans.filter((s) => s.traceId === traceId);
    return got.some((s) => s.kind === 2) && got.some((s) => s.kind === 3) ? got : undefined;
  });
  t.ok(
    spans.some((s) => s.name === 'eth_getBalance'),
    'the call span',
  );
  const server = spans.find((s) => s.kind === 2)!;
  t.equal(server.attributes['switchyard.directives'], 'trace', 'the SERVER span names the directives applied');
  t.notOk(
    collector.spans.some((s) => s.traceId === String(plain.headers.traceparent).split('-')[1]),
    'the unforced request was not exported',
  );
});

t.test('from a caller without directives they are ignored and counted', async (t) => {
  const before = {
    use_upstream: await ignored('use_upstream'),
    skip_cache: await ignored('skip_cache'),
    trace: await ignored('trace'),
  };
  t.same(
    Object.values(before).filter((n) => n < 0),
    [],
    'every series exists',
  );
  const block0 = { jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: ['0x0', false] };
  const headers = {
    'x-switchyard-use-upstream': 'node-z',
    'x-switchyard-skip-cache': 'true',
    'x-switchyard-trace': 'force',
  };
  for (const url of [sy.url, `${sy.url}/key/${PARTNER}`]) {
    const r = await post(url, [block0, ...freshBalances(2)], headers);
    const answers = r.json();
    t.ok(
      answers.every((a: object) => 'result' in a),
      'answered as without them (no pin)',
    );
    t.equal(r.headers['x-switchyard-cache'], 'partial', 'the cache read');
    t.match(String(r.headers.traceparent), /-00$/, 'not forced into the sample');
  }
  t.equal(await ignored('use_upstream'), before.use_upstream + 2);
  t.equal(await ignored('skip_cache'), before.skip_cache + 2);
  t.equal(await ignored('trace'), before.trace + 2);
});

t.test('on a WebSocket upgrade they are ignored, even with a key allowed directives, and counted', async (t) => {
  const before = await ignored('use_upstream');
  const ws = await openSocket(t, `${oncall.replace('http:', 'ws:')}`, {
    headers: { 'x-switchyard-use-upstream': 'node-z' },
  });
  const answer = await ws.ask(JSON.stringify(freshBalances(1)[0]));
  t.type(answer.result, 'string', 'not pinned to the unknown node');
  t.equal(await ignored('use_upstream'), before + 1, 'counted once, at the upgrade');
  await ws.ask(JSON.stringify(freshBalances(1)[0]));
  t.equal(await ignored('use_upstream'), before + 1, 'not again per frame');
});
