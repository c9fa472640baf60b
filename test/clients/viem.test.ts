/**
 * viem's http transport with `batch: true`: its JSON-RPC batches are split, routed and answered in
 * order by Switchyard, and the answers equal the node's.
 */
import t from 'tap';
import { createPublicClient, http } from 'viem';
import { startStack } from '../helpers/stack.js';
import { DEV_ADDRESS } from '../helpers/anvil.js';
import { call } from '../helpers/rpc.js';

t.test('viem with batch: true', async (t) => {
  const { sy, devnet } = await startStack(t);
  await devnet.mine(3);
  let batches = 0;
  const client = createPublicClient({
    transport: http(sy.url, {
      batch: { batchSize: 50, wait: 20 },
      onFetchRequest: async (req) => {
        const body = (await req.clone().json()) as unknown;
        if (Array.isArray(body) && body.length > 1) batches++;
      },
    }),
  });
  // Wait until Switchyard has seen the mined blocks.
  const head = await devnet.mine(1);
  for (let i = 0; i < 100 && Number(await client.getBlockNumber({ cacheTime: 0 })) < head; i++)
    await new Promise((r) => setTimeout(r, 50));

  const [chainId, blockNumber, balance, block1, block2, count] = await Promise.all([
    client.getChainId(),
    client.getBlockNumber({ cacheTime: 0 }),
    client.getBalance({ address: DEV_ADDRESS }),
    client.getBlock({ blockNumber: 1n }),
    client.getBlock({ blockNumber: 2n }),
    client.getTransactionCount({ address: DEV_ADDRESS }),
  ]);
  t.ok(batches >= 1, `viem sent ${batches} batch request(s)`);
  t.equal(chainId, 186);
  t.equal(Number(blockNumber), head);
  const node = devnet.nodes()[0]!.url;
  t.equal(balance, BigInt((await call(node, 'eth_getBalance', [DEV_ADDRESS, 'latest'])).result));
  t.equal(block1.hash, (await call(node, 'eth_getBlockByNumber', ['0x1', false])).result.hash);
  t.equal(block2.hash, (await call(node, 'eth_getBlockByNumber', ['0x2', false])).result.hash);
  t.equal(block2.parentHash, block1.hash);
  t.equal(count, 0);
});
