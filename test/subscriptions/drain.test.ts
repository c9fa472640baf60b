/**
 * Shutdown over WebSocket (SPEC 9): a call received before the drain began is answered and its
 * answer written before the socket gets 1001; a frame arriving during the drain is refused with
 * -32005 "server is shutting down", in its turn.
 */
import t from 'tap';
import { startHoldingNode } from '../helpers/fake-node.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket } from '../helpers/ws.js';

t.test('a WebSocket call in flight at shutdown is answered before the 1001 close', async (t) => {
  // eth_getBalance is held until release(): the call spans the drain.
  const { node, held, release } = await startHoldingNode(t);
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'slow', url: node.url }],
    server: { shutdownDelayMs: 0, shutdownGraceMs: 20_000 },
  });
  const ws = await openSocket(t, sy.url.replace('http', 'ws'));
  const order: string[] = [];
  ws.socket.on('message', (data) => order.push(`message ${data.toString()}`));
  ws.socket.on('close', (code) => order.push(`close ${code}`));

  ws.socket.send(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 'slow',
      method: 'eth_getBalance',
      params: ['0x0000000000000000000000000000000000000000', 'latest'],
    }),
  );
  await waitFor('the slow call reached the node', () => held() === 1);

  const drained = sy.app.drain({ delay: false });
  ws.socket.send('{"jsonrpc":"2.0","id":"late","method":"eth_chainId"}');
  const refused = async (): Promise<number> =>
    metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_calls_total', {
      method: 'invalid',
      reason: 'SHUTTING_DOWN',
    })[0] ?? 0;
  await waitFor('the late frame refused', async () => (await refused()) === 1);
  t.same(order, [], 'nothing answered or closed while the call is in flight');

  release();
  const closed = await ws.closed;
  await drained;
  t.equal(closed.code, 1001, 'closed with 1001');
  t.equal(order.length, 3, `two answers, then the close: ${order.join(' | ')}`);
  t.same(
    JSON.parse(order[0]!.slice('message '.length)),
    { jsonrpc: '2.0', id: 'slow', result: '0x2a' },
    'first: the in-flight call, answered',
  );
  const late = JSON.parse(order[1]!.slice('message '.length));
  t.same(
    [late.id, late.error.code, late.error.message],
    [null, -32005, 'server is shutting down'],
    'then: the late frame, refused',
  );
  t.equal(order[2], 'close 1001', 'then the 1001 close');
});
