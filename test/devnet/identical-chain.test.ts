// A transaction sent to any node lands in the same block on every node, and every node holds the
// same block hashes at every height: on demand (mine) and with the block timer running.

import t from 'tap';
import { JsonRpcProvider, Wallet, type TransactionReceipt } from 'ethers';
import { startDevnet } from '../../src/devnet/index.js';
import { CHAIN_ID, DEV_KEYS, assertIdentical, hashesOf, headOf, rpc, waitFor } from './fixtures/chain.js';

const BURN = '0x000000000000000000000000000000000000dEaD';

function provider(url: string): JsonRpcProvider {
  return new JsonRpcProvider(url, CHAIN_ID, { staticNetwork: true, batchMaxCount: 1 });
}

/** A fixed pseudo-random node choice, so a failure can be replayed exactly. */
function picker(seed: number, n: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s % n;
  };
}

async function receiptsEverywhere(urls: string[], hash: string): Promise<(TransactionReceipt | null)[]> {
  return Promise.all(urls.map((u) => rpc<TransactionReceipt | null>(u, 'eth_getTransactionReceipt', [hash])));
}

t.test('transfers sent to random nodes are mined into the same block on every node', async (t) => {
  const devnet = await startDevnet({ nodes: 3, chainId: CHAIN_ID, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  const urls = devnet.nodes().map((n) => n.url);
  const pick = picker(7, urls.length);
  const wallets = DEV_KEYS.map((k) => new Wallet(k));
  const hashes: string[] = [];
  // Two senders interleaved, so fifo order across senders has to be reproduced too.
  for (let i = 0; i < 12; i++) {
    const sender = wallets[i % 2]!;
    const url = urls[pick()]!;
    const tx = await sender
      .connect(provider(url))
      .sendTransaction({ to: BURN, value: 1000n + BigInt(i), nonce: Math.floor(i / 2) });
    hashes.push(tx.hash);
  }
  await devnet.mine();
  await devnet.mine(2);
  const head = await assertIdentical(t, devnet, 'after 3 blocks');
  t.equal(head, 3);
  for (const h of hashes) {
    const receipts = await receiptsEverywhere(urls, h);
    t.ok(
      receipts.every((r) => r !== null),
      `${h} has a receipt on every node`,
    );
    t.same(new Set(receipts.map((r) => r?.blockHash)).size, 1, `${h} is in the same block everywhere`);
    t.equal(Number(receipts[0]?.blockNumber), 1, `${h} was mined in the first block after it was sent`);
  }
});

t.test('with the block timer running, transactions sent meanwhile still end up identical everywhere', async (t) => {
  const devnet = await startDevnet({ nodes: 3, chainId: CHAIN_ID, blockTimeMs: 150, basePort: 0 });
  t.teardown(() => devnet.stop());
  const urls = devnet.nodes().map((n) => n.url);
  const pick = picker(11, urls.length);
  const wallet = new Wallet(DEV_KEYS[0]);
  const hashes: string[] = [];
  for (let nonce = 0; nonce < 20; nonce++) {
    const signed = await wallet.signTransaction({
      to: BURN,
      value: 1n,
      nonce,
      gasLimit: 21_000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1_000_000n,
      chainId: CHAIN_ID,
      type: 2,
    });
    hashes.push(await rpc<string>(urls[pick()]!, 'eth_sendRawTransaction', [signed]));
    // Spread over several blocks so some transactions arrive while a block is being replicated.
    if (nonce % 4 === 3)
      await waitFor('a new block', async () => Number(await rpc(urls[0]!, 'eth_blockNumber')) > nonce / 4);
  }
  await waitFor('every transaction mined on every node', async () => {
    for (const h of hashes) if ((await receiptsEverywhere(urls, h)).some((r) => r === null)) return false;
    return true;
  });
  let last = 0;
  for (const h of hashes) {
    const receipts = await receiptsEverywhere(urls, h);
    t.same(new Set(receipts.map((r) => r?.blockHash)).size, 1, `${h} is in the same block everywhere`);
    last = Math.max(last, Number(receipts[0]?.blockNumber));
  }
  t.ok(last > 2, `the transactions were spread over several blocks (last in ${last})`);
  // Blocks keep coming, so compare the prefix every node is known to have.
  await waitFor(`every node at block ${last}`, async () =>
    (await Promise.all(urls.map(headOf))).every((h) => h >= last),
  );
  const [first, ...rest] = await Promise.all(urls.map((u) => hashesOf(u, last)));
  for (const hs of rest) t.same(hs, first, `same hashes at heights 0..${last}`);
});
