/**
 * Heads from the upstreams' newHeads subscriptions (upstreams with `ws`): with head polling slowed
 * to once a minute, Switchyard's head still follows every block the devnet mines, because the
 * subscription pushes it; without `ws` it would sit at the first polled head.
 */
import t from 'tap';
import { startDevnet } from '../../src/devnet/index.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { get, post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

t.test('newHeads subscriptions move the head between polls', async (t) => {
  const devnet = await startDevnet({ nodes: 2, chainId: 186, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  await devnet.mine(2);
  const nodes = devnet.nodes();
  const withWs = await startSwitchyard(t, {
    upstreams: nodes.map((n) => ({ name: n.name, url: n.url, ws: n.wsUrl })),
    routing: { headPollMs: 60_000 },
  });
  const pollOnly = await startSwitchyard(t, {
    upstreams: nodes.map((n) => ({ name: n.name, url: n.url })),
    routing: { headPollMs: 60_000 },
  });
  const head = async (url: string): Promise<number> =>
    Number((await post(url, { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' })).json().result);
  t.equal(await head(withWs.url), 2, 'both start at the polled head 2');
  t.equal(await head(pollOnly.url), 2);

  // The subscriptions are opened asynchronously: mine until the ws replica follows.
  await waitFor(
    'ws heads flowing',
    async () => {
      const n = await devnet.mine(1);
      return (
        (await waitFor(`block ${n}`, async () => (await head(withWs.url)) === n, { timeoutMs: 2_000 }).catch(
          () => false,
        )) === true
      );
    },
    { timeoutMs: 20_000 },
  );
  for (let i = 0; i < 3; i++) {
    const n = await devnet.mine(1);
    await waitFor(`block ${n} through the subscription`, async () => (await head(withWs.url)) === n, {
      timeoutMs: 5_000,
    });
    t.pass(`head ${n} arrived without a poll`);
  }
  const latest = (
    await post(withWs.url, { jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: ['latest', false] })
  ).json().result;
  t.equal(Number(latest.number), await head(withWs.url), 'latest reads follow it');
  const status = (await get(`${withWs.adminUrl}/status`)).json() as { upstreams: { head: number }[] };
  t.same(
    status.upstreams.map((u) => u.head),
    [await head(withWs.url), await head(withWs.url)],
    "each upstream's head came from its own subscription",
  );
  t.equal(await head(pollOnly.url), 2, 'the poll-only replica (control) is still at 2: the heads above came from ws');
});
