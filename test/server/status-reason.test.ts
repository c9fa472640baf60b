/**
 * /status says why each upstream is not simply serving, in its `reason`: real anvil nodes lagging,
 * on another chain, cordoned, and a port nobody listens on; a fake node answering 500 (a fault a
 * real node does not make on demand) for its open breaker. A node that serves has reason null.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startFakeNode } from '../helpers/fake-node.js';
import { freePort } from '../helpers/ports.js';
import { call, get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

interface Line {
  name: string;
  state: string;
  breaker: string;
  reason: string | null;
}

t.test('each upstream with the reason for its state', async (t) => {
  const [leader, lagger, otherChain, spare] = await Promise.all([
    startAnvil(),
    startAnvil(),
    startAnvil({ chainId: 1 }),
    startAnvil(),
  ]);
  t.teardown(() => Promise.all([leader, lagger, otherChain, spare].map((a) => a.stop())));
  await call(leader.url, 'anvil_mine', ['0xa']);
  const header = (await call(leader.url, 'eth_getBlockByNumber', ['latest', false])).result;
  // Heads like the leader's; every routed call a 500, so its breaker opens.
  const flaky = await startFakeNode(t, (method) => {
    if (method === 'eth_getBlockByNumber') return { result: header };
    if (method === 'eth_chainId' || method === 'eth_blockNumber') return undefined;
    return { status: 500, body: 'internal server error' };
  });
  flaky.head = 10;
  const gone = await freePort();
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'leader', url: leader.url },
      { name: 'lagger', url: lagger.url },
      { name: 'other-chain', url: otherChain.url },
      { name: 'spare', url: spare.url },
      { name: 'gone', url: `http://127.0.0.1:${gone}` },
      { name: 'flaky', url: flaky.url },
    ],
    routing: { maxLagBlocks: 2, breaker: { failureThreshold: 2, cooldownMs: 600_000 } },
  });
  const cordon = await post(`${sy.adminUrl}/upstreams/spare/cordon`, { reason: 'disk swap' });
  t.equal(cordon.status, 200, cordon.text);
  const status = async (): Promise<Map<string, Line>> =>
    new Map(((await get(`${sy.adminUrl}/status`)).json() as { upstreams: Line[] }).upstreams.map((u) => [u.name, u]));
  // Calls until the flaky node's breaker is open; each call is answered by another node meanwhile.
  let answered = 0;
  await waitFor(
    'the flaky node breaker open',
    async () => {
      const r = await call(sy.url, 'web3_clientVersion');
      if (typeof r.result === 'string') answered++;
      return (await status()).get('flaky')?.breaker === 'open';
    },
    { intervalMs: 10 },
  );
  t.ok(answered > 0, 'calls were answered meanwhile');
  const lines = await waitFor('every reason settled', async () => {
    const s = await status();
    return s.get('lagger')?.reason?.startsWith('lagging') && s.get('gone')?.state === 'down' ? s : false;
  });
  const reasons = Object.fromEntries([...lines].map(([name, u]) => [name, u.reason]));
  t.equal(reasons.leader, null, 'a node that serves: no reason');
  t.equal(reasons.lagger, 'lagging 10 blocks (routing.maxLagBlocks: 2)');
  t.equal(reasons['other-chain'], 'quarantined: wrong chain 0x1 (expected 0xba)');
  t.equal(reasons.spare, 'cordoned by operator: disk swap');
  t.match(reasons.gone, /^down: \S.*transport/, 'down, with what the probe got');
  t.match(reasons.flaky, /^breaker open after \d+ failures in a row$/);
  t.notOk(JSON.stringify(reasons).includes('127.0.0.1'), 'no upstream URL in a reason');
});
