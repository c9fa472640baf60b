/**
 * Quorum reads at a block tag (SPEC 4.9 "pinned to one block"), on real anvil nodes: two nodes
 * finalize two blocks behind their head (`--slots-in-an-epoch 1`), the third with anvil's default
 * epoch still calls the genesis block final, so asked `safe` or `finalized` as a tag the nodes
 * answer for different blocks. Each node sits behind a proxy that records what it was asked.
 * Asserted: every asked node gets the same block number (the fleet's finalized height for `safe`
 * and `finalized`, 0 for `earliest`), so the nodes agree with no dissent; a read at `pending` is
 * answered by one node, as a plain read (no quorum header, no quorum outcome counted).
 */
import t from 'tap';
import { DEV_ADDRESS, startAnvil, type AnvilNode } from '../helpers/anvil.js';
import { startFakeNode, type FakeAnswer, type FakeNode } from '../helpers/fake-node.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { call, get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

type Test = Parameters<typeof startFakeNode>[0];

function forwarder(t: Test, anvil: AnvilNode): Promise<FakeNode> {
  return startFakeNode(
    t,
    (method, params): FakeAnswer => ({
      defer: async () => {
        const r = await call(anvil.url, method, params);
        return r.error ? { error: r.error } : { result: r.result };
      },
    }),
  );
}

async function metric(sy: RunningSwitchyard, name: string, labels: Record<string, string>): Promise<number> {
  return metricSamples((await get(`${sy.adminUrl}/metrics`)).text, name, labels).reduce((a, b) => a + b, 0);
}

const address = (n: number): string => `0x${(0xc0ffee00 + n).toString(16).padStart(40, '0')}`;
const balanceCalls = (nodes: FakeNode[]) => nodes.flatMap((n) => n.calls.filter((c) => c.method === 'eth_getBalance'));

t.test(
  'safe, finalized and earliest are pinned to one number for every asked node; pending is no quorum read',
  async (t) => {
    const anvils: AnvilNode[] = [];
    for (const args of [['--slots-in-an-epoch', '1'], ['--slots-in-an-epoch', '1'], []]) {
      const a = await startAnvil({ args });
      t.teardown(() => a.stop());
      anvils.push(a);
    }
    // Blocks 1 and 2 pay addresses 1 and 2 on every node; three more put them under the short epoch's finality.
    for (const a of anvils) {
      for (const n of [1, 2])
        await call(a.url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: address(n), value: '0x5' }]);
      await call(a.url, 'anvil_mine', ['0x3']);
    }
    const safe = await Promise.all(anvils.map((a) => call(a.url, 'eth_getBalance', [address(2), 'safe'])));
    t.same(
      safe.map((r) => r.result),
      ['0x5', '0x5', '0x0'],
      'asked as a tag, the nodes answer for different blocks (the test is real)',
    );
    const head = Number((await call(anvils[0]!.url, 'eth_blockNumber', [])).result);
    const nodes = await Promise.all(anvils.map((a) => forwarder(t, a)));
    const sy = await startSwitchyard(t, {
      upstreams: nodes.map((n, i) => ({ name: `n${i}`, url: n.url })),
      routing: {
        headPollMs: 100,
        breaker: { failureThreshold: 1000, cooldownMs: 1000 },
        quorum: [{ methods: ['eth_getBalance'], min: 3, of: 3 }],
      },
    });
    await waitFor('every upstream healthy at the head', async () => {
      const s = (await get(`${sy.adminUrl}/status`)).json();
      return s.upstreams.every((u: { state: string; head: number }) => u.state === 'healthy' && u.head === head);
    });
    const finalized = (await get(`${sy.adminUrl}/status`)).json().finalized as number;
    t.equal(finalized, 0, "the fleet's finalized height is the lowest node's: genesis");

    for (const [tag, n] of [
      ['finalized', 1],
      ['safe', 2],
      ['earliest', 3],
    ] as const) {
      const before = balanceCalls(nodes).length;
      const r = await post(sy.url, { jsonrpc: '2.0', id: n, method: 'eth_getBalance', params: [address(n), tag] });
      t.equal(r.json().result, '0x0', `${tag}: the balance at the pinned block`);
      t.equal(r.headers['x-switchyard-quorum'], '3/3', `${tag}: every asked node agrees`);
      await waitFor(`${tag}: every node asked`, () => balanceCalls(nodes).length === before + 3);
      t.same(
        balanceCalls(nodes)
          .slice(before)
          .map((c) => c.params[1]),
        ['0x0', '0x0', '0x0'],
        `${tag}: each node asked for block 0x0, not the tag`,
      );
    }
    t.equal(await metric(sy, 'switchyard_upstream_dissent_total', {}), 0, 'no dissent: one block, one answer');

    const before = balanceCalls(nodes).length;
    const quorumCalls = await metric(sy, 'switchyard_quorum_calls_total', {});
    const pending = await post(sy.url, {
      jsonrpc: '2.0',
      id: 9,
      method: 'eth_getBalance',
      params: [address(1), 'pending'],
    });
    t.equal(pending.json().result, '0x5', "pending: the node's own answer");
    t.equal(pending.headers['x-switchyard-quorum'], undefined, 'pending: no quorum header');
    t.equal(pending.headers['x-switchyard-attempts'], '1', 'pending: one node asked');
    t.equal(balanceCalls(nodes).length, before + 1, 'pending: one call reached the nodes');
    t.equal(await metric(sy, 'switchyard_quorum_calls_total', {}), quorumCalls, 'pending: no quorum outcome counted');
  },
);
