/**
 * Shadow upstreams (SPEC 4.8, upstreams[].shadow): a regular anvil answers clients, a shadow gets
 * copies of the sampled reads (routing.shadowSampleRate 1 here) after the answer was written.
 * Pinned: copies of reads at a block reach a shadow anvil of the same chain and match; a shadow
 * that answers otherwise counts mismatches, logged with method, request id and block and never the
 * params or results; a shadow that never answers costs clients nothing and holds at most
 * routing.shadowMaxInFlight copies (the rest skipped); a pruned shadow gets no copy of a state it
 * no longer keeps, nor a debug read without debug (skipped, not counted as its failure); a shadow never gets a client's call, even
 * when it is the only healthy node (NO_UPSTREAM `only shadow nodes`), nor a transaction.
 */
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { validateConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log/logger.js';
import { sameJson } from '../../src/routing/shadow.js';
import { startAnvil, type AnvilNode } from '../helpers/anvil.js';
import { startFakeNode } from '../helpers/fake-node.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { call, get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { signTransfer } from '../helpers/transfer.js';
import { waitFor } from '../helpers/wait.js';

async function anvil(t: Test, args?: string[]): Promise<AnvilNode> {
  const a = await startAnvil({ args });
  t.teardown(() => a.stop());
  return a;
}

/**
 * Two anvils of one chain: one genesis timestamp for both. Started a second apart, two anvils have
 * different genesis blocks (the timestamp is the start time), and block 0's copy differs (ANVIL-FACTS).
 */
function sameChain(t: Test): Promise<[AnvilNode, AnvilNode]> {
  const genesis = ['--timestamp', String(Math.floor(Date.now() / 1000))];
  return Promise.all([anvil(t, genesis), anvil(t, genesis)]);
}

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

async function shadowCalls(sy: RunningSwitchyard, labels: Record<string, string>): Promise<number> {
  return sum(metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_shadow_calls_total', labels));
}

async function clientCallsTo(sy: RunningSwitchyard, upstream: string): Promise<number> {
  return sum(
    metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_upstream_calls_total', { upstream }),
  );
}

/** Each read asks for another address: none is answered from the cache or joins another in flight. */
let nextAddress = 0x1000;
const address = (): string => `0x${(nextAddress++).toString(16).padStart(40, '0')}`;

async function shadowRoutable(sy: RunningSwitchyard, name: string): Promise<boolean> {
  const s = (await get(`${sy.adminUrl}/status`)).json();
  return s.upstreams.some(
    (u: { name: string; routable: boolean; shadow: boolean }) => u.name === name && u.routable && u.shadow,
  );
}

t.test('sampled reads pinned to a block reach the shadow and match; other reads are not copied', async (t) => {
  const [a, s] = await sameChain(t);
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'main', url: a.url },
      { name: 'canary', url: s.url, shadow: true },
    ],
    routing: { shadowSampleRate: 1 },
  });
  await waitFor('the shadow routable for copies', () => shadowRoutable(sy, 'canary'));
  for (let i = 0; i < 10; i++) {
    const r = await call(sy.url, 'eth_getBalance', [address(), 'latest']);
    t.equal(r.result, '0x0', 'the regular node answers');
  }
  // A block by number with its keys in whatever order: compared after parsing.
  t.ok((await call(sy.url, 'eth_getBlockByNumber', ['0x0', false])).result, 'block 0 answered');
  // Every copy is accounted for. On a loaded machine a copy may find the shadow unroutable for a
  // moment (skipped) or slow (error): correct, and not what this test is about. What it is about:
  // copies went, and none that was answered differed.
  await waitFor('11 copies counted', async () => (await shadowCalls(sy, { upstream: 'canary' })) === 11);
  t.equal(await shadowCalls(sy, { upstream: 'canary', outcome: 'mismatch' }), 0, 'no copy differed');
  t.ok((await shadowCalls(sy, { upstream: 'canary', outcome: 'match' })) >= 1, 'copies reached the shadow and matched');
  // Reads whose answer is not fixed by a block are never copied.
  await call(sy.url, 'eth_gasPrice');
  await call(sy.url, 'eth_getBalance', [address(), 'pending']);
  const text = (await get(`${sy.adminUrl}/metrics`)).text;
  t.equal(sum(metricSamples(text, 'switchyard_shadow_calls_total', { upstream: 'canary' })), 11, 'nothing else copied');
  t.equal(
    sum(metricSamples(text, 'switchyard_shadow_calls_total', { upstream: 'canary', method: 'eth_getBalance' })),
    10,
    'counted by method',
  );
  t.equal(await clientCallsTo(sy, 'canary'), 0, 'the shadow answered no client');
  t.ok((await clientCallsTo(sy, 'main')) >= 13, 'the regular node answered them all');
});

t.test('a shadow that answers otherwise counts mismatches, logged without params or results', async (t) => {
  const a = await anvil(t);
  const fake = await startFakeNode(t, (method) => (method === 'eth_getBalance' ? { result: '0x2a' } : undefined));
  fake.head = 0;
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const sy = await startSwitchyard(
    t,
    {
      upstreams: [
        { name: 'main', url: a.url },
        { name: 'canary', url: fake.url, shadow: true },
      ],
      routing: { shadowSampleRate: 1 },
    },
    { logger: createLogger('warn', sink) },
  );
  await waitFor('the shadow routable for copies', () => shadowRoutable(sy, 'canary'));
  const asked: string[] = [];
  for (let i = 0; i < 5; i++) {
    const who = address();
    asked.push(who.slice(2));
    const r = await post(
      sy.url,
      { jsonrpc: '2.0', id: i, method: 'eth_getBalance', params: [who, 'latest'] },
      {
        'x-request-id': `shadow-test-${i}`,
      },
    );
    t.equal(r.json().result, '0x0', 'the client gets the regular node answer');
  }
  await waitFor(
    '5 mismatches counted',
    async () => (await shadowCalls(sy, { upstream: 'canary', outcome: 'mismatch' })) === 5,
  );
  const warned = lines.map((l) => JSON.parse(l)).filter((l) => /shadow upstream answered/.test(l.msg));
  t.equal(warned.length, 5, 'one warn line per mismatch');
  t.match(warned[0], { level: 'warn', upstream: 'canary', method: 'eth_getBalance', req: 'shadow-test-0', block: 0 });
  t.same(
    warned.map((l) => l.req),
    [0, 1, 2, 3, 4].map((i) => `shadow-test-${i}`),
    'each with its request id',
  );
  const text = lines.join('\n').toLowerCase();
  t.notOk(
    asked.some((who) => text.includes(who)),
    'no params in the log',
  );
  t.notOk(text.includes('0x2a'), 'no results in the log');
  t.equal(await shadowCalls(sy, { upstream: 'canary', outcome: 'match' }), 0, 'no match counted');
});

t.test('a shadow that never answers costs clients nothing and holds at most shadowMaxInFlight copies', async (t) => {
  const a = await anvil(t);
  const fake = await startFakeNode(t, (method) => (method === 'eth_getBalance' ? { hang: true } : undefined));
  fake.head = 0;
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'main', url: a.url },
      { name: 'canary', url: fake.url, shadow: true },
    ],
    routing: { shadowSampleRate: 1, shadowMaxInFlight: 4, upstreamTimeoutMs: 60_000 },
    server: { requestTimeoutMs: 60_000 },
  });
  await waitFor('the shadow routable for copies', () => shadowRoutable(sy, 'canary'));
  const latencies: number[] = [];
  for (let i = 0; i < 20; i++) {
    const started = performance.now();
    const r = await call(sy.url, 'eth_getBalance', [address(), 'latest']);
    latencies.push(performance.now() - started);
    t.equal(r.result, '0x0', `read ${i} answered`);
  }
  await waitFor(
    '16 copies skipped',
    async () => (await shadowCalls(sy, { upstream: 'canary', outcome: 'skipped' })) === 16,
  );
  const slowest = Math.max(...latencies);
  t.ok(slowest < 2_000, `no read waited for the shadow: slowest ${Math.round(slowest)} ms (its copies hang for 60 s)`);
  t.equal(fake.calls.filter((c) => c.method === 'eth_getBalance').length, 4, 'the shadow holds 4 copies, no more');
  t.equal(await shadowCalls(sy, { upstream: 'canary', outcome: 'match' }), 0, 'none answered');
  // The hanging copies end with the shadow's sockets: closing Switchyard need not wait out their timeout.
  await fake.close();
});

t.test('a pruned shadow gets no copy of a state it no longer keeps: skipped, not an error', async (t) => {
  // anvil with --prune-history 5 keeps the state of its last 6 blocks (ANVIL-FACTS) and answers a
  // balance below them with an error: a copy sent there counted as the shadow failing.
  const [a, s] = await Promise.all([anvil(t), anvil(t, ['--prune-history', '5'])]);
  for (const n of [a, s]) await call(n.url, 'anvil_mine', ['0x1e']);
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'main', url: a.url },
      { name: 'canary', url: s.url, shadow: true, discover: true },
    ],
    routing: { shadowSampleRate: 1 },
  });
  await waitFor('the shadow routable for copies', () => shadowRoutable(sy, 'canary'));
  const earliest = await waitFor('the shadow discovered', async () => {
    const st = (await get(`${sy.adminUrl}/status`)).json();
    return st.upstreams.find((u: { name: string }) => u.name === 'canary')?.earliestBlock ?? false;
  });
  t.equal(earliest, 25, "the shadow's earliest block with state is 25");
  // Balances of new addresses are 0x0 on any chain: both nodes agree wherever both have the state.
  for (const block of ['0x3', '0x3', '0x3', '0x1c', '0x1c']) {
    const r = await call(sy.url, 'eth_getBalance', [address(), block]);
    t.equal(r.result, '0x0', `the regular node answers a read at ${block}`);
  }
  await waitFor('5 copies counted', async () => (await shadowCalls(sy, { upstream: 'canary' })) === 5);
  t.equal(await shadowCalls(sy, { upstream: 'canary', outcome: 'skipped' }), 3, 'the reads at block 3 were skipped');
  t.equal(
    (await shadowCalls(sy, { upstream: 'canary', outcome: 'error' })) +
      (await shadowCalls(sy, { upstream: 'canary', outcome: 'mismatch' })),
    0,
    'no error nor mismatch',
  );
  t.equal(await shadowCalls(sy, { upstream: 'canary', outcome: 'match' }), 2, 'the reads at block 28 matched');
});

t.test('a shadow without debug gets no copy of a debug read; its other reads still go', async (t) => {
  // Both anvils serve debug; only the regular one is known to (tagged): the shadow is not.
  const [a, s] = await sameChain(t);
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'main', url: a.url, tags: ['debug'] },
      { name: 'canary', url: s.url, shadow: true },
    ],
    routing: { shadowSampleRate: 1 },
  });
  await waitFor('the shadow routable for copies', () => shadowRoutable(sy, 'canary'));
  const traced = await call(sy.url, 'debug_traceBlockByNumber', ['0x0', { tracer: 'callTracer' }]);
  t.ok(Array.isArray(traced.result), 'the regular node answers the debug read');
  t.equal((await call(sy.url, 'eth_getBalance', [address(), '0x0'])).result, '0x0', 'and a balance');
  await waitFor('2 copies counted', async () => (await shadowCalls(sy, { upstream: 'canary' })) === 2);
  t.equal(
    await shadowCalls(sy, { upstream: 'canary', method: 'debug_traceBlockByNumber', outcome: 'skipped' }),
    1,
    'the debug read was skipped',
  );
  t.equal(
    await shadowCalls(sy, { upstream: 'canary', method: 'eth_getBalance', outcome: 'match' }),
    1,
    'the balance was copied and matched',
  );
});

t.test('a shadow never gets a client call or a transaction, even as the only healthy node', async (t) => {
  const [a, s] = await Promise.all([anvil(t), anvil(t)]);
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'main', url: a.url },
      { name: 'canary', url: s.url, shadow: true },
    ],
    routing: { shadowSampleRate: 1, broadcastTransactions: true, breaker: { failureThreshold: 1 } },
  });
  await waitFor('the shadow routable for copies', () => shadowRoutable(sy, 'canary'));
  const sent = await call(sy.url, 'eth_sendRawTransaction', [await signTransfer(0)]);
  t.type(sent.result, 'string', 'the transaction went to the regular node');
  t.same((await call(a.url, 'eth_getTransactionByHash', [sent.result])).result?.hash, sent.result, 'mined there');
  t.equal((await call(s.url, 'eth_getTransactionByHash', [sent.result])).result, null, 'the shadow never saw it');
  t.equal(await clientCallsTo(sy, 'canary'), 0, 'no client call reached the shadow');

  await a.stop();
  await waitFor('only the shadow routable', async () => {
    const st = (await get(`${sy.adminUrl}/status`)).json();
    return st.upstreams.every((u: { routable: boolean; shadow: boolean }) => u.routable === u.shadow);
  });
  const read = await call(sy.url, 'eth_getBalance', [address(), 'latest']);
  t.match(
    read.error,
    { code: -32002, data: { why: 'only shadow nodes' } },
    'a read gets NO_UPSTREAM: only shadow nodes',
  );
  const tx = await call(sy.url, 'eth_sendRawTransaction', [await signTransfer(1)]);
  t.match(tx.error, { code: -32002, data: { why: 'only shadow nodes' } }, 'so does a transaction');
  t.equal(await clientCallsTo(sy, 'canary'), 0, 'still no client call reached the shadow');
  t.equal(
    (await get(`${sy.adminUrl}/ready?upstreams=1`)).status,
    503,
    'a healthy shadow is no upstream for /ready?upstreams=1',
  );
});

t.test('answers are compared after parsing; a fleet of shadows only is refused', async (t) => {
  t.ok(
    sameJson('{"a":1,"b":[1,{"c":"0x1","d":null}]}', '{ "b": [1, {"d": null, "c": "0x1"}], "a": 1 }'),
    'key order aside',
  );
  t.notOk(sameJson('{"a":"0x1"}', '{"a":"0x01"}'), 'values differ');
  t.notOk(sameJson('"0x1"', 'not json'), 'text that is not JSON equals nothing');
  t.throws(
    () => validateConfig({ upstreams: [{ name: 'canary', url: 'http://127.0.0.1:1', shadow: true }] }),
    /upstreams: expected at least one upstream without shadow: true/,
    'refused at start with the key path',
  );
});
