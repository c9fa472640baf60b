/**
 * A `logs` subscriber that stops reading costs only itself: what it is owed waits as a position in
 * the shared block, it is closed with 1013 once it is behind by MAX_BLOCKS_BEHIND blocks, and a
 * reader of the same logs on another socket meanwhile gets every log of every block, once, in order.
 */
import t from 'tap';
import { startAnvil, DEV_ADDRESS } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { call, get } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket } from '../helpers/ws.js';
import { MAX_BLOCKS_BEHIND } from '../../src/subscriptions/logs-fanout.js';
import { emitData, emitterInitCode } from './fixtures/emitter.js';

const LOGS = 500;
const SLOW_SUBSCRIPTIONS = 20;

t.test('a logs reader that stops reading is closed with 1013; another reader gets every log', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'solo', url: node.url }],
    subscriptions: { maxBufferBytes: 256 * 1024 },
  });
  const deploy = (await call(node.url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, data: emitterInitCode() }]))
    .result as string;
  const address = (
    await waitFor(
      'deployment',
      async () => (await call(node.url, 'eth_getTransactionReceipt', [deploy])).result ?? undefined,
    )
  ).contractAddress as string;
  const url = sy.url.replace('http', 'ws');

  const fast = await openSocket(t, url);
  const fastId = (
    await fast.ask(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['logs', { address }] }))
  ).result as string;
  const seen: { block: number; data: number }[] = [];
  fast.socket.on('message', (data) => {
    const m = JSON.parse(data.toString());
    if (m.params?.subscription === fastId)
      seen.push({ block: Number(m.params.result.blockNumber), data: Number.parseInt(m.params.result.data, 16) });
  });

  // Each block owes the slow socket SLOW_SUBSCRIPTIONS x LOGS notifications (~5 MB): it stops
  // reading, so once its socket buffers are full it falls behind by a block at a time.
  const slow = await openSocket(t, url);
  const batch = Array.from({ length: SLOW_SUBSCRIPTIONS }, (_, i) => ({
    jsonrpc: '2.0',
    id: i,
    method: 'eth_subscribe',
    params: ['logs', { address }],
  }));
  const answers = (await slow.ask(JSON.stringify(batch))) as { result?: string }[];
  t.equal(
    answers.filter((a) => typeof a.result === 'string').length,
    SLOW_SUBSCRIPTIONS,
    `${SLOW_SUBSCRIPTIONS} subscriptions on the slow socket`,
  );
  const raw = (slow.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  raw.pause();
  // A reader that does not read does not see its close frame either: the server's count says it.
  const slowClosed = async (): Promise<boolean> =>
    (metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_ws_closes_total', {
      reason: 'slow_reader',
    })[0] ?? 0) >= 1;

  const blocks: number[] = [];
  for (let i = 0; i < 40 && !(await slowClosed()); i++) {
    const tx = (
      await call(node.url, 'eth_sendTransaction', [
        { from: DEV_ADDRESS, to: address, data: emitData(LOGS), gas: '0x1c9c380' },
      ])
    ).result as string;
    const receipt = await waitFor(
      'a flood receipt',
      async () => (await call(node.url, 'eth_getTransactionReceipt', [tx])).result ?? undefined,
    );
    blocks.push(Number(receipt.blockNumber));
    // One block at a time: the fast reader has this block's logs before the next is made.
    await waitFor(
      'the fast reader has the block',
      async () => seen.length >= blocks.length * LOGS || (await slowClosed()),
    );
  }
  t.ok(
    blocks.length > MAX_BLOCKS_BEHIND,
    `${blocks.length} blocks of ${LOGS} logs made before the slow reader was closed (it is closed ${MAX_BLOCKS_BEHIND} blocks behind)`,
  );
  raw.resume();
  t.equal((await slow.closed).code, 1013, 'the slow reader: close 1013');

  await waitFor('every log at the fast reader', () => seen.length >= blocks.length * LOGS);
  const want = blocks.flatMap((block) => Array.from({ length: LOGS }, (_, data) => ({ block, data })));
  t.same(seen, want, 'the fast reader got every log of every block, once, in order');
  t.equal(
    (await fast.ask('{"jsonrpc":"2.0","id":9,"method":"eth_chainId"}')).result,
    '0xba',
    'the fast reader is still served',
  );
});
