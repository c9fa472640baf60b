// A lagging node trails by exactly K blocks, a stalled node stops at its head while still answering,
// and resume brings either back onto the same blocks with the same hashes.

import t from 'tap';
import { Wallet } from 'ethers';
import { startDevnet } from '../../src/devnet/index.js';
import { CHAIN_ID, DEV_KEYS, assertIdentical, hashesOf, headOf, rpc } from './fixtures/chain.js';

/** A signed 1-wei transfer to itself, nonce 0, from a dev key. */
function selfTransfer(key: string): Promise<string> {
  const wallet = new Wallet(key);
  return wallet.signTransaction({
    to: wallet.address,
    value: 1n,
    nonce: 0,
    gasLimit: 21_000n,
    maxFeePerGas: 10_000_000_000n,
    maxPriorityFeePerGas: 1n,
    chainId: CHAIN_ID,
    type: 2,
  });
}

t.test('lag(1, 3) keeps node 1 exactly 3 blocks behind, resume catches it up', async (t) => {
  const devnet = await startDevnet({ nodes: 3, chainId: CHAIN_ID, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  const [n0, n1, n2] = devnet.nodes();
  await devnet.mine(2);
  await devnet.lag(1, 3);
  t.equal(devnet.nodes()[1]!.state, 'lagging');
  // A transaction sent to the lagging node itself is still mined by the others right away.
  const signed = await selfTransfer(DEV_KEYS[0]!);
  const txHash = await rpc<string>(n1!.url, 'eth_sendRawTransaction', [signed]);
  const head = await devnet.mine(5);
  t.equal(head, 7);
  t.equal(await headOf(n0!.url), 7, 'node 0 is at the head');
  t.equal(await headOf(n2!.url), 7, 'node 2 is at the head');
  t.equal(await headOf(n1!.url), 4, 'node 1 is exactly 3 blocks behind');
  t.match(devnet.nodes()[1], { head: 4, lag: 3, state: 'lagging' });
  t.same(await hashesOf(n1!.url, 4), await hashesOf(n0!.url, 4), 'the blocks node 1 has are the same blocks');
  const mined = await rpc<{ blockNumber: string } | null>(n0!.url, 'eth_getTransactionReceipt', [txHash]);
  t.equal(Number(mined?.blockNumber), 3, 'the transaction sent to the lagging node went into the next block');

  await devnet.mine();
  t.equal(await headOf(n1!.url), 5, 'it keeps trailing by 3 as blocks come');

  await devnet.resume(1);
  t.equal(devnet.nodes()[1]!.state, 'running');
  await assertIdentical(t, devnet, 'after resume');
  await devnet.mine();
  await assertIdentical(t, devnet, 'after resume and one more block');
});

t.test('stall keeps a node answering at its height; resume replays every missed block', async (t) => {
  const devnet = await startDevnet({ nodes: 3, chainId: CHAIN_ID, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  const url2 = devnet.nodes()[2]!.url;
  await devnet.mine(2);
  await devnet.stall(2);
  t.equal(devnet.nodes()[2]!.state, 'stalled');

  // Sent to the stalled node: the others mine it, the stalled node only sees it after resume.
  const signed = await selfTransfer(DEV_KEYS[1]!);
  const txHash = await rpc<string>(url2, 'eth_sendRawTransaction', [signed]);
  await devnet.mine(4);
  t.equal(await headOf(url2), 2, 'the stalled node still answers, at its old head');
  t.equal(await headOf(devnet.nodes()[0]!.url), 6);
  t.match(devnet.nodes()[2], { head: 2, lag: 4 });

  await devnet.resume(2);
  await assertIdentical(t, devnet, 'after resume');
  const receipt = await rpc<{ blockNumber: string } | null>(url2, 'eth_getTransactionReceipt', [txHash]);
  t.equal(Number(receipt?.blockNumber), 3, 'the resumed node has the transaction in the same block as the others');
});

t.test('lag then a larger lag never moves a node backwards', async (t) => {
  const devnet = await startDevnet({ nodes: 2, chainId: CHAIN_ID, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  const url1 = devnet.nodes()[1]!.url;
  await devnet.mine(4);
  await devnet.lag(1, 2);
  t.equal(await headOf(url1), 4, 'a new lag waits for blocks instead of rolling back');
  await devnet.mine(3);
  t.equal(await headOf(url1), 5);
  await devnet.lag(1, 0);
  t.equal(await headOf(url1), 7, 'lag 0 catches up at once');
  await assertIdentical(t, devnet, 'after lag 0');
  await t.rejects(devnet.lag(1, -1), TypeError);
  await t.rejects(devnet.stall(5), RangeError);
});
