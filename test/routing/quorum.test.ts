/**
 * Quorum reads (SPEC 4.9, routing.quorum) through the whole service, on real anvil nodes: each
 * node sits behind a proxy (a fake node forwarding every call to its anvil) that may forge
 * eth_getBalance answers or hold them back until the test lets them go, so which node answers
 * first or last is decided by the test, not by timing. Asserted: what the client got and the
 * X-Switchyard-Quorum header, what was counted (quorum calls by outcome, dissent per node, also
 * for an answer that comes after the client's), what /status shows, what was cached (an agreed
 * answer is; NO_QUORUM is not), minGroups, too few nodes, routing.quorumMaxInFlight, and that a
 * node that never answers neither holds the answer nor grows memory or descriptors without bound.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import t from 'tap';
import { createLogger } from '../../src/log/logger.js';
import { DEV_ADDRESS, startAnvil, type AnvilNode } from '../helpers/anvil.js';
import { startFakeNode, type FakeAnswer, type FakeNode } from '../helpers/fake-node.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { call, get, post, type RawResponse } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

type Json = Record<string, any>;
type Test = Parameters<typeof startFakeNode>[0];

/** What a proxy does with an eth_getBalance answer: forge it, and hold it until `release`. */
interface Behaviour {
  forge: ((result: string) => string) | null;
  hold: Promise<void> | null;
  /** Never answers eth_getBalance (a node that hangs). */
  hang?: boolean;
}

/** A proxy in front of `anvil`: every call forwarded; eth_getBalance answers forged or held as told. */
function proxy(t: Test, anvil: AnvilNode, b: Behaviour, answered?: () => void): Promise<FakeNode> {
  return startFakeNode(t, (method, params): FakeAnswer => {
    if (method === 'eth_getBalance' && b.hang === true) return { hang: true };
    return {
      defer: async () => {
        const r = await call(anvil.url, method, params);
        if (r.error) return { error: r.error };
        if (method !== 'eth_getBalance') return { result: r.result };
        if (b.hold !== null) await b.hold;
        const result = b.forge === null ? r.result : b.forge(r.result as string);
        answered?.();
        return { result };
      },
    };
  });
}

function gate(): { promise: Promise<void>; release: () => void } {
  let release!: () => void;
  const promise = new Promise<void>((r) => (release = r));
  return { promise, release };
}

const honest = (): Behaviour => ({ forge: null, hold: null });
const plus = (n: bigint) => (r: string) => `0x${(BigInt(r) + n).toString(16)}`;

async function stack(
  t: Test,
  upstreams: { name: string; url: string; group?: string }[],
  routing: Json,
  logger?: ReturnType<typeof createLogger>,
): Promise<RunningSwitchyard> {
  const sy = await startSwitchyard(
    t,
    {
      upstreams,
      routing: { headPollMs: 100, breaker: { failureThreshold: 1000, cooldownMs: 1000 }, ...routing },
    },
    { logger },
  );
  await waitFor('every upstream healthy', async () =>
    (await get(`${sy.adminUrl}/status`)).json().upstreams.every((u: { state: string }) => u.state === 'healthy'),
  );
  return sy;
}

async function metric(sy: RunningSwitchyard, name: string, labels: Record<string, string>): Promise<number> {
  return metricSamples((await get(`${sy.adminUrl}/metrics`)).text, name, labels).reduce((a, b) => a + b, 0);
}

function balance(sy: RunningSwitchyard, address = DEV_ADDRESS, id = 1): Promise<RawResponse> {
  return post(sy.url, { jsonrpc: '2.0', id, method: 'eth_getBalance', params: [address, 'latest'] });
}

const balanceCalls = (nodes: FakeNode[]): number =>
  nodes.reduce((n, f) => n + f.calls.filter((c) => c.method === 'eth_getBalance').length, 0);

const RULE = { quorum: [{ methods: ['eth_getBalance'], min: 2, of: 3 }] };

async function anvils(t: Test, n: number): Promise<AnvilNode[]> {
  const out: AnvilNode[] = [];
  for (let i = 0; i < n; i++) {
    const a = await startAnvil();
    t.teardown(() => a.stop());
    out.push(a);
  }
  return out;
}

t.test('one liar of three: the honest answer, 2/3, dissent counted for the liar also after the answer', async (t) => {
  const [a, b, c] = await anvils(t, 3);
  const truth = (await call(a!.url, 'eth_getBalance', [DEV_ADDRESS, 'latest'])).result as string;
  const lie: Behaviour = { forge: plus(1n), hold: null };
  const first = gate();
  // Round one: the liar answers after the client was answered; round two: the liar answers first.
  const liarDone = gate();
  const hb: Behaviour[] = [honest(), honest()];
  const nodes = [
    await proxy(t, a!, hb[0]!),
    await proxy(t, b!, hb[1]!),
    await proxy(t, c!, lie, () => liarDone.release()),
  ];
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const sy = await stack(
    t,
    [
      { name: 'a', url: nodes[0]!.url },
      { name: 'b', url: nodes[1]!.url },
      { name: 'liar', url: nodes[2]!.url },
    ],
    RULE,
    createLogger('warn', sink),
  );

  lie.hold = first.promise;
  const got = await balance(sy);
  t.equal(got.json().result, truth, "the client got the anvils' balance");
  t.equal(got.headers['x-switchyard-quorum'], '2/3', 'two of three agreed');
  t.equal(got.headers['x-switchyard-attempts'], '3', 'three nodes asked');
  t.equal(balanceCalls(nodes), 3, 'each node asked once');
  t.equal(
    await metric(sy, 'switchyard_upstream_dissent_total', { upstream: 'liar' }),
    0,
    'the liar has not answered yet',
  );
  first.release();
  await waitFor(
    'the late dissent is counted',
    async () => (await metric(sy, 'switchyard_upstream_dissent_total', { upstream: 'liar' })) === 1,
  );
  t.equal(await metric(sy, 'switchyard_quorum_calls_total', { method: 'eth_getBalance', outcome: 'agreed' }), 1);

  const again = await balance(sy, DEV_ADDRESS, 2);
  t.equal(again.json().result, truth, 'asked again: the same answer');
  t.equal(again.headers['x-switchyard-cache'], 'hit', 'the agreed answer was cached');
  t.equal(balanceCalls(nodes), 3, 'no node asked for the cached answer');

  // The liar first: the honest nodes hold their answers until it has answered.
  lie.hold = null;
  const liarFirst = gate();
  hb[0]!.hold = liarDone.promise.then(() => liarFirst.promise);
  hb[1]!.hold = hb[0]!.hold;
  const other = `0x${'22'.repeat(20)}`;
  const pending = balance(sy, other, 3);
  await waitFor(
    'the liar answered',
    async () =>
      (await metric(sy, 'switchyard_upstream_dissent_total', { upstream: 'liar' })) === 1 &&
      (await metric(sy, 'switchyard_upstream_calls_total', { upstream: 'liar', method: 'eth_getBalance' })) === 2,
  );
  liarFirst.release();
  const second = await pending;
  t.equal(second.json().result, (await call(a!.url, 'eth_getBalance', [other, 'latest'])).result, 'honest again');
  t.equal(second.headers['x-switchyard-quorum'], '2/3', '2/3 again');
  await waitFor(
    'the early dissent is counted',
    async () => (await metric(sy, 'switchyard_upstream_dissent_total', { upstream: 'liar' })) === 2,
  );
  t.equal(await metric(sy, 'switchyard_upstream_dissent_total', { upstream: 'a' }), 0, 'no dissent for a');
  t.equal(await metric(sy, 'switchyard_upstream_dissent_total', { upstream: 'b' }), 0, 'no dissent for b');
  const status = (await get(`${sy.adminUrl}/status`)).json();
  const liar = status.upstreams.find((u: Json) => u.name === 'liar');
  t.equal(liar.dissent, 2, '/status shows the dissent');
  t.equal(liar.group, 'liar', 'a node without a group is a group of its own');
  const warned = lines.map((l) => JSON.parse(l)).filter((l) => /differs from the agreed/.test(l.msg));
  t.equal(warned.length, 2, 'each dissent logged at warn');
  t.same(
    warned.map((w) => [w.upstream, w.method, typeof w.block]),
    [
      ['liar', 'eth_getBalance', 'number'],
      ['liar', 'eth_getBalance', 'number'],
    ],
    'with the node, the method and the block',
  );
  t.ok(
    warned.every((w) => typeof w.req === 'string' && w.req.length > 0),
    'and the request id',
  );
  t.notOk(lines.join('\n').toLowerCase().includes(other.slice(2)), 'never the params');
});

t.test('two nodes lying differently: NO_QUORUM dispute, not cached, no dissent', async (t) => {
  const [a, b, c] = await anvils(t, 3);
  const nodes = [
    await proxy(t, a!, honest()),
    await proxy(t, b!, { forge: plus(1n), hold: null }),
    await proxy(t, c!, { forge: plus(2n), hold: null }),
  ];
  const sy = await stack(
    t,
    nodes.map((n, i) => ({ name: `n${i}`, url: n.url })),
    RULE,
  );
  for (const id of [1, 2]) {
    const got = await balance(sy, DEV_ADDRESS, id);
    const body = got.json();
    t.equal(body.error?.code, -32002, `call ${id}: -32002`);
    t.equal(body.error?.data?.reason, 'NO_QUORUM', `call ${id}: NO_QUORUM`);
    t.equal(body.error?.data?.why, 'dispute', `call ${id}: why dispute`);
    t.equal(got.headers['x-switchyard-quorum'], '1/3', `call ${id}: 1/3`);
  }
  t.equal(balanceCalls(nodes), 6, 'asked again the second time: a dispute is not cached');
  t.equal(await metric(sy, 'switchyard_quorum_calls_total', { method: 'eth_getBalance', outcome: 'dispute' }), 2);
  t.equal(await metric(sy, 'switchyard_upstream_dissent_total', {}), 0, 'no agreed answer, no dissent');
});

t.test('too few nodes or groups: NO_QUORUM "too few nodes", no node asked', async (t) => {
  const [a, b, c] = await anvils(t, 3);
  const nodes = [await proxy(t, a!, honest()), await proxy(t, b!, honest()), await proxy(t, c!, honest())];

  t.test('fewer nodes than min', async (t) => {
    const sy = await stack(
      t,
      nodes.slice(0, 2).map((n, i) => ({ name: `n${i}`, url: n.url })),
      { quorum: [{ methods: ['eth_getBalance'], min: 3, of: 3 }] },
    );
    const before = balanceCalls(nodes);
    const got = await balance(sy);
    t.equal(got.json().error?.data?.reason, 'NO_QUORUM');
    t.equal(got.json().error?.data?.why, 'too few nodes');
    t.equal(got.headers['x-switchyard-quorum'], '0/0', 'none asked');
    t.equal(balanceCalls(nodes), before, 'no node asked');
    t.equal(await metric(sy, 'switchyard_quorum_calls_total', { method: 'eth_getBalance', outcome: 'too_few' }), 1);
  });

  t.test('one group where two are needed', async (t) => {
    const sy = await stack(
      t,
      nodes.map((n, i) => ({ name: `n${i}`, url: n.url, group: 'acme' })),
      { quorum: [{ methods: ['eth_getBalance'], min: 2, of: 3, minGroups: 2 }] },
    );
    const before = balanceCalls(nodes);
    const got = await balance(sy);
    t.equal(got.json().error?.data?.why, 'too few nodes');
    t.equal(balanceCalls(nodes), before, 'no node asked');
  });
});

t.test('minGroups: two nodes of one group agreeing are not enough', async (t) => {
  const [a, b, c] = await anvils(t, 3);
  const third: Behaviour = { forge: plus(1n), hold: null };
  let xAnswered = 0;
  let bothX = gate();
  const xDone = (): void => {
    if (++xAnswered % 2 === 0) bothX.release();
  };
  const nodes = [await proxy(t, a!, honest(), xDone), await proxy(t, b!, honest(), xDone), await proxy(t, c!, third)];
  const sy = await stack(
    t,
    [
      { name: 'x1', url: nodes[0]!.url, group: 'x' },
      { name: 'x2', url: nodes[1]!.url, group: 'x' },
      { name: 'y1', url: nodes[2]!.url, group: 'y' },
    ],
    { quorum: [{ methods: ['eth_getBalance'], min: 2, of: 3, minGroups: 2 }] },
  );
  // y1 answers last each time: x1 and x2 (one group) have agreed before it.
  third.hold = bothX.promise;
  const got = await balance(sy);
  t.equal(got.json().error?.data?.why, 'dispute', 'x1 and x2 agree, y1 does not: no quorum');
  t.equal(got.headers['x-switchyard-quorum'], '2/3', 'two agreed of three');

  third.forge = null;
  bothX = gate();
  third.hold = bothX.promise;
  let answered = false;
  const pending = balance(sy, DEV_ADDRESS, 2).then((r) => {
    answered = true;
    return r;
  });
  await bothX.promise;
  t.notOk(answered, 'not answered while only one group agreed');
  const ok = await pending;
  t.equal(ok.json().result, (await call(a!.url, 'eth_getBalance', [DEV_ADDRESS, 'latest'])).result);
  t.equal(ok.headers['x-switchyard-quorum'], '3/3', 'answered once the other group agreed too');
});

t.test('routing.quorumMaxInFlight: the next quorum call gets -32005 QUORUM_BUSY, sent to no node', async (t) => {
  const [a, b] = await anvils(t, 2);
  const hold = gate();
  const nodes = [
    await proxy(t, a!, { forge: null, hold: hold.promise }),
    await proxy(t, b!, { forge: null, hold: hold.promise }),
  ];
  const sy = await stack(
    t,
    nodes.map((n, i) => ({ name: `n${i}`, url: n.url })),
    { quorum: [{ methods: ['eth_getBalance'], min: 2, of: 2 }], quorumMaxInFlight: 2 },
  );
  const held = [balance(sy, `0x${'01'.repeat(20)}`, 1), balance(sy, `0x${'02'.repeat(20)}`, 2)];
  await waitFor('both quorum calls at the nodes', async () => balanceCalls(nodes) === 4);
  const busy = await balance(sy, `0x${'03'.repeat(20)}`, 3);
  t.equal(busy.json().error?.code, -32005);
  t.equal(busy.json().error?.data?.reason, 'QUORUM_BUSY');
  t.equal(balanceCalls(nodes), 4, 'the refused call went to no node');
  hold.release();
  for (const r of await Promise.all(held)) t.equal(r.headers['x-switchyard-quorum'], '2/2', 'the held calls agree');
  const after = await balance(sy, `0x${'03'.repeat(20)}`, 4);
  t.equal(after.headers['x-switchyard-quorum'], '2/2', 'a place again once they are done');
});

t.test('each node asked takes a token of its budget; a node out of budget is not asked', async (t) => {
  const [a, b, c] = await anvils(t, 3);
  const nodes = [await proxy(t, a!, honest()), await proxy(t, b!, honest()), await proxy(t, c!, honest())];
  // A budget that does not refill within the test: 4 calls, then none (other routed calls, such as
  // the chain feed's block fetches, may take some of them too).
  const sy = await stack(
    t,
    [
      { name: 'n0', url: nodes[0]!.url },
      { name: 'n1', url: nodes[1]!.url },
      { name: 'small', url: nodes[2]!.url, rateLimit: { ratePerSec: 0.001, burst: 4 } } as never,
    ],
    RULE,
  );
  const asked = (): number => nodes[2]!.calls.filter((x) => x.method === 'eth_getBalance').length;
  const headers: string[] = [];
  for (let i = 0; i < 8; i++) {
    const r = await balance(sy, `0x${(0x3100 + i).toString(16).padStart(40, '0')}`, i);
    t.ok(r.json().result !== undefined, `call ${i}: answered`);
    headers.push(String(r.headers['x-switchyard-quorum']));
  }
  t.ok(asked() <= 4, `the budgeted node got ${asked()} of the 8 quorum calls: no more than its budget`);
  t.equal(headers.filter((h) => h === '2/3').length, asked(), 'three asked while it had tokens (one token each call)');
  t.equal(headers.filter((h) => h === '2/2').length, 8 - asked(), 'then the other two, still making min');
  t.ok(
    (await metric(sy, 'switchyard_upstream_budget_exhausted_total', { upstream: 'small' })) >= 8 - asked(),
    'counted as out of budget',
  );
});

t.test('a null for a lookup that may lag votes but is no dissent', async (t) => {
  const [anvil] = await anvils(t, 1);
  const tx = (
    await call(anvil!.url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: `0x${'44'.repeat(20)}`, value: '0x1' }])
  ).result as string;
  const forward = (method: string, params: unknown[]): FakeAnswer => ({
    defer: async () => {
      const r = await call(anvil!.url, method, params);
      return r.error ? { error: r.error } : { result: r.result };
    },
  });
  const nodes = [
    await startFakeNode(t, forward),
    await startFakeNode(t, forward),
    // Has not seen the block yet: null for the transaction.
    await startFakeNode(t, (m, p) => (m === 'eth_getTransactionByHash' ? { result: null } : forward(m, p))),
  ];
  const sy = await stack(
    t,
    nodes.map((n, i) => ({ name: `n${i}`, url: n.url })),
    { quorum: [{ methods: ['eth_getTransactionByHash'], min: 2, of: 3 }] },
  );
  const got = await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_getTransactionByHash', params: [tx] });
  t.equal(got.json().result?.hash, tx, 'the transaction, as two nodes agree');
  t.equal(got.headers['x-switchyard-quorum'], '2/3');
  await waitFor(
    'the null answer came',
    async () =>
      (await metric(sy, 'switchyard_upstream_calls_total', { upstream: 'n2', method: 'eth_getTransactionByHash' })) ===
      1,
  );
  t.equal(await metric(sy, 'switchyard_upstream_dissent_total', {}), 0, 'no dissent for the null');
});

function rssBytes(): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(m![1]) * 1024;
}
const fds = (): number => readdirSync('/proc/self/fd').length;

t.test('a node that never answers holds neither the answer nor unbounded memory or descriptors', async (t) => {
  const [a, b, c] = await anvils(t, 3);
  const nodes = [
    await proxy(t, a!, honest()),
    await proxy(t, b!, honest()),
    await proxy(t, c!, { forge: null, hold: null, hang: true }),
  ];
  const MAX = 64;
  const sy = await startSwitchyard(t, {
    upstreams: nodes.map((n, i) => ({ name: i === 2 ? 'hangs' : `n${i}`, url: n.url })),
    server: { requestTimeoutMs: 120_000 },
    routing: {
      headPollMs: 100,
      breaker: { failureThreshold: 100_000, cooldownMs: 1000 },
      // Far longer than the test: an answer that waited for the hanging node would never come in time.
      upstreamTimeoutMs: 120_000,
      quorum: [{ methods: ['eth_getBalance'], min: 2, of: 3 }],
      quorumMaxInFlight: MAX,
    },
  });
  // Teardowns run last first: the hanging node goes before Switchyard, whose pools wait for calls in flight.
  t.teardown(() => nodes[2]!.close());
  await waitFor('every upstream healthy', async () =>
    (await get(`${sy.adminUrl}/status`)).json().upstreams.every((u: { state: string }) => u.state === 'healthy'),
  );
  const hung = (): number => nodes[2]!.calls.filter((x) => x.method === 'eth_getBalance').length;
  // Warm-up: the first calls make the connections and load the code paths measured below.
  for (let i = 0; i < 4; i++) await balance(sy, `0x${(0x1000 + i).toString(16).padStart(40, '0')}`, i);
  global.gc?.();
  const rss0 = rssBytes();
  const fd0 = fds();
  const N = 600;
  let agreed = 0;
  let busy = 0;
  let other = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < N) {
      const i = next++;
      const r = await balance(sy, `0x${(0x2000 + i).toString(16).padStart(40, '0')}`, i);
      const body = r.json();
      if (body.result !== undefined && r.headers['x-switchyard-quorum'] === '2/3') agreed++;
      else if (body.error?.data?.reason === 'QUORUM_BUSY') busy++;
      else other++;
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  t.equal(other, 0, 'every call agreed or was refused as busy');
  // The 4 warm-up calls hold places too: the hanging node answers none of them within the test.
  t.equal(agreed, MAX - 4, 'answered with 2/3 while the hanging node held its part, up to the bound');
  t.equal(busy, N - (MAX - 4), 'the rest refused at once, not queued');
  t.equal(hung(), MAX, 'the hanging node holds one call per quorum call in flight, no more');
  t.equal(
    await metric(sy, 'switchyard_upstream_calls_total', { upstream: 'hangs', outcome: 'timeout' }),
    0,
    'no answer waited for its timeout',
  );
  global.gc?.();
  const grown = rssBytes() - rss0;
  t.ok(grown < 64 * 1024 * 1024, `RSS grew ${Math.round(grown / 1024 / 1024)} MB (< 64 MB)`);
  const fdGrown = fds() - fd0;
  // One connection to the hanging node per call it holds, both of its ends in this process (the fake
  // node runs here too), plus, for 8 concurrent clients, the test's own connections, the ones to
  // the honest proxies and theirs to the anvils, and the head polls': a function of
  // quorumMaxInFlight and the concurrency (measured 150 to 187), not of the 600 calls made (a
  // descriptor kept per call would be 600 more).
  t.ok(fdGrown <= 2 * MAX + 128, `descriptors grew by ${fdGrown} (<= ${2 * MAX + 128})`);
});
