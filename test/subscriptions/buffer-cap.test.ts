/**
 * subscriptions.maxBufferBytes caps data a client has not taken, not the size of one answer: a
 * reader that keeps up gets answers larger than the cap, one that stops reading is closed with 1013.
 */
import t from 'tap';
import WebSocket from 'ws';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket } from '../helpers/ws.js';

t.test('an answer larger than maxBufferBytes reaches a fast reader; a stopped reader gets 1013', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'solo', url: node.url }],
    subscriptions: { maxBufferBytes: 2_000 },
  });
  const url = sy.url.replace('http', 'ws');
  // 100 answers of ~40 bytes: about 4 kB, twice the cap.
  const batch = `[${Array.from({ length: 100 }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"eth_chainId"}`).join(',')}]`;

  const fast = await openSocket(t, url);
  for (let round = 0; round < 5; round++) {
    const answer = await fast.ask(batch);
    t.ok(
      Array.isArray(answer) && answer.length === 100 && answer.every((a: { result: string }) => a.result === '0xba'),
      `round ${round}: the whole batch answered`,
    );
    t.ok(JSON.stringify(answer).length > 2_000, 'the answer is larger than the cap');
  }
  t.equal(fast.socket.readyState, WebSocket.OPEN, 'the fast reader stays open');

  // A reader that stops taking data: its unsent answers pile up past the cap, then it is closed.
  const slow = await openSocket(t, url);
  const raw = (slow.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  raw.pause();
  for (let i = 0; i < 5_000; i++) slow.socket.send(batch);
  await waitFor(
    'the slow reader closed',
    async () =>
      (metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_ws_closes_total', {
        reason: 'slow_reader',
      })[0] ?? 0) >= 1,
  );
  raw.resume();
  t.equal((await slow.closed).code, 1013, 'slow reader: close 1013');
});
