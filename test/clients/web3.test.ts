/** web3.js v4 reads through Switchyard: chain id, block number, balance, a block. */
import t from 'tap';
import { Web3 } from 'web3';
import { startStack } from '../helpers/stack.js';
import { DEV_ADDRESS } from '../helpers/anvil.js';
import { call } from '../helpers/rpc.js';

t.test('web3.js works through Switchyard', async (t) => {
  const { sy, devnet } = await startStack(t);
  const head = await devnet.mine(2);
  const web3 = new Web3(sy.url);
  t.equal(await web3.eth.getChainId(), 186n);
  let n = 0n;
  for (let i = 0; i < 200 && n < BigInt(head); i++) {
    n = await web3.eth.getBlockNumber();
    if (n < BigInt(head)) await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(n, BigInt(head));
  const node = devnet.nodes()[1]!.url;
  t.equal(
    await web3.eth.getBalance(DEV_ADDRESS),
    BigInt((await call(node, 'eth_getBalance', [DEV_ADDRESS, 'latest'])).result),
  );
  const block = await web3.eth.getBlock(1);
  t.equal(block.hash, (await call(node, 'eth_getBlockByNumber', ['0x1', false])).result.hash);
});
