/**
 * ethers v6 against Switchyard in front of the replicated devnet: only the URL differs from
 * talking to a node. Chain id, block number, balance, a signed transfer and its receipt, a
 * deployed contract's event logs, and a reverting call that keeps code 3 and its revert data.
 */
import t from 'tap';
import { ContractFactory, JsonRpcProvider, Wallet, type Contract, parseEther, type Log } from 'ethers';
import { startStack } from '../helpers/stack.js';
import { DEV_KEY, DEV_ADDRESS } from '../helpers/anvil.js';
import { post } from '../helpers/rpc.js';
import { NOPE_REVERT_DATA, PING_ABI, pingBytecode } from './fixtures/contract.js';

t.test('ethers v6 works through Switchyard', async (t) => {
  const { sy, devnet } = await startStack(t, { blockTimeMs: 300 });
  // ethers reuses an identical request's answer for 250 ms by default; transactions sent in quick
  // succession would then reuse a stale pending nonce whatever the endpoint, so the cache is off.
  const provider = new JsonRpcProvider(sy.url, undefined, { pollingInterval: 100, cacheTimeout: -1 });
  t.teardown(() => provider.destroy());
  const wallet = new Wallet(DEV_KEY, provider);

  const network = await provider.getNetwork();
  t.equal(network.chainId, 186n, 'chain id');
  const first = await provider.getBlockNumber();
  t.ok(first >= 0, 'block number');
  t.ok((await provider.getBalance(DEV_ADDRESS)) > parseEther('1000'), 'dev account is funded');

  const to = Wallet.createRandom().address;
  const tx = await wallet.sendTransaction({ to, value: parseEther('1.5') });
  const receipt = await tx.wait(1, 60_000);
  t.equal(receipt?.status, 1, 'transfer mined');
  t.equal(await provider.getBalance(to), parseEther('1.5'), 'recipient balance');
  // The same receipt is on every node of the devnet (the transfer was replicated).
  for (const n of devnet.nodes()) {
    const r = await post(n.url, { jsonrpc: '2.0', id: 1, method: 'eth_getTransactionReceipt', params: [tx.hash] });
    t.equal(r.json().result.blockHash, receipt!.blockHash, `${n.name} has the receipt in the same block`);
  }

  const factory = new ContractFactory(PING_ABI, pingBytecode(), wallet);
  const contract = (await factory.deploy()) as Contract;
  await contract.waitForDeployment();
  const address = await contract.getAddress();
  t.not(await provider.getCode(address), '0x', 'contract deployed');

  for (const v of [7n, 42n]) {
    const sent = await contract.getFunction('ping')(v);
    await sent.wait(1, 60_000);
  }
  const events = await contract.queryFilter(contract.filters.Ping!(), 0, 'latest');
  t.same(
    events.map((e) => (e as Log & { args: unknown[] }).args[0]),
    [7n, 42n],
    'event logs read back',
  );

  const err = await contract
    .getFunction('fail')
    .staticCall()
    .then(
      () => null,
      (e: unknown) => e as { code?: string; reason?: string; data?: string },
    );
  t.equal(err?.code, 'CALL_EXCEPTION', 'reverting call rejects');
  t.equal(err?.reason, 'nope', 'revert reason decoded');
  t.equal(err?.data, NOPE_REVERT_DATA, 'revert data kept');

  const raw = await post(sy.url, {
    jsonrpc: '2.0',
    id: 9,
    method: 'eth_call',
    params: [{ to: address, data: '0xa9cc4718' }, 'latest'],
  });
  t.equal(raw.status, 200);
  t.equal(raw.json().error.code, 3, 'execution reverted keeps code 3');
  t.equal(raw.json().error.data, NOPE_REVERT_DATA, 'and its revert data, verbatim');

  t.ok((await provider.getBlockNumber()) > first, 'block number advanced');
});
