/**
 * /ready at start (SPEC 8/9): 503 until the fleet's first round of polls is done, so a balancer
 * checking /ready sends a replica just started no call before it knows a healthy node. The round
 * ends when each node answered or failed a poll: with the node down the replica still becomes
 * ready (and answers -32002). A node that stays `connecting` (it answers "too many requests") ends
 * the round by its bound, two poll timeouts.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startDelayProxy } from '../helpers/delay-proxy.js';
import { startFakeNode } from '../helpers/fake-node.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

interface NodeView {
  name: string;
  state: string;
}
const nodeStates = async (adminUrl: string): Promise<string[]> =>
  ((await get(`${adminUrl}/status`)).json().upstreams as NodeView[]).map((u) => u.state);

t.test('503 while the first poll is held; 200 once the node answered it, and a call then succeeds', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const proxy = await startDelayProxy(anvil.url, (fn) => t.teardown(fn));
  let holding = true;
  proxy.hold = (m) => holding && m === 'eth_chainId';
  // headPollMs 5000: a poll's question may take 10 s (upstreamTimeoutMs) before the node counts as
  // down, far longer than the checks below take.
  const sy = await startSwitchyard(
    t,
    { upstreams: [{ name: 'a', url: proxy.url }], routing: { headPollMs: 5000 } },
    { waitReady: false },
  );
  await waitFor('the first poll held', () => proxy.holding >= 1);
  const before = await get(`${sy.adminUrl}/ready`);
  t.equal(before.status, 503, '/ready is 503 while the first poll is unanswered');
  t.strictSame(before.json(), { ready: false, upstreams: false });
  t.equal(sy.app.ready, false, 'the API says the same');
  t.strictSame(await nodeStates(sy.adminUrl), ['connecting']);
  const root = (await get(sy.url)).json();
  t.equal(root.ready, false, 'GET / says not ready');

  holding = false;
  proxy.release();
  await waitFor('/ready 200', async () => (await get(`${sy.adminUrl}/ready`)).status === 200);
  t.equal((await get(`${sy.adminUrl}/ready?upstreams=1`)).status, 200, 'ready means a node is known');
  const r = await post(sy.url, { jsonrpc: '2.0', id: 7, method: 'eth_blockNumber' });
  t.match(r.json(), { id: 7, result: /^0x[0-9a-f]+$/ }, 'the first call after ready is answered');
});

t.test('with the only node down, the replica still becomes ready and answers -32002', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const proxy = await startDelayProxy(anvil.url, (fn) => t.teardown(fn));
  // Held for good: the first poll times out (1 s at headPollMs 250) and the node is down.
  proxy.hold = (m) => m === 'eth_chainId';
  const sy = await startSwitchyard(
    t,
    { upstreams: [{ name: 'a', url: proxy.url }], routing: { headPollMs: 250 } },
    { waitReady: false },
  );
  await waitFor('/ready 200', async () => (await get(`${sy.adminUrl}/ready`)).status === 200);
  t.strictSame(await nodeStates(sy.adminUrl), ['down'], 'the round ended by the poll failing');
  t.strictSame((await get(`${sy.adminUrl}/ready`)).json(), { ready: true, upstreams: false });
  const r = await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' });
  t.equal(r.json().error?.code, -32002, 'NO_UPSTREAM');
  proxy.release();
});

t.test('a node that stays connecting ends the round by its bound', async (t) => {
  // "Too many requests" to everything: the node is held off, neither up nor down (a fake node:
  // anvil has no rate limit).
  const node = await startFakeNode(t, () => ({ status: 429, headers: { 'retry-after': '60' }, body: 'busy' }));
  // headPollMs 1000: a poll's question times out after 2 s, so the bound is 4 s.
  const startedAt = Date.now();
  const sy = await startSwitchyard(
    t,
    { upstreams: [{ name: 'a', url: node.url }], routing: { headPollMs: 1000 } },
    { waitReady: false },
  );
  await waitFor('the node asked', () => node.calls.length >= 1);
  t.equal((await get(`${sy.adminUrl}/ready`)).status, 503, '503 while the node is still connecting');
  await waitFor('/ready 200', async () => (await get(`${sy.adminUrl}/ready`)).status === 200);
  t.ok(Date.now() - startedAt >= 4000, 'not before the bound');
  t.strictSame(await nodeStates(sy.adminUrl), ['connecting'], 'the node itself was never judged');
});
