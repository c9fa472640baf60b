/**
 * An upstream claiming a head far beyond the others (a broken or hostile node) must not drag the
 * fleet head with it: eth_blockNumber stays the real chain's, `latest` reads keep working, and the
 * claimant is not chosen for them.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { fakeHeader, startFakeNode } from '../helpers/fake-node.js';
import { call, get, post } from '../helpers/rpc.js';
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
    const r = (
      await post(sy.url, { jsonrpc: '2.0', id: i, method: 'eth_getBalance', params: [addr, 'latest'] })
    ).json();
    t.equal(r.result, '0x0', `latest read ${i} answered by the real node`);
  }
  t.equal(liar.calls.filter((c) => c.method === 'eth_getBalance').length, 0, 'the liar got none of them');
});

t.test('a liar left alone does not take the fleet head, and a block number it served is given up', async (t) => {
  const real = await startAnvil();
  t.teardown(() => real.stop());
  await post(real.url, { jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: ['0x5'] });
  // The honest node behind a gate that can make it look down (503 to everything).
  let down = false;
  const honest = await startFakeNode(t, (method, params) => {
    if (down) return { status: 503, body: '' };
    return {
      defer: async () => {
        const r = await call(real.url, method, params);
        return r.error ? { error: r.error } : { result: r.result };
      },
    };
  });
  const liar = await startFakeNode(t, (method, params) => {
    if (method === 'eth_getBlockByNumber' && params[0] === 'latest') return { result: fakeHeader(5_000_000) };
    return undefined;
  });
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'honest', url: honest.url },
      { name: 'liar', url: liar.url },
    ],
    routing: { maxHeadJumpBlocks: 1000 },
  });
  const status = async (): Promise<{
    fleetHead: number;
    blockNumber: number;
    upstreams: { name: string; state: string; implausibleHead: boolean }[];
  }> => (await get(`${sy.adminUrl}/status`)).json();
  await waitFor(
    'both polled, the liar flagged',
    async () => (await status()).upstreams.find((u) => u.name === 'liar')?.implausibleHead === true,
  );
  t.equal((await call(sy.url, 'eth_blockNumber', [])).result, '0x5');

  down = true;
  await waitFor(
    'the honest node is down',
    async () => (await status()).upstreams.find((u) => u.name === 'honest')?.state === 'down',
  );
  const alone = await status();
  t.equal(alone.fleetHead, 5, 'alone, the liar does not move the fleet head');
  t.equal(alone.upstreams.find((u) => u.name === 'liar')?.implausibleHead, true, 'it is still flagged');
  const bn = await call(sy.url, 'eth_blockNumber', []);
  t.equal(bn.error?.code, -32002, `no node can be trusted with a block number: ${JSON.stringify(bn)}`);

  down = false;
  await waitFor(
    'the honest node is back',
    async () => (await status()).upstreams.find((u) => u.name === 'honest')?.state === 'healthy',
  );
  const r = (
    await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [`0x${'1'.repeat(40)}`, 'latest'] })
  ).json();
  t.same(r, { jsonrpc: '2.0', id: 1, result: '0x0' }, 'a latest read is answered by the honest node');
  t.equal((await call(sy.url, 'eth_blockNumber', [])).result, '0x5', 'eth_blockNumber is the real head again');
});
