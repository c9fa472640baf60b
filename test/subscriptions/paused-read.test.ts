/**
 * A socket Switchyard stops reading (subscriptions.maxFramesInFlight reached behind a slow call) is
 * waited for, not judged: its pongs sit unread meanwhile, yet it is not cut as a dead peer, and
 * once the slow answer comes every frame is answered in order and reading resumes.
 */
import t from 'tap';
import WebSocket from 'ws';
import { Wallet } from 'ethers';
import { DEV_KEY, startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket } from '../helpers/ws.js';

t.test('a socket not read behind a slow call survives pings, then all its frames are answered in order', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'solo', url: node.url }],
    subscriptions: { pingIntervalMs: 300, maxFramesInFlight: 4 },
    routing: { sendRawTransactionSyncTimeoutMs: 2_500 },
  });
  // A nonce gap: anvil holds eth_sendRawTransactionSync of it until Switchyard's wait ends (2.5 s).
  const raw = await new Wallet(DEV_KEY).signTransaction({
    to: '0x000000000000000000000000000000000000dEaD',
    value: 1n,
    nonce: 3,
    gasLimit: 21_000n,
    maxFeePerGas: 20_000_000_000n,
    maxPriorityFeePerGas: 1n,
    chainId: 186n,
    type: 2,
  });
  // Opened only now: a client busy signing for a whole ping interval would rightly be cut.
  const ws = await openSocket(t, sy.url.replace('http', 'ws'));
  let closedWith = 'not closed';
  void ws.closed.then(({ code, reason }) => (closedWith = `${code} ${reason}`));
  const sentAt = Date.now();
  ws.socket.send(`{"jsonrpc":"2.0","id":"slow","method":"eth_sendRawTransactionSync","params":["${raw}"]}`);
  for (let i = 0; i < 20; i++) ws.socket.send(`{"jsonrpc":"2.0","id":${i},"method":"eth_chainId"}`);
  await waitFor('21 answers', () => ws.messages.length >= 21 || ws.socket.readyState !== WebSocket.OPEN, {
    timeoutMs: 20_000,
  });
  t.ok(
    Date.now() - sentAt >= 2_000,
    `the slow call held the socket for ${Date.now() - sentAt} ms (several ping intervals)`,
  );
  t.equal(ws.socket.readyState, WebSocket.OPEN, `the socket is still open (${closedWith})`);
  t.same(
    ws.messages.map((m: { id: unknown }) => m.id),
    ['slow', ...Array.from({ length: 20 }, (_, i) => i)],
    'every frame answered, in order',
  );
  t.equal(ws.messages[0].error?.code, -32002, 'the held transaction: -32002 when the wait ends');
  const metrics = (await get(`${sy.adminUrl}/metrics`)).text;
  t.equal(
    metricSamples(metrics, 'switchyard_ws_closes_total', { reason: 'dead_peer' })[0] ?? 0,
    0,
    'no socket cut as a dead peer',
  );
  ws.messages.length = 0;
  t.equal(
    (await ws.ask('{"jsonrpc":"2.0","id":"after","method":"eth_chainId"}')).id,
    'after',
    'the socket is read again',
  );
});
