/**
 * eth_sendRawTransaction (SPEC 4.5): the answer is the transaction hash (as ethers computes it);
 * a client sending the same raw transaction twice gets the node's own "already imported" error
 * verbatim the second time (observed with anvil; geth says "already known"); a retry after a
 * transport failure that hit a node which had already forwarded the transaction answers the hash;
 * routing.broadcastTransactions puts the transaction in every node's pool.
 */
import t from 'tap';
import { Wallet, Transaction, keccak256, parseEther } from 'ethers';
import { startStack } from '../helpers/stack.js';
import { startAnvil, DEV_KEY } from '../helpers/anvil.js';
import { startFakeNode, type FakeAnswer } from '../helpers/fake-node.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { call, get, post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';
import { choose } from '../../src/routing/select.js';
import type { Upstream } from '../../src/upstream/node.js';

const wallet = new Wallet(DEV_KEY);
const to = '0x000000000000000000000000000000000000dEaD';

async function signTransfer(nonce: number, value = parseEther('0.01')): Promise<string> {
  return wallet.signTransaction({
    to,
    value,
    nonce,
    gasLimit: 21_000n,
    maxFeePerGas: 20_000_000_000n,
    maxPriorityFeePerGas: 1n,
    chainId: 186n,
    type: 2,
  });
}

async function inPool(url: string, txHash: string): Promise<boolean> {
  const pool = (await call(url, 'txpool_content')).result;
  return JSON.stringify(pool).toLowerCase().includes(txHash.toLowerCase());
}

t.test('the answer is the hash; a second send gets the node error verbatim', async (t) => {
  const { sy, devnet } = await startStack(t, { nodes: 3, blockTimeMs: 0 });
  const nonce = Number((await call(sy.url, 'eth_getTransactionCount', [wallet.address, 'pending'])).result);
  const raw = await signTransfer(nonce);
  const expected = Transaction.from(raw).hash!;
  t.equal(expected, keccak256(raw), 'ethers: the hash is keccak256 of the raw bytes');

  const first = (
    await post(sy.url, { jsonrpc: '2.0', id: 'tx-1', method: 'eth_sendRawTransaction', params: [raw] })
  ).json();
  t.same(first, { jsonrpc: '2.0', id: 'tx-1', result: expected }, 'the hash, as ethers computes it');

  // Without broadcast the transaction went to one node (the devnet gathers pools when it mines).
  const holders: string[] = [];
  for (const n of devnet.nodes()) if (await inPool(n.url, expected)) holders.push(n.name);
  t.equal(holders.length, 1, `in exactly one node's pool (${holders.join(', ')})`);

  const second = (
    await post(sy.url, { jsonrpc: '2.0', id: 'tx-2', method: 'eth_sendRawTransaction', params: [raw] })
  ).json();
  // What the node itself says for a duplicate, asked directly (it is the same node: writes are
  // sticky per client IP).
  const holderUrl = devnet.nodes().find((n) => n.name === holders[0])!.url;
  const direct = await call(holderUrl, 'eth_sendRawTransaction', [raw]);
  t.ok(direct.error, `the node refuses a duplicate: ${JSON.stringify(direct.error)}`);
  t.same(
    second,
    { jsonrpc: '2.0', id: 'tx-2', error: direct.error },
    "observed: the second answer is the node's error, verbatim (not the hash)",
  );
  t.comment(`second send of the same raw transaction answered: ${JSON.stringify(second.error ?? second.result)}`);

  await devnet.mine(1);
  const receipt = await waitFor(
    'receipt',
    async () => (await call(sy.url, 'eth_getTransactionReceipt', [expected])).result ?? undefined,
  );
  t.equal(receipt.status, '0x1', 'mined');
  t.equal(receipt.transactionHash, expected);
});

t.test('transport failure after the node forwarded it: the retry answers the hash', async (t) => {
  const real = await startAnvil({ args: ['--no-mining'] });
  t.teardown(() => real.stop());
  const forwarded: string[] = [];
  /** Passes a call to the real anvil and answers what it said. */
  const relay = (method: string, params: unknown[]): FakeAnswer => ({
    defer: async () => {
      const r = await call(real.url, method, params);
      return r.error ? { error: r.error } : { result: r.result };
    },
  });
  const fake = await startFakeNode(t, (method, params) => {
    if (method !== 'eth_sendRawTransaction') return relay(method, params);
    // Forwards the transaction to the real node, then drops the connection without answering.
    return {
      defer: async () => {
        const r = await call(real.url, method, params);
        forwarded.push(JSON.stringify(r));
        return { reset: true };
      },
    };
  });
  // Writes stick to one node per client IP (a choice made from the IP and the node names only):
  // name the fake node so that it is the one 127.0.0.1 sticks to.
  const named = (name: string): Upstream => ({ name }) as Upstream;
  const fakeName = ['fake-a', 'fake-b', 'fake-c', 'fake-d'].find(
    (n) => choose([named(n), named('m-anvil')], '127.0.0.1').name === n,
  )!;
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: fakeName, url: fake.url },
      { name: 'm-anvil', url: real.url },
    ],
  });
  await waitFor('both healthy', async () =>
    ((await get(`${sy.adminUrl}/status`)).json() as { upstreams: { state: string }[] }).upstreams.every(
      (u) => u.state === 'healthy',
    ),
  );

  const raw = await signTransfer(0);
  const expected = Transaction.from(raw).hash!;
  const res = (await post(sy.url, { jsonrpc: '2.0', id: 7, method: 'eth_sendRawTransaction', params: [raw] })).json();
  t.equal(forwarded.length, 1, `the fake node got it first and forwarded it (${forwarded[0]})`);
  t.same(JSON.parse(forwarded[0]!).result, expected, 'the real node accepted the forwarded copy');
  t.same(
    res,
    { jsonrpc: '2.0', id: 7, result: expected },
    'the retry on the real node said "already imported", and Switchyard answered the hash',
  );
  t.ok(await inPool(real.url, expected), "the transaction is in the real node's pool");
  const again = await call(real.url, 'eth_sendRawTransaction', [raw]);
  t.match(
    again.error?.message,
    /already imported|already known/i,
    `the real node's duplicate wording: ${again.error?.message}`,
  );
  const m = (await get(`${sy.adminUrl}/metrics`)).text;
  t.match(m, /switchyard_failovers_total\{reason="transport"\} [1-9]/, 'counted as a transport failover');
});

t.test("routing.broadcastTransactions puts the transaction in every node's pool", async (t) => {
  const { sy, devnet } = await startStack(t, {
    nodes: 3,
    blockTimeMs: 0,
    config: { routing: { broadcastTransactions: true } },
  });
  const nonce = Number((await call(sy.url, 'eth_getTransactionCount', [wallet.address, 'pending'])).result);
  const raw = await signTransfer(nonce);
  const expected = Transaction.from(raw).hash!;
  const res = (await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [raw] })).json();
  t.equal(res.result, expected, 'the hash');
  for (const n of devnet.nodes()) {
    await waitFor(`${n.name} has it`, () => inPool(n.url, expected), { timeoutMs: 10_000 });
    t.pass(`in ${n.name}'s pool`);
  }
  // Sent again: every node knows it; the first "already imported" counts as success.
  const again = (await post(sy.url, { jsonrpc: '2.0', id: 2, method: 'eth_sendRawTransaction', params: [raw] })).json();
  t.same(
    again,
    { jsonrpc: '2.0', id: 2, result: expected },
    'with broadcast, a duplicate answers the hash (every node already has it)',
  );
  await devnet.mine(1);
  for (const n of devnet.nodes()) {
    const r = (await call(n.url, 'eth_getTransactionReceipt', [expected])).result;
    t.equal(r?.status, '0x1', `mined, receipt on ${n.name}`);
  }
});
