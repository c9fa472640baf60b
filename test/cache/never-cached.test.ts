/**
 * `null`, errors and `pending` are never served from the cache: each such call reaches a node
 * every time (counted at the nodes by counting proxies), even when its shape is otherwise
 * cacheable (a finalized block, a hash lookup). A receipt asked before its transaction is mined
 * is null, then the receipt once mined; it is cached only once its block is finalized, which the
 * end of the test shows (so the "reached a node" checks above it could fail).
 */
import t from 'tap';
import { Interface } from 'ethers';
import { NOPE_REVERT_DATA, PING_ABI, pingBytecode } from '../clients/fixtures/contract.js';
import {
  nodeCalls,
  cacheHits,
  hex,
  KEYS,
  addressOf,
  rawCall,
  result,
  signTx,
  startProxiedStack,
  waitSynced,
} from './fixtures/tools.js';
import { waitFor } from '../helpers/wait.js';

t.test('null, errors and pending always reach a node', async (t) => {
  const { devnet, proxies, sy, node } = await startProxiedStack(t, { nodes: 2 });
  const seen = (method: string, marks: number[]): number => nodeCalls(proxies, method, marks);
  /** Calls Switchyard twice; returns how many calls of `method` reached the nodes for each ask. */
  const twice = async (
    method: string,
    params: unknown[],
  ): Promise<{ answers: any[]; reached: number[]; hits: number }> => {
    const answers: any[] = [];
    const reached: number[] = [];
    const hitsBefore = await cacheHits(sy);
    for (let i = 0; i < 2; i++) {
      const marks = proxies.map((p) => p.mark());
      answers.push((await rawCall(sy.url, method, params)).json);
      reached.push(seen(method, marks));
    }
    return { answers, reached, hits: (await cacheHits(sy)) - hitsBefore };
  };

  const sender = addressOf(KEYS[2]);
  const deploy = await signTx(KEYS[0], { nonce: 0, data: pingBytecode(), gasLimit: 500_000n });
  const deployHash = await result<string>(node, 'eth_sendRawTransaction', [deploy]);
  await devnet.mine(12);
  const contract = (await result<{ contractAddress: string }>(node, 'eth_getTransactionReceipt', [deployHash]))
    .contractAddress;
  const { finalized } = await waitSynced(sy, node);
  t.ok(finalized >= 1, 'the contract block is finalized');
  const fin = hex(finalized);

  await t.test('a receipt: null while pending (never cached), then the receipt once mined', async (t) => {
    const to = '0x00000000000000000000000000000000000000c0';
    const raw = await signTx(KEYS[2], { nonce: 0, to, value: 1234n });
    const sent = await rawCall(sy.url, 'eth_sendRawTransaction', [raw]);
    const hash = sent.json.result as string;
    t.match(hash, /^0x[0-9a-f]{64}$/, 'transaction accepted (not mined: the devnet has no automatic blocks)');

    const pending = await twice('eth_getTransactionReceipt', [hash]);
    t.same(
      pending.answers.map((a) => a.result),
      [null, null],
      'null twice',
    );
    t.ok(
      pending.reached[0]! >= 1 && pending.reached[1]! >= 1,
      `each null reached a node (${pending.reached.join(', ')} node calls)`,
    );
    t.equal(pending.hits, 0, 'no cache hit');

    const tx = await twice('eth_getTransactionByHash', [hash]);
    t.equal(tx.answers[0].result?.blockNumber, null, 'a pending transaction has no block');
    t.ok(tx.reached[0]! >= 1 && tx.reached[1]! >= 1, 'a pending transaction is never cached');

    const bal = await twice('eth_getBalance', [to, 'pending']);
    t.same(
      bal.answers.map((a) => a.result),
      ['0x4d2', '0x4d2'],
      'balance at pending reflects the unmined transfer',
    );
    t.ok(
      bal.reached[0]! >= 1 && bal.reached[1]! >= 1,
      `each pending balance reached a node (${bal.reached.join(', ')})`,
    );
    t.equal((await rawCall(sy.url, 'eth_getBalance', [to, 'latest'])).json.result, '0x0', 'while latest does not');

    const nonce = await twice('eth_getTransactionCount', [sender, 'pending']);
    t.same(
      nonce.answers.map((a) => a.result),
      ['0x1', '0x1'],
      'pending nonce counts the unmined transaction',
    );
    t.ok(
      nonce.reached[0]! >= 1 && nonce.reached[1]! >= 1,
      `each pending nonce reached a node (${nonce.reached.join(', ')})`,
    );
    t.equal(nonce.hits, 0);

    // A second transaction: pending answers move with it, which a cached answer could not.
    await rawCall(sy.url, 'eth_sendRawTransaction', [await signTx(KEYS[2], { nonce: 1, to, value: 1n })]);
    t.equal(
      (await rawCall(sy.url, 'eth_getBalance', [to, 'pending'])).json.result,
      '0x4d3',
      'balance at pending after a new transaction reflects it',
    );
    t.equal(
      (await rawCall(sy.url, 'eth_getTransactionCount', [sender, 'pending'])).json.result,
      '0x2',
      'so does the pending nonce',
    );

    const mined = await devnet.mine();
    await waitFor(
      'switchyard sees the new block',
      async () => (await rawCall(sy.url, 'eth_blockNumber')).json.result === hex(mined),
    );
    const after = await twice('eth_getTransactionReceipt', [hash]);
    t.equal(after.answers[0].result?.transactionHash, hash, 'the receipt, once mined');
    t.equal(after.answers[0].result?.status, '0x1');
    t.equal(after.answers[1].result?.blockNumber, hex(mined), 'in the new block');
    t.ok(after.reached[1]! >= 1, 'an unfinalized receipt is not served from the cache either');

    await devnet.mine(10);
    const synced = await waitSynced(sy, node);
    t.ok(synced.finalized >= mined, 'its block is finalized now');
    const final = await twice('eth_getTransactionReceipt', [hash]);
    t.equal(final.answers[1].result?.transactionHash, hash);
    t.equal(
      final.reached[1],
      0,
      'now the second ask is served from the cache (the mechanism works; the nulls above were not luck)',
    );
    t.equal(final.hits, 1);
  });

  await t.test('errors are never cached, even for a cacheable shape', async (t) => {
    const fail = new Interface(PING_ABI).encodeFunctionData('fail');
    const reverted = await twice('eth_call', [{ to: contract, data: fail }, fin]);
    for (const a of reverted.answers) {
      t.equal(a.error?.code, 3, 'execution reverted, code 3');
      t.equal(a.error?.data, NOPE_REVERT_DATA, 'with its revert data');
    }
    t.ok(
      reverted.reached[0]! >= 1 && reverted.reached[1]! >= 1,
      `each revert at a finalized block reached a node (${reverted.reached.join(', ')})`,
    );
    t.equal(reverted.hits, 0, 'no hit');

    const bad = await twice('eth_getBalance', ['0x1234', fin]);
    t.ok(
      bad.answers.every((a) => a.error !== undefined),
      'a malformed address is a node error',
    );
    t.ok(bad.reached[0]! >= 1 && bad.reached[1]! >= 1, 'each node error reached a node');
  });

  await t.test('null answers to hash lookups are never cached', async (t) => {
    const unknown = `0x${'12'.repeat(32)}`;
    for (const method of ['eth_getBlockByHash', 'eth_getTransactionReceipt', 'eth_getTransactionByHash']) {
      const params = method === 'eth_getBlockByHash' ? [unknown, false] : [unknown];
      const r = await twice(method, params);
      t.same(
        r.answers.map((a) => a.result),
        [null, null],
        `${method}: null twice`,
      );
      t.ok(r.reached[0]! >= 1 && r.reached[1]! >= 1, `${method}: each null reached a node (${r.reached.join(', ')})`);
    }
    const uncle = await twice('eth_getUncleByBlockNumberAndIndex', [fin, '0x0']);
    t.same(
      uncle.answers.map((a) => a.result),
      [null, null],
      'no uncle at a finalized block: null',
    );
    t.ok(uncle.reached[0]! >= 1 && uncle.reached[1]! >= 1, 'a null at a finalized block reached a node both times');
    const control = await twice('eth_getUncleCountByBlockNumber', [fin]);
    t.equal(control.reached[1], 0, 'while a non-null answer of the same shape is a hit (control)');
  });
});
