/**
 * Upstream budgets (SPEC 4.8, docs/routing.md "Upstream budgets") against two real anvil nodes of
 * one devnet chain: calls past a node's budget go to the other node, a batch element is a call, and
 * when every node is out of budget the call gets -32005 UPSTREAM_BUDGET at once; /status and the
 * metrics show what is left; a broadcast transaction sends a copy only to nodes with budget; a reload
 * keeps a budget whose node and rateLimit stay. Budgets here refill once in many hours (ratePerSec 0.0001), so no count
 * depends on where a window ends; node `a` weighs 1000 times `b`, so it is the one chosen while it
 * has budget. Switchyard's own chain feed reads the head block through routing as well (a call to a
 * node like any other, so it spends budget): each test first waits for that read, and counts from there.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevnet } from '../../src/devnet/index.js';
import { signTransfer, TRANSFER_FROM } from '../helpers/transfer.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { call, get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const devnet = await startDevnet({ nodes: 2, chainId: 186, blockTimeMs: 0, basePort: 0 });
t.teardown(() => devnet.stop());
const [nodeA, nodeB] = devnet.nodes();

/** `burst` calls, refilled after burst x 10000 seconds: never within a test. */
const budget = (burst: number) => ({ ratePerSec: 0.0001, burst });

function proxy(t: Test, a: number | null, b: number | null, broadcast = false): Promise<RunningSwitchyard> {
  return startSwitchyard(t, {
    ...(broadcast ? { routing: { broadcastTransactions: true } } : {}),
    upstreams: [
      { name: 'a', url: nodeA!.url, weight: 1000, rateLimit: a === null ? null : budget(a) },
      { name: 'b', url: nodeB!.url, rateLimit: b === null ? null : budget(b) },
    ],
  });
}

let address = 0;
/** A balance read no earlier call made: never answered from the cache. */
const freshRead = (): [string, unknown[]] => [
  'eth_getBalance',
  [`0x${(++address).toString(16).padStart(40, '0')}`, 'latest'],
];

async function metric(sy: RunningSwitchyard, name: string, labels: Record<string, string> = {}): Promise<number[]> {
  return metricSamples((await get(`${sy.adminUrl}/metrics`)).text, name, labels);
}
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
const callsTo = async (sy: RunningSwitchyard, upstream: string): Promise<number> =>
  sum(await metric(sy, 'switchyard_upstream_calls_total', { upstream }));
const exhausted = async (sy: RunningSwitchyard, upstream: string): Promise<number> =>
  sum(await metric(sy, 'switchyard_upstream_budget_exhausted_total', { upstream }));

/** Calls each node got once the chain feed has read the head block (no block is mined after it). */
async function settled(sy: RunningSwitchyard): Promise<{ a: number; b: number }> {
  await waitFor(
    "the chain feed's read of the head block",
    async () => sum(await metric(sy, 'switchyard_upstream_calls_total', { method: 'eth_getBlockByNumber' })) >= 1,
  );
  return { a: await callsTo(sy, 'a'), b: await callsTo(sy, 'b') };
}

async function budgetOf(sy: RunningSwitchyard, name: string): Promise<Record<string, unknown> | null> {
  const status = (await get(`${sy.adminUrl}/status`)).json() as { upstreams: { name: string; budget: unknown }[] };
  return status.upstreams.find((u) => u.name === name)!.budget as Record<string, unknown> | null;
}

t.test('calls past a node budget go to the other node; /status and metrics show what is left', async (t) => {
  const sy = await proxy(t, 3, null);
  const base = await settled(sy);
  const left = 3 - base.a;
  t.same(
    await budgetOf(sy, 'a'),
    { ratePerSec: 0.0001, burst: 3, windowSec: 30000, remaining: left, shared: null },
    `the budget less the feed's read (${base.a})`,
  );
  t.equal(await budgetOf(sy, 'b'), null, 'no budget on b');
  for (let i = 0; i < 10; i++) {
    const [method, params] = freshRead();
    t.equal((await call(sy.url, method, params)).result, '0x0', `call ${i + 1} answered`);
  }
  t.equal((await callsTo(sy, 'a')) - base.a, left, 'a got what was left of its budget');
  t.equal((await callsTo(sy, 'b')) - base.b, 10 - left, 'the rest went to b');
  t.equal(await exhausted(sy, 'a'), 10 - left, 'each call a turned away is counted');
  t.same(await metric(sy, 'switchyard_upstream_budget_exhausted_total', { upstream: 'b' }), [], 'no series for b');
  t.same(await metric(sy, 'switchyard_upstream_budget_remaining', { upstream: 'a' }), [0]);
  t.same(await metric(sy, 'switchyard_upstream_budget_remaining', { upstream: 'b' }), []);
  t.match(await budgetOf(sy, 'a'), { remaining: 0 }, '/status: nothing left');
});

t.test('a batch element is a call: a batch larger than the budget is shared out', async (t) => {
  const sy = await proxy(t, 4, null);
  const base = await settled(sy);
  const left = 4 - base.a;
  const batch = Array.from({ length: 6 }, (_, id) => {
    const [method, params] = freshRead();
    return { jsonrpc: '2.0', id, method, params };
  });
  const answers = (await post(sy.url, batch)).json() as { id: number; result?: string }[];
  t.same(
    answers.map((a) => [a.id, a.result]),
    [0, 1, 2, 3, 4, 5].map((id) => [id, '0x0']),
    'every element answered, in order',
  );
  t.equal((await callsTo(sy, 'a')) - base.a, left, 'a took what was left of its budget');
  t.equal((await callsTo(sy, 'b')) - base.b, 6 - left, 'b the others');
  t.match(await budgetOf(sy, 'a'), { remaining: 0 });
});

t.test('every node out of budget: -32005 UPSTREAM_BUDGET at once, never a queue', async (t) => {
  const sy = await proxy(t, 2, 2);
  const base = await settled(sy);
  const room = 4 - base.a - base.b;
  for (let i = 0; i < room; i++) {
    const [method, params] = freshRead();
    t.equal((await call(sy.url, method, params)).result, '0x0', `call ${i + 1} within the budgets`);
  }
  t.equal((await callsTo(sy, 'a')) + (await callsTo(sy, 'b')), 4, 'both budgets spent');
  const before = (await exhausted(sy, 'a')) + (await exhausted(sy, 'b'));
  const started = Date.now();
  const [method, params] = freshRead();
  const r = await post(sy.url, { jsonrpc: '2.0', id: 7, method, params });
  const elapsed = Date.now() - started;
  t.equal(r.status, 200, 'a call answered with an error is HTTP 200');
  const body = r.json() as { id: number; error: { code: number; message: string; data: Record<string, unknown> } };
  t.equal(body.id, 7);
  t.equal(body.error.code, -32005);
  t.equal(body.error.message, 'upstream budget exhausted');
  t.equal(body.error.data.reason, 'UPSTREAM_BUDGET');
  t.ok((body.error.data.retryAfterSeconds as number) >= 1, 'says when to retry');
  // Its budgets refill in hours: any wait for tokens would show as many seconds.
  t.ok(elapsed < 5_000, `answered at once (${elapsed} ms)`);
  t.equal((await exhausted(sy, 'a')) + (await exhausted(sy, 'b')), before + 2, 'both nodes turned it away');
  const batch = [freshRead(), freshRead()].map(([m, p], id) => ({ jsonrpc: '2.0', id, method: m, params: p }));
  const errors = (await post(sy.url, batch)).json() as { error?: { data?: { reason?: string } } }[];
  t.same(
    errors.map((e) => e.error?.data?.reason),
    ['UPSTREAM_BUDGET', 'UPSTREAM_BUDGET'],
    'each element of a batch',
  );
  t.equal((await callsTo(sy, 'a')) + (await callsTo(sy, 'b')), 4, 'no node got a call past its budget');
  t.same(await metric(sy, 'switchyard_calls_total', { reason: 'UPSTREAM_BUDGET' }), [3], 'counted by reason');
});

t.test('a broadcast transaction: a copy per node with budget; none with budget: UPSTREAM_BUDGET', async (t) => {
  const sy = await proxy(t, 2, 2, true);
  const base = await settled(sy);
  const sends = async (upstream: string): Promise<number> =>
    sum(await metric(sy, 'switchyard_upstream_calls_total', { upstream, method: 'eth_sendRawTransaction' }));
  // Spend a's budget on reads (it weighs 1000 times b), so that b alone has a token left.
  const reads: unknown[] = [];
  for (let i = base.a; i < 2; i++) reads.push((await call(sy.url, ...freshRead())).result);
  t.ok(
    reads.every((r) => r === '0x0'),
    `${reads.length} reads answered`,
  );
  t.match(await budgetOf(sy, 'a'), { remaining: 0 }, 'a has no token left');
  t.ok(((await budgetOf(sy, 'b'))?.remaining as number) >= 1, 'b has one');
  const nonce = Number((await call(nodeA!.url, 'eth_getTransactionCount', [TRANSFER_FROM, 'pending'])).result);
  const sent = await call(sy.url, 'eth_sendRawTransaction', [await signTransfer(nonce)]);
  t.match(sent, { result: /^0x[0-9a-f]{64}$/ }, 'the transaction is accepted through b');
  t.equal(await sends('a'), 0, 'a, out of budget, got no copy');
  t.equal(await sends('b'), 1, 'b got one');

  // Spend what b has left, then nobody has budget for the next transaction.
  const more: unknown[] = [];
  for (let left = (await budgetOf(sy, 'b'))!.remaining as number; left > 0; left--)
    more.push((await call(sy.url, ...freshRead())).result);
  t.ok(
    more.every((r) => r === '0x0'),
    `${more.length} reads spent the rest of b's budget`,
  );
  const refused = await call(sy.url, 'eth_sendRawTransaction', [await signTransfer(nonce + 1)]);
  t.match(refused, { error: { code: -32005, data: { reason: 'UPSTREAM_BUDGET' } } }, 'UPSTREAM_BUDGET at once');
  t.equal((await sends('a')) + (await sends('b')), 1, 'and no node got a copy');
});

t.test('a reload keeps a budget whose node and rateLimit stay; a new rateLimit starts a new budget', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-budget-reload-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'switchyard.yaml');
  const write = (burstOfA: number, weightOfB: number): void =>
    writeFileSync(
      file,
      JSON.stringify({
        chainId: 186,
        server: { host: '127.0.0.1', port: 0, wsPort: null },
        admin: { host: '127.0.0.1', port: 0 },
        upstreams: [
          { name: 'a', url: nodeA!.url, weight: 1000, rateLimit: budget(burstOfA) },
          { name: 'b', url: nodeB!.url, weight: weightOfB },
        ],
        rateLimit: { perIp: null },
        log: { level: 'silent' },
      }),
    );
  write(5, 1);
  const sy = await startSwitchyard(
    t,
    {
      upstreams: [
        { name: 'a', url: nodeA!.url, weight: 1000, rateLimit: budget(5) },
        { name: 'b', url: nodeB!.url },
      ],
    },
    { configFile: file },
  );
  await settled(sy);
  await call(sy.url, ...freshRead());
  const left = (await budgetOf(sy, 'a'))!.remaining as number;
  t.ok(left < 5, `a has spent some of its budget (${5 - left} calls)`);
  write(5, 2);
  t.equal((await post(`${sy.adminUrl}/-/reload`, '')).status, 200, "reloaded with b's weight changed");
  t.match(await budgetOf(sy, 'a'), { burst: 5, remaining: left }, "a's budget kept what it had spent");
  write(8, 2);
  t.equal((await post(`${sy.adminUrl}/-/reload`, '')).status, 200, "reloaded with a's burst changed");
  t.match(await budgetOf(sy, 'a'), { burst: 8, remaining: 8 }, 'a new budget, full');
});
