/**
 * Quorum reads when an asked node cannot take part (SPEC 4.9; routing/quorum.ts), on real anvil
 * nodes behind proxies: a node that fails (HTTP 500) is replaced by another eligible node, up to
 * routing.maxAttempts - 1 replacements, and a held read (a trace) asks only nodes whose held lane
 * has room (upstreams[].heldConnections), so a quorum read never queues behind held calls.
 * Asserted: what the client got, X-Switchyard-Quorum, how many calls each node got, what was counted.
 */
import t from 'tap';
import { startAnvil, type AnvilNode } from '../helpers/anvil.js';
import { startFakeNode, type FakeAnswer, type FakeNode } from '../helpers/fake-node.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { call, get, post, type RawResponse } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { signTransfer } from '../helpers/transfer.js';
import { waitFor } from '../helpers/wait.js';

type Test = Parameters<typeof startFakeNode>[0];

/** A proxy in front of `anvil`: every call forwarded, unless `intercept` answers it. */
function proxy(
  t: Test,
  anvil: AnvilNode,
  intercept: (method: string) => FakeAnswer | Promise<void> | undefined = () => undefined,
): Promise<FakeNode> {
  return startFakeNode(t, (method, params): FakeAnswer => {
    const own = intercept(method);
    if (own !== undefined && !(own instanceof Promise)) return own;
    return {
      defer: async () => {
        const r = await call(anvil.url, method, params);
        if (own instanceof Promise) await own;
        return r.error ? { error: r.error } : { result: r.result };
      },
    };
  });
}

async function anvils(t: Test, n: number): Promise<AnvilNode[]> {
  const out: AnvilNode[] = [];
  for (let i = 0; i < n; i++) {
    const a = await startAnvil();
    t.teardown(() => a.stop());
    out.push(a);
  }
  return out;
}

async function metric(sy: RunningSwitchyard, name: string, labels: Record<string, string>): Promise<number> {
  return metricSamples((await get(`${sy.adminUrl}/metrics`)).text, name, labels).reduce((a, b) => a + b, 0);
}

async function healthy(sy: RunningSwitchyard): Promise<void> {
  await waitFor('every upstream healthy', async () =>
    (await get(`${sy.adminUrl}/status`)).json().upstreams.every((u: { state: string }) => u.state === 'healthy'),
  );
}

const seen = (n: FakeNode, method: string): number => n.calls.filter((c) => c.method === method).length;
const address = (n: number): string => `0x${(0xfa11ed00 + n).toString(16).padStart(40, '0')}`;

function balance(sy: RunningSwitchyard, n: number): Promise<RawResponse> {
  return post(sy.url, { jsonrpc: '2.0', id: n, method: 'eth_getBalance', params: [address(n), 'latest'] });
}

const FAILS: FakeAnswer = { status: 500, body: 'upstream broke' };

/** The nodes asked first: selection prefers the weighted ones (cost is latency x in-flight / weight). */
const FIRST = 1000;

t.test('a failed node is replaced by another eligible node, up to maxAttempts - 1 times', async (t) => {
  const [a, b, c, d, e] = await anvils(t, 5);
  const broken = await proxy(t, a!, (m) => (m === 'eth_getBalance' ? FAILS : undefined));
  const alsoBroken = await proxy(t, b!, (m) => (m === 'eth_getBalance' ? FAILS : undefined));
  const x1 = await proxy(t, c!);
  const x2 = await proxy(t, d!);
  const x3 = await proxy(t, e!);
  const routing = { headPollMs: 100, breaker: { failureThreshold: 100_000, cooldownMs: 1000 } };
  const asked = (nodes: FakeNode[], before: number[]) => nodes.map((n, i) => seen(n, 'eth_getBalance') - before[i]!);

  t.test('one node fails: the next eligible node is asked in its place', async (t) => {
    const nodes = [broken, x1, x2, x3];
    const sy = await startSwitchyard(t, {
      upstreams: [
        { name: 'broken', url: broken.url, weight: FIRST },
        { name: 'x1', url: x1.url, weight: FIRST },
        { name: 'x2', url: x2.url, weight: FIRST },
        { name: 'x3', url: x3.url, weight: 1 },
      ],
      routing: { ...routing, quorum: [{ methods: ['eth_getBalance'], min: 3, of: 3 }] },
    });
    await healthy(sy);
    const before = nodes.map((n) => seen(n, 'eth_getBalance'));
    const r = await balance(sy, 1);
    t.equal(r.json().result, '0x0', 'answered: three nodes agree');
    t.equal(r.headers['x-switchyard-quorum'], '3/4', 'three agreeing of four asked');
    t.equal(r.headers['x-switchyard-attempts'], '4', 'four node calls');
    t.same(asked(nodes, before), [1, 1, 1, 1], 'the broken node once, then the fourth node in its place');
    t.equal(await metric(sy, 'switchyard_quorum_calls_total', { outcome: 'agreed' }), 1, 'counted as agreed');
  });

  for (const maxAttempts of [3, 2]) {
    t.test(`two nodes fail, maxAttempts ${maxAttempts}: ${maxAttempts - 1} replacement(s)`, async (t) => {
      const nodes = [broken, alsoBroken, x1, x2];
      const sy = await startSwitchyard(t, {
        upstreams: [
          { name: 'broken', url: broken.url, weight: FIRST },
          { name: 'alsoBroken', url: alsoBroken.url, weight: FIRST },
          { name: 'x1', url: x1.url, weight: 1 },
          { name: 'x2', url: x2.url, weight: 1 },
        ],
        routing: { ...routing, maxAttempts, quorum: [{ methods: ['eth_getBalance'], min: 2, of: 2 }] },
      });
      await healthy(sy);
      const before = nodes.map((n) => seen(n, 'eth_getBalance'));
      const r = await balance(sy, 10 + maxAttempts);
      // With one answer left to come and two needed, the call is answered before that node's call arrives.
      const total = 2 + maxAttempts - 1;
      await waitFor('every asked node reached', () => asked(nodes, before).reduce((s, n) => s + n, 0) === total);
      const got = asked(nodes, before);
      t.same(got.slice(0, 2), [1, 1], 'both broken nodes asked first');
      t.equal(got[2]! + got[3]!, maxAttempts - 1, `${maxAttempts - 1} other node(s) asked in their place`);
      if (maxAttempts === 3) {
        t.equal(r.json().result, '0x0', 'the two replacements agree');
        t.equal(r.headers['x-switchyard-quorum'], '2/4', 'two agreeing of four asked');
      } else {
        t.equal(r.json().error?.data?.reason, 'NO_QUORUM', 'no quorum');
        t.equal(r.json().error?.data?.why, 'too few answers', 'at most one answer of the two needed');
        // 0/3 or 1/3: the replacement's answer may come before the second failure or after the call was answered.
        t.match(r.headers['x-switchyard-quorum'], /^[01]\/3$/, 'three asked');
      }
    });
  }
});

t.test('a node chosen at the start with no budget token is replaced by another eligible node', async (t) => {
  const [a, b, c, d] = await anvils(t, 4);
  const spent = await proxy(t, a!);
  const x1 = await proxy(t, b!);
  const x2 = await proxy(t, c!);
  const x3 = await proxy(t, d!);
  const nodes = [spent, x1, x2, x3];
  const sy = await startSwitchyard(t, {
    upstreams: [
      // One call in a window of 10,000 s: spent by the first call that goes there, never refilled here.
      { name: 'spent', url: spent.url, weight: FIRST, rateLimit: { ratePerSec: 0.0001, burst: 1 } },
      { name: 'x1', url: x1.url, weight: FIRST },
      { name: 'x2', url: x2.url, weight: FIRST },
      { name: 'x3', url: x3.url, weight: 1 },
    ],
    routing: { headPollMs: 100, quorum: [{ methods: ['eth_getBalance'], min: 3, of: 3 }] },
  });
  await healthy(sy);
  const remaining = async (): Promise<number> =>
    (await get(`${sy.adminUrl}/status`)).json().upstreams.find((u: { name: string }) => u.name === 'spent').budget
      .remaining;
  // The first call (or the chain feed before it) spends the node's one token.
  const first = (await balance(sy, 40)).json();
  t.equal(first.result, '0x0', `the first call is answered ${JSON.stringify(first.error)}`);
  await waitFor("the spent node's token gone", async () => (await remaining()) === 0);
  const exhaustedBefore = await metric(sy, 'switchyard_upstream_budget_exhausted_total', { upstream: 'spent' });
  const before = nodes.map((n) => seen(n, 'eth_getBalance'));
  const r = await balance(sy, 41);
  t.equal(r.json().result, '0x0', 'answered: three nodes agree');
  t.equal(r.headers['x-switchyard-quorum'], '3/3', 'three asked, all agreeing');
  t.same(
    nodes.map((n, i) => seen(n, 'eth_getBalance') - before[i]!),
    [0, 1, 1, 1],
    'the node without budget not asked; the fourth node asked in its place',
  );
  t.ok(
    (await metric(sy, 'switchyard_upstream_budget_exhausted_total', { upstream: 'spent' })) > exhaustedBefore,
    'the node passed over for its budget is counted',
  );
});

t.test('a held read asks only nodes whose held lane has room; too few: HELD_LANE_FULL at once', async (t) => {
  const nodesAnvils = await anvils(t, 3);
  const raw = await signTransfer(0);
  let tx = '';
  for (const a of nodesAnvils) tx = (await call(a.url, 'eth_sendRawTransaction', [raw])).result as string;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const nodes = await Promise.all(
    nodesAnvils.map((a) => proxy(t, a, (m) => (m === 'debug_traceTransaction' ? gate : undefined))),
  );
  const sy = await startSwitchyard(t, {
    upstreams: nodes.map((n, i) => ({ name: `n${i}`, url: n.url, heldConnections: 1, tags: ['debug'] })),
    routing: {
      headPollMs: 100,
      breaker: { failureThreshold: 100_000, cooldownMs: 1000 },
      quorum: [{ methods: ['debug_traceTransaction'], min: 2, of: 2 }],
    },
  });
  await healthy(sy);
  const trace = (id: number) =>
    post(sy.url, { jsonrpc: '2.0', id, method: 'debug_traceTransaction', params: [tx, { tracer: 'callTracer' }] });
  const traces = () => nodes.reduce((s, n) => s + seen(n, 'debug_traceTransaction'), 0);
  const first = trace(1);
  await waitFor('the first trace held at two nodes', () => traces() === 2);
  // Each of those two nodes' held lane is full now: one node has room, two are needed.
  let second: RawResponse | undefined;
  void trace(2).then((r) => (second = r));
  const overfull = async () => {
    const text = (await get(`${sy.adminUrl}/metrics`)).text;
    return metricSamples(text, 'switchyard_upstream_held_calls_in_flight', {}).some((v) => v > 1);
  };
  await waitFor(
    'the second trace answered, or sent past a held lane',
    async () => second !== undefined || (await overfull()),
  );
  t.notOk(await overfull(), 'no node carries more held calls than its lane has connections');
  t.equal(second?.json().error?.data?.reason, 'HELD_LANE_FULL', 'answered at once: HELD_LANE_FULL');
  t.equal(second?.json().error?.code, -32005, 'code -32005');
  t.equal(traces(), 2, 'the second trace reached no node');
  t.ok(
    (await metric(sy, 'switchyard_upstream_held_lane_full_total', {})) >= 2,
    'each node passed over counted as held lane full',
  );
  release();
  const done = await first;
  t.equal(done.headers['x-switchyard-quorum'], '2/2', 'the first trace agreed');
  t.ok(done.json().result !== undefined, 'with the trace');
  const third = await trace(3);
  t.equal(third.headers['x-switchyard-quorum'], '2/2', 'lanes free again: a trace asks two nodes');
});
