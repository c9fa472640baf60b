// Killing nodes (node 0 included) never stops block production while one node lives, and a
// restarted node comes back on the same port with the same chain, then follows new blocks.

import t from 'tap';
import { Wallet } from 'ethers';
import { startDevnet } from '../../src/devnet/index.js';
import { CHAIN_ID, DEV_KEYS, assertIdentical, headOf, processGone, rpc, waitFor } from './fixtures/chain.js';

async function transfer(url: string, nonce: number): Promise<string> {
  const wallet = new Wallet(DEV_KEYS[0]);
  const signed = await wallet.signTransaction({
    to: '0x000000000000000000000000000000000000dEaD',
    value: 5n,
    nonce,
    gasLimit: 21_000n,
    maxFeePerGas: 10_000_000_000n,
    maxPriorityFeePerGas: 1n,
    chainId: CHAIN_ID,
    type: 2,
  });
  return rpc<string>(url, 'eth_sendRawTransaction', [signed]);
}

t.test('kill node 0 and node 1: node 2 keeps producing; restart replays the chain', async (t) => {
  const devnet = await startDevnet({ nodes: 3, chainId: CHAIN_ID, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  const before = devnet.nodes();
  await transfer(before[1]!.url, 0);
  await devnet.mine(3);

  const pid0 = before[0]!.pid!;
  await devnet.kill(0);
  t.ok(processGone(pid0), 'the anvil process of node 0 is gone');
  t.match(devnet.nodes()[0], { state: 'killed', pid: null });
  await t.rejects(rpc(before[0]!.url, 'eth_blockNumber'), 'node 0 no longer answers');

  const tx1 = await transfer(before[2]!.url, 1);
  t.equal(await devnet.mine(2), 5, 'blocks keep coming with node 0 dead');
  t.equal(await headOf(before[1]!.url), 5);
  await devnet.kill(1);
  t.equal(await devnet.mine(1), 6, 'and with node 1 dead too');
  t.equal(await headOf(before[2]!.url), 6);
  t.ok(await rpc(before[2]!.url, 'eth_getTransactionReceipt', [tx1]), 'a transaction sent meanwhile was mined');

  await devnet.restart(0);
  const n0 = devnet.nodes()[0]!;
  t.equal(n0.url, before[0]!.url, 'node 0 is back on the same port');
  t.not(n0.pid, pid0, 'as a new process');
  t.match(n0, { state: 'running', head: 6, lag: 0 });
  await assertIdentical(t, devnet, 'node 0 restarted');

  await devnet.restart(1);
  await transfer(before[0]!.url, 2);
  await devnet.mine(2);
  t.equal(await assertIdentical(t, devnet, 'every node restarted and following'), 8);
  t.same(
    devnet.nodes().map((n) => n.state),
    ['running', 'running', 'running'],
  );
});

t.test('with the block timer, killing node 0 does not stop the chain', async (t) => {
  const devnet = await startDevnet({ nodes: 2, chainId: CHAIN_ID, blockTimeMs: 100, basePort: 0 });
  t.teardown(() => devnet.stop());
  const url1 = devnet.nodes()[1]!.url;
  await waitFor('block 2', async () => (await headOf(url1)) >= 2);
  await devnet.kill(0);
  const at = await headOf(url1);
  await waitFor('3 more blocks on node 1', async () => (await headOf(url1)) >= at + 3);
  await devnet.restart(0);
  const url0 = devnet.nodes()[0]!.url;
  const target = (await headOf(url1)) + 2;
  await waitFor('node 0 following again', async () => (await headOf(url0)) >= target);
  const h = Math.min(await headOf(url0), await headOf(url1));
  const [a, b] = await Promise.all(
    [url0, url1].map((u) => rpc<{ hash: string }>(u, 'eth_getBlockByNumber', [`0x${h.toString(16)}`, false])),
  );
  t.equal(a!.hash, b!.hash, `same hash at block ${h}`);
});

t.test('stop kills every process and is idempotent; nothing runs afterwards', async (t) => {
  const devnet = await startDevnet({ nodes: 2, chainId: CHAIN_ID, blockTimeMs: 50, basePort: 0 });
  const pids = devnet.nodes().map((n) => n.pid!);
  await waitFor('a block', async () => (await headOf(devnet.nodes()[0]!.url)) >= 1);
  await Promise.all([devnet.stop(), devnet.stop()]);
  await devnet.stop();
  t.ok(pids.every(processGone), 'no anvil left');
  await t.rejects(devnet.mine(), /stopped/, 'mine after stop is refused');
});
