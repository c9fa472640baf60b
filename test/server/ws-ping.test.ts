/**
 * Pings find dead peers: a client whose connection stays open but never answers a ping is cut
 * after the next one (counted as a dead_peer close), while a live client on the same server keeps
 * its socket and its subscription.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect } from 'node:net';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket } from '../helpers/ws.js';

t.test('a peer that never answers pings is terminated; a live one stays', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: anvil.url }],
    subscriptions: { pingIntervalMs: 1000 },
  });
  const { hostname: host, port } = new URL(sy.url);

  // A dead peer: the WebSocket handshake by hand, then frames read and dropped, no pong ever sent.
  const dead = connect(Number(port), host);
  t.teardown(() => dead.destroy());
  await once(dead, 'connect');
  dead.write(
    `GET / HTTP/1.1\r\nHost: ${host}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  const [first] = (await once(dead, 'data')) as [Buffer];
  t.match(first.toString(), /^HTTP\/1\.1 101 /, 'the upgrade was accepted');
  dead.on('data', () => undefined);
  let deadClosed = false;
  dead.on('close', () => (deadClosed = true));

  const live = await openSocket(t, sy.url.replace('http', 'ws'));
  const sub = await live.ask('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}');
  t.match(sub.result, /^0x[0-9a-f]+$/, 'the live client subscribed');

  await waitFor('the dead peer cut off', () => deadClosed, { timeoutMs: 30_000 });
  const closes = await waitFor('the close counted', async () => {
    const text = await (await fetch(`${sy.adminUrl}/metrics`)).text();
    const [n] = metricSamples(text, 'switchyard_ws_closes_total', { reason: 'dead_peer' });
    return n !== undefined && n >= 1 ? n : undefined;
  });
  t.equal(closes, 1, 'one dead_peer close');
  const answer = await live.ask('{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}');
  t.equal(answer.result, '0xba', 'the live client, pinged all along, still answers');
});
