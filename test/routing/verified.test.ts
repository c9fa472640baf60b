/**
 * Verified answers (SPEC 4.9) through the whole service: a real anvil, and a node made to lie by a
 * fake node in front of the same anvil (forwarding every call, forging some answers), weighted so
 * that it is asked first. Each forgery is proven real by recomputing what it commits to
 * (verify/answer.ts) before it is used. Asserted: what the client got (always the anvil's own),
 * what was counted (wrong answers per node and method, unverified answers), what was cached (an
 * unverified answer is asked of the nodes again), that forged blocks answered in one batch exchange
 * are caught alike, and that 3 wrong answers quarantine the liar until routing.verify.quarantineMs.
 */
import t from 'tap';
import { checkAnswer } from '../../src/verify/answer.js';
import { DEV_ADDRESS, startAnvil, type AnvilNode } from '../helpers/anvil.js';
import { startFakeNode, type FakeAnswer, type FakeNode } from '../helpers/fake-node.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { call, get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

type Json = Record<string, any>;
type Forge = (method: string, params: unknown[], result: any) => unknown;

/** A fake node that forwards every call to `anvil` and hands each result to `forge` first. */
function liar(
  t: Parameters<typeof startFakeNode>[0],
  anvil: AnvilNode,
  forge: { now: Forge | null },
): Promise<FakeNode> {
  return startFakeNode(
    t,
    (method, params): FakeAnswer => ({
      defer: async () => {
        const r = await call(anvil.url, method, params);
        if (r.error) return { error: r.error };
        return { result: forge.now === null ? r.result : forge.now(method, params, r.result) };
      },
    }),
  );
}

async function stack(
  t: Parameters<typeof startFakeNode>[0],
  upstreams: { name: string; url: string; weight?: number; group?: string }[],
  verify = {},
): Promise<RunningSwitchyard> {
  const sy = await startSwitchyard(t, {
    upstreams,
    routing: { headPollMs: 100, breaker: { failureThreshold: 1000, cooldownMs: 1000 }, verify },
  });
  await waitFor('every upstream healthy', async () =>
    (await get(`${sy.adminUrl}/status`)).json().upstreams.every((u: { state: string }) => u.state === 'healthy'),
  );
  return sy;
}

async function ask(sy: RunningSwitchyard, method: string, params: unknown[]): Promise<Json> {
  return (await post(sy.url, { jsonrpc: '2.0', id: 7, method, params })).json() as Json;
}

async function metric(sy: RunningSwitchyard, name: string, labels: Record<string, string>): Promise<number> {
  return metricSamples((await get(`${sy.adminUrl}/metrics`)).text, name, labels).reduce((a, b) => a + b, 0);
}

/** A chain with a few transactions of types 0, 1 and 2 in one block, then enough blocks that it is final. */
async function chain(anvil: AnvilNode): Promise<{ block: string; tx: string }> {
  await call(anvil.url, 'evm_setAutomine', [false]);
  const to = `0x${'11'.repeat(20)}`;
  const sent = [
    { from: DEV_ADDRESS, to, value: '0x1', gasPrice: '0x77359400' },
    { from: DEV_ADDRESS, to, value: '0x2', gasPrice: '0x77359400', accessList: [] },
    { from: DEV_ADDRESS, to, value: '0x3' },
  ];
  let tx = '';
  for (const s of sent) tx = (await call(anvil.url, 'eth_sendTransaction', [s])).result as string;
  await call(anvil.url, 'evm_mine', []);
  await call(anvil.url, 'evm_setAutomine', [true]);
  await call(anvil.url, 'anvil_mine', ['0x50']);
  return { block: '0x1', tx };
}

t.test('forged answers are never served: the honest node answers, the liar is counted', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const { block, tx } = await chain(anvil);
  const truth = (await call(anvil.url, 'eth_getBlockByNumber', [block, true])).result as Json;
  t.equal(truth.transactions.length, 3, 'the block holds the three transactions');
  const forge: { now: Forge | null } = { now: null };
  const fake = await liar(t, anvil, forge);
  // The liar stays routable: quarantine is the next test's.
  const sy = await stack(
    t,
    [
      { name: 'anvil', url: anvil.url },
      { name: 'liar', url: fake.url, weight: 1000 },
    ],
    { quarantineAfter: 1000 },
  );

  const cases: { name: string; method: string; params: unknown[]; forge: Forge }[] = [
    {
      name: 'a header field changed under the real hash',
      method: 'eth_getBlockByNumber',
      params: [block, false],
      forge: (m, p, r) => (m === 'eth_getBlockByNumber' && p[0] === block ? { ...r, gasUsed: '0x1' } : r),
    },
    {
      name: 'a transaction of the block with another value',
      method: 'eth_getBlockByNumber',
      params: [block, true],
      forge: (m, p, r) =>
        m === 'eth_getBlockByNumber' && p[0] === block && p[1] === true
          ? { ...r, transactions: r.transactions.map((x: Json, i: number) => (i === 1 ? { ...x, value: '0x64' } : x)) }
          : r,
    },
    {
      name: 'a transaction by hash with another value',
      method: 'eth_getTransactionByHash',
      params: [tx],
      forge: (m, _p, r) => (m === 'eth_getTransactionByHash' ? { ...r, value: '0x64' } : r),
    },
    {
      name: 'forged receipts under the real block hash',
      method: 'eth_getBlockReceipts',
      params: [block],
      forge: (m, _p, r) =>
        m === 'eth_getBlockReceipts' ? r.map((x: Json, i: number) => (i === 0 ? { ...x, status: '0x0' } : x)) : r,
    },
  ];
  for (const c of cases) {
    const right = (await call(anvil.url, c.method, c.params)).result;
    const forged = c.forge(c.method, c.params, structuredClone(right));
    t.not(JSON.stringify(forged), JSON.stringify(right), `${c.name}: the forgery changes the answer`);
    const check = checkAnswer(c.method, JSON.stringify(c.params), JSON.stringify(forged));
    // Receipts are held to their block's root: recompute it here to prove them forged.
    if (check.is === 'receipts')
      t.not(check.receiptsRoot, truth.receiptsRoot, `${c.name}: the forgery's root is not the block's`);
    else t.equal(check.is, 'wrong', `${c.name}: the forgery does not verify (${JSON.stringify(check)})`);
    t.same(
      checkAnswer(c.method, JSON.stringify(c.params), JSON.stringify(right)).is === 'wrong',
      false,
      `${c.name}: the truth verifies`,
    );

    forge.now = c.forge;
    const before = fake.calls.length;
    const wrongBefore = await metric(sy, 'switchyard_upstream_wrong_answers_total', {
      upstream: 'liar',
      method: c.method,
    });
    const got = await ask(sy, c.method, c.params);
    t.same(got.result, right, `${c.name}: the client got the anvil's answer`);
    t.ok(
      fake.calls.slice(before).some((x) => x.method === c.method),
      `${c.name}: the liar was asked`,
    );
    t.equal(
      await metric(sy, 'switchyard_upstream_wrong_answers_total', { upstream: 'liar', method: c.method }),
      wrongBefore + 1,
      `${c.name}: one wrong answer counted against the liar`,
    );
    forge.now = null;
  }
  t.equal(
    await metric(sy, 'switchyard_upstream_wrong_answers_total', { upstream: 'anvil' }),
    0,
    'none against the anvil',
  );
});

t.test('3 wrong answers quarantine the node, and /status says why', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const { block } = await chain(anvil);
  const forge: { now: Forge | null } = {
    now: (m, p, r) =>
      m === 'eth_getBlockByNumber' && p[0] !== 'latest' && p[0] !== 'finalized'
        ? { ...r, stateRoot: `0x${'00'.repeat(32)}` }
        : r,
  };
  const fake = await liar(t, anvil, forge);
  const sy = await stack(t, [
    { name: 'anvil', url: anvil.url },
    { name: 'liar', url: fake.url, weight: 1000 },
  ]);
  for (const n of ['0x2', '0x3', '0x4']) {
    const got = await ask(sy, 'eth_getBlockByNumber', [n, false]);
    t.equal(got.result?.number, n, `block ${n}: the anvil's answer`);
  }
  t.equal(
    await metric(sy, 'switchyard_upstream_wrong_answers_total', { upstream: 'liar' }),
    3,
    'three wrong answers counted (the liar was asked first each time)',
  );
  const status = (await get(`${sy.adminUrl}/status`)).json();
  const liarStatus = status.upstreams.find((u: Json) => u.name === 'liar');
  t.equal(liarStatus.state, 'quarantined', 'the liar is quarantined');
  t.equal(liarStatus.quarantine?.why, 'wrong answers', '/status says why');
  t.equal(liarStatus.wrongAnswers, 3, '/status counts its wrong answers');
  t.equal(status.upstreams.find((u: Json) => u.name === 'anvil').wrongAnswers, 0, 'and none for the honest node');
  t.ok(Date.parse(liarStatus.quarantine?.until) > Date.now() + 9 * 60_000, 'for about 10 minutes');
  t.equal(await metric(sy, 'switchyard_upstream_quarantined_total', { upstream: 'liar' }), 1, 'the quarantine counted');
  const before = fake.calls.filter((c) => c.method === 'eth_getBlockByNumber' && c.params[0] === block).length;
  t.same(
    (await ask(sy, 'eth_getBlockByNumber', [block, true])).result,
    (await call(anvil.url, 'eth_getBlockByNumber', [block, true])).result,
    'calls go on being answered',
  );
  t.equal(
    fake.calls.filter((c) => c.method === 'eth_getBlockByNumber' && c.params[0] === block).length,
    before,
    'the quarantined liar is not asked',
  );
});

t.test('a header with an unknown member: served only when another node returns the same, never cached', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  await chain(anvil);
  const pad: Forge = (m, _p, r) =>
    m.startsWith('eth_getBlockBy') && r !== null ? { ...r, futureRoot: `0x${'ee'.repeat(32)}` } : r;
  const padded = {
    ...((await call(anvil.url, 'eth_getBlockByNumber', ['0x2', false])).result as Json),
    futureRoot: `0x${'ee'.repeat(32)}`,
  };
  t.equal(
    checkAnswer('eth_getBlockByNumber', '["0x2",false]', JSON.stringify(padded)).is,
    'unverified',
    'the padded header cannot be verified',
  );

  t.test('one node pads: the honest answer is served', async (t) => {
    const fake = await liar(t, anvil, { now: pad });
    const sy = await stack(t, [
      { name: 'anvil', url: anvil.url },
      { name: 'liar', url: fake.url, weight: 1000 },
    ]);
    const before = fake.calls.length;
    const got = await ask(sy, 'eth_getBlockByNumber', ['0x2', false]);
    t.same(got.result, (await call(anvil.url, 'eth_getBlockByNumber', ['0x2', false])).result, "the anvil's answer");
    t.ok(fake.calls.length > before, 'the padding node was asked');
    t.equal(
      await metric(sy, 'switchyard_answers_unverified_total', { method: 'eth_getBlockByNumber' }),
      1,
      'counted unverified',
    );
    t.equal(await metric(sy, 'switchyard_upstream_wrong_answers_total', {}), 0, 'not a wrong answer');
  });

  t.test('two nodes return the same padded block: served, and asked again next time', async (t) => {
    const a = await liar(t, anvil, { now: pad });
    const b = await liar(t, anvil, { now: pad });
    const sy = await stack(t, [
      { name: 'a', url: a.url },
      { name: 'b', url: b.url },
    ]);
    const asked = (): number =>
      [...a.calls, ...b.calls].filter((c) => c.method === 'eth_getBlockByNumber' && c.params[0] === '0x2').length;
    const got = await ask(sy, 'eth_getBlockByNumber', ['0x2', false]);
    t.same(got.result, padded, 'the padded block, which both returned');
    t.equal(asked(), 2, 'both nodes were asked');
    const again = await ask(sy, 'eth_getBlockByNumber', ['0x2', false]);
    t.same(again.result, padded, 'served again');
    t.equal(asked(), 4, 'asked of the nodes again: it was not cached');
    const counted = await metric(sy, 'switchyard_answers_unverified_total', { method: 'eth_getBlockByNumber' });
    // At least these four: the fleet's own feed of new blocks (subscriptions/chain.ts) is counted too.
    t.ok(counted >= 4, `each node answer counted (${counted})`);
  });
});

t.test('an unverifiable block is confirmed by a node of another group where there is one', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  await chain(anvil);
  const pad: Forge = (m, _p, r) =>
    m.startsWith('eth_getBlockByNumber') && r !== null ? { ...r, futureRoot: `0x${'ee'.repeat(32)}` } : r;
  const truth = (await call(anvil.url, 'eth_getBlockByNumber', ['0x2', false])).result as Json;

  t.test('two padding nodes of one group, an honest node of another: the honest answer', async (t) => {
    const a = await liar(t, anvil, { now: pad });
    const b = await liar(t, anvil, { now: pad });
    // The padding nodes are asked first (weight); the anvil only when their agreement is not enough.
    const sy = await stack(
      t,
      [
        { name: 'a', url: a.url, weight: 1000, group: 'acme' },
        { name: 'b', url: b.url, weight: 1000, group: 'acme' },
        { name: 'anvil', url: anvil.url, weight: 0.001 },
      ],
      { quarantineAfter: 1000 },
    );
    const asked = (): number =>
      [...a.calls, ...b.calls].filter((c) => c.method === 'eth_getBlockByNumber' && c.params[0] === '0x2').length;
    const got = await ask(sy, 'eth_getBlockByNumber', ['0x2', false]);
    t.same(got.result, truth, "the anvil's block: one operator's two nodes do not confirm each other");
    t.equal(asked(), 2, 'both padding nodes were asked first');
  });

  t.test('two padding nodes of one group and no other group: served', async (t) => {
    const a = await liar(t, anvil, { now: pad });
    const b = await liar(t, anvil, { now: pad });
    const sy = await stack(t, [
      { name: 'a', url: a.url, group: 'acme' },
      { name: 'b', url: b.url, group: 'acme' },
    ]);
    const got = await ask(sy, 'eth_getBlockByNumber', ['0x2', false]);
    t.same(got.result, { ...truth, futureRoot: `0x${'ee'.repeat(32)}` }, 'no other group is there: the padded block');
  });
});

t.test('forged blocks in a batch (one exchange with the liar) are answered from the honest node', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  await chain(anvil);
  const blocks = ['0x2', '0x3', '0x4'];
  // A batch is answered synchronously by the fake node: the forgeries are made beforehand.
  const forged = new Map<string, Json>();
  for (const n of blocks)
    forged.set(n, { ...((await call(anvil.url, 'eth_getBlockByNumber', [n, false])).result as Json), gasLimit: '0x1' });
  const fake = await startFakeNode(
    t,
    (method, params): FakeAnswer => {
      const lie = method === 'eth_getBlockByNumber' ? forged.get(params[0] as string) : undefined;
      if (lie !== undefined) return { result: lie };
      return {
        defer: async () => {
          const r = await call(anvil.url, method, params);
          return r.error ? { error: r.error } : { result: r.result };
        },
      };
    },
    { batches: true },
  );
  const sy = await stack(
    t,
    [
      { name: 'anvil', url: anvil.url },
      { name: 'liar', url: fake.url, weight: 1000 },
    ],
    { quarantineAfter: 1000 },
  );
  const body = blocks.map((n, id) => ({ jsonrpc: '2.0', id, method: 'eth_getBlockByNumber', params: [n, false] }));
  const got = (await post(sy.url, body)).json() as Json[];
  for (const [i, n] of blocks.entries())
    t.same(
      got[i]?.result,
      (await call(anvil.url, 'eth_getBlockByNumber', [n, false])).result,
      `block ${n}: the anvil's`,
    );
  t.ok(
    fake.calls.some((c) => (c.batch ?? 1) > 1 && c.method === 'eth_getBlockByNumber'),
    'the liar got them in one batch',
  );
  t.equal(await metric(sy, 'switchyard_upstream_wrong_answers_total', { upstream: 'liar' }), 3, 'each counted');
});

t.test('a quarantine for wrong answers ends after routing.verify.quarantineMs', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  await chain(anvil);
  const forge: { now: Forge | null } = {
    now: (m, p, r) =>
      m === 'eth_getBlockByNumber' && p[0] !== 'latest' && p[0] !== 'finalized' ? { ...r, gasLimit: '0x1' } : r,
  };
  const fake = await liar(t, anvil, forge);
  const sy = await stack(
    t,
    [
      { name: 'anvil', url: anvil.url },
      { name: 'liar', url: fake.url, weight: 1000 },
    ],
    { quarantineMs: 1500 },
  );
  for (const n of ['0x2', '0x3', '0x4']) await ask(sy, 'eth_getBlockByNumber', [n, false]);
  const liarState = async (): Promise<Json> =>
    (await get(`${sy.adminUrl}/status`)).json().upstreams.find((u: Json) => u.name === 'liar');
  t.equal((await liarState()).quarantine?.why, 'wrong answers', 'quarantined');
  forge.now = null;
  await waitFor('the quarantine ends', async () => (await liarState()).state === 'healthy', { timeoutMs: 20_000 });
  t.equal((await liarState()).quarantine, null, '/status shows no quarantine any more');
});
