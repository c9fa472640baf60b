/**
 * Hedged reads (SPEC 4.9, routing.hedge) on two real anvil nodes, each behind a delaying proxy
 * (test/helpers/delay-proxy.ts). Node `slow` is weighted (a million times `quick`) so that
 * selection sends it every first attempt; once every method has its latency figures, the proxy
 * holds its calls of one method (a node that does not answer) and node `quick` answers. Counts
 * and outcomes only: no assertion on time.
 * Also: a method with no figures of its own is hedged after the figure of every hedgeable method,
 * and a hedge that reaches no node (its node's budget is spent) gives its bucket token back.
 */
import t, { type Test } from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startDelayProxy, type DelayProxy } from '../helpers/delay-proxy.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { signTransfer } from '../helpers/transfer.js';
import { waitFor } from '../helpers/wait.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { MIN_SAMPLES } from '../../src/routing/hedge-figures.js';

/**
 * Warm-up calls: exactly the answers a method needs before it has a hedge delay, so no warm-up call
 * can be hedged. With more, a warm-up read late on a busy host was hedged, and its hedge (lost: the
 * node was not holding yet) counted among the ones a case asserts: 61 for 60 calls.
 */
const WARM = MIN_SAMPLES;
const address = (n: number): string => `0x${(0xb000000 + n).toString(16).padStart(40, '0')}`;
let nextAddress = 0;

interface Rig {
  sy: RunningSwitchyard;
  slow: DelayProxy;
  quick: DelayProxy;
}

async function rig(
  t: Test,
  routing: ConfigInput['routing'] = {},
  quickBudget?: { ratePerSec: number; burst: number },
): Promise<Rig> {
  const [a, b] = await Promise.all([startAnvil(), startAnvil()]);
  t.teardown(() => a.stop());
  t.teardown(() => b.stop());
  const slow = await startDelayProxy(a.url, (fn) => t.teardown(fn));
  const quick = await startDelayProxy(b.url, (fn) => t.teardown(fn));
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'slow', url: slow.url, weight: 1000 },
      // Weights a million apart: however late `slow`'s recent answers on a busy host, selection's
      // cost (in-flight x latency / weight) keeps every first attempt there.
      { name: 'quick', url: quick.url, weight: 0.001, ...(quickBudget ? { rateLimit: quickBudget } : {}) },
    ],
    routing: { upstreamTimeoutMs: 20_000, ...routing },
  });
  return { sy, slow, quick };
}

async function rpc(url: string, method: string, params: unknown[]) {
  const r = await post(url, { jsonrpc: '2.0', id: 7, method, params });
  return { body: r.json(), attempts: r.headers['x-switchyard-attempts'], upstream: r.headers['x-switchyard-upstream'] };
}

/** A read that misses the cache: a balance of an address never asked before. */
const balance = (url: string) => rpc(url, 'eth_getBalance', [address(nextAddress++), 'latest']);

async function hedges(sy: RunningSwitchyard): Promise<Record<'won' | 'lost' | 'skipped', number>> {
  const text = (await get(`${sy.adminUrl}/metrics`)).text;
  const of = (outcome: string) => metricSamples(text, 'switchyard_hedges_total', { outcome })[0] ?? -1;
  return { won: of('won'), lost: of('lost'), skipped: of('skipped') };
}

async function warm(t: Test, r: Rig): Promise<void> {
  for (let k = 0; k < WARM; k++) t.equal((await balance(r.sy.url)).body.result, '0x0', 'warm-up read answered');
}

t.test('a read the first node does not answer is answered by the hedge; the first call is cut off', async (t) => {
  const r = await rig(t);
  await warm(t, r);
  t.ok(r.slow.seen('eth_getBalance') >= WARM - 2, 'selection sends the weighted node the first attempts');
  r.slow.hold = (m) => m === 'eth_getBalance';
  const N = 5;
  for (let k = 0; k < N; k++) {
    const a = await balance(r.sy.url);
    t.same(a.body.result, '0x0', 'the answer');
    t.equal(a.attempts, '2', 'the hedge counts in X-Switchyard-Attempts');
  }
  const h = await hedges(r.sy);
  t.equal(h.won, N, 'every hedge won');
  t.equal(h.skipped, 0);
  // The held calls were cancelled: the node's side sees each request's client go away.
  await waitFor('the held calls cut off', () => r.slow.aborted === N);
  t.equal(r.slow.holding, N, 'none of them was forwarded while held');
  const status = (await get(`${r.sy.adminUrl}/status`)).json();
  const won = Object.fromEntries(
    status.upstreams.map((u: { name: string; hedgesWon: number }) => [u.name, u.hedgesWon]),
  );
  t.same(won, { slow: 0, quick: N }, '/status counts hedges won per node');
});

t.test('hedges stay within maxRatio of calls: the rest are skipped', async (t) => {
  const r = await rig(t);
  await warm(t, r);
  r.slow.hold = (m) => m === 'eth_getBalance';
  const N = 60;
  const answers = Array.from({ length: N }, () => balance(r.sy.url));
  // Every call is held at the first node, so each reaches its hedge delay: sent, or skipped.
  const h = await waitFor('every call hedged or skipped', async () => {
    const h = await hedges(r.sy);
    return h.won + h.lost + h.skipped === N ? h : undefined;
  });
  // The bucket holds at most 20 tokens, and each call adds maxRatio (0.1) of one.
  t.ok(h.won + h.lost <= 20 + 0.1 * N, `hedges sent ${h.won + h.lost} of ${N} calls`);
  t.ok(h.skipped >= N - 20 - 0.1 * N, `skipped ${h.skipped}`);
  r.slow.release();
  r.slow.hold = () => false;
  for (const a of await Promise.all(answers)) t.equal(a.body.result, '0x0');
});

t.test('with routing.hedge.enabled false no read is hedged', async (t) => {
  const r = await rig(t, { hedge: { enabled: false } });
  await warm(t, r);
  r.slow.hold = (m) => m === 'eth_getBalance';
  const asked = r.quick.seen('eth_getBalance');
  const answer = balance(r.sy.url);
  await waitFor('the call held at the first node', () => r.slow.holding === 1);
  // Held past any hedge delay (five head polls, 100 ms apart, went by): a hedge would have gone by now.
  const polls = r.slow.seen('eth_getBlockByNumber');
  await waitFor('five head polls', () => r.slow.seen('eth_getBlockByNumber') >= polls + 5);
  r.slow.hold = () => false;
  r.slow.release();
  const a = await answer;
  t.equal(a.body.result, '0x0');
  t.equal(a.attempts, '1', 'one node asked');
  t.equal(r.quick.seen('eth_getBalance'), asked, 'the other node never got it');
  t.same(await hedges(r.sy), { won: 0, lost: 0, skipped: 0 });
});

t.test('writes, transactions, filters and expensive calls are never hedged', async (t) => {
  const r = await rig(t);
  const url = r.sy.url;
  await warm(t, r);
  // Each method gets as many calls as a hedgeable read needs for its delay, had it one.
  let nonce = 0;
  const calls: Record<string, () => Promise<unknown[]>> = {
    eth_call: async () => [{ to: address(nextAddress++), data: '0x' }, 'latest'],
    eth_getLogs: async () => [{ fromBlock: '0x0', toBlock: '0x0', address: address(nextAddress++) }],
    eth_newFilter: async () => [{ fromBlock: 'latest', address: address(nextAddress++) }],
    eth_sendRawTransaction: async () => [await signTransfer(nonce++)],
  };
  for (const [method, params] of Object.entries(calls)) {
    for (let k = 0; k < WARM; k++) {
      const a = await rpc(url, method, await params());
      t.notOk(a.body.error, `${method} answered`);
    }
  }
  // The transfers went to the weighted node only: the other node would take no further nonce.
  t.equal(r.quick.seen('eth_sendRawTransaction'), 0, 'the transactions all went to one node');
  const seen = Object.fromEntries(Object.keys(calls).map((m) => [m, r.quick.seen(m)]));
  r.slow.hold = (m) => m in calls || m === 'eth_getBalance';
  const pending = [];
  for (const [method, params] of Object.entries(calls)) pending.push(rpc(url, method, await params()));
  await waitFor('every call held at the first node', () => r.slow.holding === Object.keys(calls).length);
  // A hedgeable read sent after them, held too, is hedged: their own hedge delays have passed by then.
  const read = await balance(url);
  t.equal(read.attempts, '2', 'the read sent after them was hedged');
  t.equal((await hedges(r.sy)).won, 1, 'only the read was hedged');
  for (const m of Object.keys(calls)) t.equal(r.quick.seen(m), seen[m], `${m} never went to the other node`);
  r.slow.hold = () => false;
  r.slow.release();
  for (const a of await Promise.all(pending)) t.notOk((a as { body: { error?: unknown } }).body.error);
});

t.test('a method no node has figures for yet is hedged after the figure of every hedgeable method', async (t) => {
  const r = await rig(t);
  await warm(t, r);
  t.equal(r.slow.seen('eth_getCode'), 0, 'eth_getCode never asked before: no figures of its own');
  r.slow.hold = (m) => m === 'eth_getCode';
  const a = await rpc(r.sy.url, 'eth_getCode', [address(nextAddress++), 'latest']);
  t.equal(a.body.result, '0x', 'answered while the first node holds it');
  t.equal(a.attempts, '2', 'by a hedge');
  t.equal(a.upstream, 'quick', 'from the other node');
  t.equal((await hedges(r.sy)).won, 1, 'counted as won');
  r.slow.hold = () => false;
  r.slow.release();
});

t.test('a hedge that reaches no node gives its token back: the bucket counts hedges sent', async (t) => {
  // quick's budget: one call in a window far longer than the test.
  const r = await rig(t, {}, { ratePerSec: 0.001, burst: 1 });
  await warm(t, r);
  const tokens = async (): Promise<number> => (await get(`${r.sy.adminUrl}/status`)).json().hedge.tokens;
  t.equal(await tokens(), 20, 'the bucket is full');
  const refused = async (): Promise<number> =>
    metricSamples((await get(`${r.sy.adminUrl}/metrics`)).text, 'switchyard_upstream_budget_exhausted_total', {
      upstream: 'quick',
    }).reduce((x, y) => x + y, 0);
  r.slow.hold = (m) => m === 'eth_getBalance';
  // More late calls than the bucket holds: had each kept its token, the last ones would find none.
  const N = 40;
  const answers = Array.from({ length: N }, () => balance(r.sy.url));
  // Each hedge goes to quick (at most one there has a budget token) or is skipped for want of a bucket token.
  await waitFor(
    'every hedge refused by the budget, or the bucket empty',
    async () => (await refused()) >= N - 1 || (await tokens()) < 1,
  );
  const left = await tokens();
  t.ok(left >= 19, `the bucket holds ${left} tokens: only a hedge sent keeps its token`);
  r.slow.hold = () => false;
  r.slow.release();
  for (const a of await Promise.all(answers)) t.equal(a.body.result, '0x0', 'answered');
  const h = await hedges(r.sy);
  t.ok(h.won + h.lost <= 1, `hedges sent: ${h.won + h.lost} (one budget token)`);
  t.equal(h.won + h.lost + h.skipped, N, 'every call hedged or skipped');
  t.ok(h.won + h.lost <= 20 + 0.1 * N, 'within maxRatio and the burst');
});
