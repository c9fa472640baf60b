/**
 * An upstream claiming a head far beyond the others (a broken or hostile node) must not drag the
 * fleet head with it: eth_blockNumber stays the real chain's, `latest` reads keep working, and the
 * claimant is not chosen for them.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { fakeHeader, startFakeNode } from '../helpers/fake-node.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

t.test('a node claiming an implausible head does not move the fleet head', async (t) => {
  const real = await startAnvil();
  t.teardown(() => real.stop());
  await post(real.url, { jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: ['0x5'] });
  const liar = await startFakeNode(t, (method, params) => {
    if (method === 'eth_getBlockByNumber' && params[0] === 'latest') return { result: fakeHeader(5_000_000) };
    if (method === 'eth_getBalance') return { result: '0xdead' };
    return undefined;
  });
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'real', url: real.url },
      // Heavily weighted: were it eligible, power of two choices would send it most calls.
      { name: 'liar', url: liar.url, weight: 1000 },
    ],
    routing: { maxHeadJumpBlocks: 1000 },
  });
  const status = await waitFor('both upstreams polled', async () => {
    const st = (await get(`${sy.adminUrl}/status`)).json();
    return st.upstreams.every((u: { head: number }) => u.head >= 0) ? st : undefined;
  });
  t.same(
    status.upstreams.map((u: { name: string; state: string }) => [u.name, u.state]),
    [
      ['real', 'healthy'],
      ['liar', 'healthy'],
    ],
    'both are healthy: the liar answers like a node',
  );
  t.equal(status.fleetHead, 5, 'the fleet head is the real chain head, not 5,000,000');
  const liarStatus = status.upstreams.find((u: { name: string }) => u.name === 'liar');
  t.equal(liarStatus.implausibleHead, true, '/status flags the implausible head');
  t.equal(liarStatus.routable, false, 'and the liar is not routable');
  const bn = (await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' })).json();
  t.equal(bn.result, '0x5', 'eth_blockNumber is the real head');
  for (let i = 0; i < 20; i++) {
    const addr = `0x${(i + 1).toString(16).padStart(40, '0')}`;
    const r = (await post(sy.url, { jsonrpc: '2.0', id: i, method: 'eth_getBalance', params: [addr, 'latest'] })).json();
    t.equal(r.result, '0x0', `latest read ${i} answered by the real node`);
  }
  t.equal(liar.calls.filter((c) => c.method === 'eth_getBalance').length, 0, 'the liar got none of them');
});
