/**
 * Hold-off (SPEC 4.8): a node that says "too many requests" gets no calls for a while, and is not
 * failed. A fake provider (a real anvil answers neither a 429 with Retry-After nor -32005 on demand)
 * beside a real anvil, both at the anvil's head. The provider weighs 100, so it is chosen whenever
 * it is eligible. The breaker opens on a single failure (and would stay open: the cooldown never
 * passes), so any refusal counted as a failure would show. The routing clock is frozen once both
 * nodes are healthy and moved only by the test: a hold-off ends when the test says, however slow
 * the machine.
 */
import t, { type Test } from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startFakeNode, type FakeAnswer, type FakeNode } from '../helpers/fake-node.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { call, get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

interface UpstreamStatus {
  name: string;
  state: string;
  routable: boolean;
  breaker: string;
  failures: number;
  inFlight: number;
  heldOffUntil: string | null;
}

const anvil = await startAnvil();
t.teardown(() => anvil.stop());
const header = (await call(anvil.url, 'eth_getBlockByNumber', ['latest', false])).result as { number: string };
const version = JSON.stringify((await call(anvil.url, 'web3_clientVersion')).result);

const POLLS = ['eth_getBlockByNumber', 'eth_chainId', 'eth_blockNumber'];

/** What a fake provider answers: `routed` to client calls, `polls` to the fleet's head polls (null: as a healthy node). */
interface Limits {
  routed: FakeAnswer | null;
  polls: FakeAnswer | null;
}

async function provider(t: Test): Promise<{ node: FakeNode; limits: Limits; routed: () => number }> {
  const limits: Limits = { routed: null, polls: null };
  const node = await startFakeNode(t, (method) => {
    if (POLLS.includes(method))
      return limits.polls ?? (method === 'eth_getBlockByNumber' ? { result: header } : undefined);
    return limits.routed ?? { result: 'provider/healthy' };
  });
  node.head = Number(header.number);
  return { node, limits, routed: () => node.calls.filter((c) => !POLLS.includes(c.method)).length };
}

/** The routing clock: the wall clock until frozen, plus what the test skips. */
let frozenAt: number | null = null;
let skipped = 0;
const now = (): number => (frozenAt ?? Date.now()) + skipped;

async function proxy(
  t: Test,
  upstreams: { name: string; url: string; weight?: number }[],
): Promise<{
  sy: RunningSwitchyard;
  statusOf: (name: string) => Promise<UpstreamStatus>;
  metrics: () => Promise<string>;
}> {
  frozenAt = null;
  skipped = 0;
  const sy = await startSwitchyard(
    t,
    { upstreams, routing: { upstreamTimeoutMs: 5_000, breaker: { failureThreshold: 1, cooldownMs: 3_600_000 } } },
    { now },
  );
  const statusOf = async (name: string): Promise<UpstreamStatus> =>
    ((await get(`${sy.adminUrl}/status`)).json() as { upstreams: UpstreamStatus[] }).upstreams.find(
      (u) => u.name === name,
    )!;
  await waitFor('every upstream healthy', async () => {
    for (const u of upstreams) if ((await statusOf(u.name)).state !== 'healthy') return false;
    return true;
  });
  frozenAt = Date.now();
  return { sy, statusOf, metrics: async () => (await get(`${sy.adminUrl}/metrics`)).text };
}

/** ms from the routing clock's now to an upstream's heldOffUntil (0 when not held off). */
function heldFor(s: UpstreamStatus): number {
  return s.heldOffUntil === null ? 0 : Date.parse(s.heldOffUntil) - now();
}

/** `n` web3_clientVersion calls from 3 clients at once: the answers that are not the anvil's. */
async function callMany(url: string, n: number): Promise<string[]> {
  const wrong: string[] = [];
  let sent = 0;
  const lane = async (): Promise<void> => {
    while (sent < n) {
      sent++;
      const r = await post(url, { jsonrpc: '2.0', id: sent, method: 'web3_clientVersion', params: [] });
      if (JSON.stringify(r.json().result) !== version) wrong.push(r.text.slice(0, 160));
    }
  };
  await Promise.all([lane(), lane(), lane()]);
  return wrong;
}

t.test('HTTP 429 with Retry-After: the call fails over at once; no calls until then; not a failure', async (t) => {
  const p = await provider(t);
  const { sy, statusOf, metrics } = await proxy(t, [
    { name: 'provider', url: p.node.url, weight: 100 },
    { name: 'anvil', url: anvil.url },
  ]);
  p.limits.routed = { status: 429, headers: { 'retry-after': '120' }, body: 'Too Many Requests' };

  const started = Date.now();
  const first = await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'web3_clientVersion', params: [] });
  const ms = Date.now() - started;
  t.equal(p.routed(), 1, 'the call went to the provider first');
  t.equal(JSON.stringify(first.json().result), version, "and got the anvil's answer");
  t.ok(ms < 5_000, `at once (${ms} ms), not after the 120 s the provider asked for`);

  let s = await statusOf('provider');
  t.ok(
    heldFor(s) >= 120_000 && heldFor(s) <= 144_000,
    `held off for its Retry-After, up to 20% more (${heldFor(s)} ms)`,
  );
  t.match(
    s,
    { state: 'healthy', routable: true, breaker: 'closed', failures: 0 },
    'not failed: healthy, breaker closed',
  );

  const calls = p.node.calls.length;
  t.same((await callMany(sy.url, 200)).slice(0, 3), [], "200 more calls, each the anvil's answer");
  t.equal(p.node.calls.length, calls, 'the provider got none of them, nor a head poll');

  const m = await metrics();
  t.same(metricSamples(m, 'switchyard_upstream_held_off', { upstream: 'provider' }), [1], 'held_off 1');
  t.same(metricSamples(m, 'switchyard_upstream_held_off', { upstream: 'anvil' }), [0], 'the anvil: 0');
  t.same(metricSamples(m, 'switchyard_upstream_rate_limited_total', { upstream: 'provider' }), [1], 'one refusal');
  t.same(metricSamples(m, 'switchyard_upstream_rate_limited_total', { upstream: 'anvil' }), [0]);
  t.same(metricSamples(m, 'switchyard_failovers_total', { reason: 'http_429' }), [1], 'the failover, as http_429');
  t.same(metricSamples(m, 'switchyard_upstream_healthy', { upstream: 'provider' }), [1], 'healthy gauge untouched');
  t.same(
    metricSamples(m, 'switchyard_upstream_breaker_state', { upstream: 'provider', state: 'closed' }),
    [1],
    'breaker gauge: closed',
  );

  // A millisecond before its end: still held off.
  skipped += heldFor(s) - 1;
  t.same((await callMany(sy.url, 30)).slice(0, 3), [], '30 calls just before the end: the anvil answers');
  t.equal(p.node.calls.length, calls, 'still none to the provider');

  p.limits.routed = null;
  skipped += 1;
  await waitFor('the provider polled and routed to again', async () => {
    await callMany(sy.url, 3);
    return p.routed() > 1 && p.node.calls.length - p.routed() > calls - 1;
  });
  s = await statusOf('provider');
  t.equal(s.heldOffUntil, null, 'heldOffUntil: null once it ended');
  t.match(s, { state: 'healthy', breaker: 'closed', failures: 0 });
  t.same(metricSamples(await metrics(), 'switchyard_upstream_held_off', { upstream: 'provider' }), [0], 'held_off 0');
});

t.test('-32005 without Retry-After: 1 s, doubling on repeats, a good answer ends the doubling', async (t) => {
  const p = await provider(t);
  const { sy, statusOf, metrics } = await proxy(t, [
    { name: 'provider', url: p.node.url, weight: 100 },
    { name: 'anvil', url: anvil.url },
  ]);
  const limited: FakeAnswer = { error: { code: -32005, message: 'limit exceeded' } };
  p.limits.routed = limited;

  const first = await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'web3_clientVersion', params: [] });
  t.equal(p.routed(), 1, 'the call went to the provider first');
  t.equal(JSON.stringify(first.json().result), version, "and got the anvil's answer");
  let s = await statusOf('provider');
  t.ok(heldFor(s) >= 1_000 && heldFor(s) <= 1_200, `held off 1 s, up to 20% more (${heldFor(s)} ms)`);
  const calls = p.node.calls.length;
  t.same((await callMany(sy.url, 100)).slice(0, 3), [], "100 more calls, each the anvil's answer");
  t.equal(p.node.calls.length, calls, 'the provider got none of them, nor a head poll');

  // Now it refuses its head polls too: the first poll after the hold-off is the repeat.
  p.limits.polls = limited;
  skipped += heldFor(s);
  await waitFor('held off again', async () => (await statusOf('provider')).heldOffUntil !== null);
  s = await statusOf('provider');
  t.ok(heldFor(s) >= 2_000 && heldFor(s) <= 2_400, `a repeat: 2 s, up to 20% more (${heldFor(s)} ms)`);
  t.match(s, { state: 'healthy', routable: true, breaker: 'closed', failures: 0 }, 'a refused poll is no outage');

  // It serves again: a good answer after the hold-off ends the doubling.
  p.limits.polls = null;
  p.limits.routed = null;
  const served = p.node.calls.length;
  skipped += heldFor(s);
  await waitFor('the provider was asked after its hold-off', () => p.node.calls.length > served);
  await waitFor('and its answer read', async () => (await statusOf('provider')).inFlight === 0);
  p.limits.routed = limited;
  const before = p.routed();
  await waitFor('a routed call refused by the provider', async () => {
    await callMany(sy.url, 3);
    return p.routed() > before;
  });
  s = await statusOf('provider');
  t.ok(heldFor(s) >= 1_000 && heldFor(s) <= 1_200, `after a good answer: 1 s again (${heldFor(s)} ms)`);
  t.match(s, { state: 'healthy', breaker: 'closed', failures: 0 });
  const m = await metrics();
  t.ok(
    metricSamples(m, 'switchyard_upstream_rate_limited_total', { upstream: 'provider' })[0]! >= 3,
    'refusals counted',
  );
  t.ok(metricSamples(m, 'switchyard_failovers_total', { reason: 'node_limit' })[0]! >= 2, 'failovers as node_limit');
});

t.test('every node held off: NO_UPSTREAM, why "all held off", at once', async (t) => {
  const a = await provider(t);
  const b = await provider(t);
  const { sy, statusOf } = await proxy(t, [
    { name: 'provider-a', url: a.node.url },
    { name: 'provider-b', url: b.node.url },
  ]);
  for (const p of [a, b])
    p.limits.routed = { status: 429, headers: { 'retry-after': '60' }, body: 'Too Many Requests' };

  const first = (await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'web3_clientVersion', params: [] })).json();
  t.equal(a.routed() + b.routed(), 2, 'the call tried both providers, each once');
  t.match(first.error, { code: -32002, data: { why: 'all held off' } }, 'then NO_UPSTREAM: all held off');
  const second = (await post(sy.url, { jsonrpc: '2.0', id: 2, method: 'web3_clientVersion', params: [] })).json();
  t.match(second.error, {
    code: -32002,
    message: 'no upstream available: all held off',
    data: { why: 'all held off' },
  });
  t.equal(a.routed() + b.routed(), 2, 'the next call reached neither');
  for (const name of ['provider-a', 'provider-b'])
    t.match(await statusOf(name), { state: 'healthy', routable: true, breaker: 'closed' }, `${name}: not failed`);
  t.equal(
    (await get(`${sy.adminUrl}/ready?upstreams=1`)).status,
    200,
    'still ready: the nodes are up, only asking for patience',
  );
});
