// eth_sendRawTransactionSync (EIP-7966): forwarded to one upstream, which answers with the receipt
// once the transaction is mined (anvil 1.7.1 does); one attempt with its own timeout
// (routing.sendRawTransactionSyncTimeoutMs), never retried on another node, because the first
// may already have the transaction.

import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { signTransfer, TRANSFER_FROM } from '../helpers/transfer.js';
import { startFakeNode } from '../helpers/fake-node.js';
import { post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';

const sign = signTransfer;

t.test('the receipt comes back from a real node', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'node-a', url: anvil.url }] });
  const raw = await sign(0);
  const r = (await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransactionSync', params: [raw] })).json();
  t.equal(r.result?.status, '0x1', 'a mined receipt, status 1');
  t.equal(r.result?.from?.toLowerCase(), TRANSFER_FROM.toLowerCase());
  t.match(r.result?.blockNumber, /^0x[1-9a-f]/);
});

t.test('a node that does not answer in time: one attempt, no retry elsewhere, -32002', async (t) => {
  const hanging = await startFakeNode(t, (method) =>
    method === 'eth_sendRawTransactionSync' ? { hang: true } : undefined,
  );
  const other = await startFakeNode(t, (method) =>
    method === 'eth_sendRawTransactionSync' ? { result: { status: '0x1' } } : undefined,
  );
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'hang', url: hanging.url },
      { name: 'other', url: other.url },
    ],
    routing: { sendRawTransactionSyncTimeoutMs: 300, upstreamTimeoutMs: 5_000, maxAttempts: 3 },
  });
  const raw = await sign(0);
  // Whichever node is chosen first is the only one asked; send until the hanging one is chosen.
  for (let i = 0; i < 20 && hanging.calls.filter((c) => c.method === 'eth_sendRawTransactionSync').length === 0; i++) {
    const before = other.calls.length;
    const r = (
      await post(sy.url, { jsonrpc: '2.0', id: i, method: 'eth_sendRawTransactionSync', params: [raw] })
    ).json();
    if (hanging.calls.some((c) => c.method === 'eth_sendRawTransactionSync')) {
      t.equal(r.error?.code, -32002, 'the timeout answers -32002');
      t.equal(
        other.calls.slice(before).filter((c) => c.method === 'eth_sendRawTransactionSync').length,
        0,
        'not retried on the other node',
      );
    } else t.same(r.result, { status: '0x1' });
  }
  t.equal(
    hanging.calls.filter((c) => c.method === 'eth_sendRawTransactionSync').length,
    1,
    'the hanging node was asked once',
  );
});
