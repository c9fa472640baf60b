/**
 * The per-IP socket cap counts established sockets only: upgrades the ws library rejects (no
 * Sec-WebSocket-Key, a client gone before the handshake) leave no count behind, so a valid client
 * from the same IP still connects afterwards.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket, rawUpgrade } from '../helpers/ws.js';

t.test('rejected handshakes do not use up the per-IP socket cap', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'solo', url: node.url }],
    subscriptions: { maxConnectionsPerIp: 4 },
  });
  const port = sy.app.ports.http;

  const noKey = ['Sec-WebSocket-Version: 13'];
  const statuses: string[] = [];
  for (let i = 0; i < 8; i++) statuses.push(await rawUpgrade(port, noKey));
  t.ok(
    statuses.every((s) => s.startsWith('HTTP/1.1 400')),
    `8 upgrades without a key: each 400 (${[...new Set(statuses)].join(', ')})`,
  );
  const wrongVersion = ['Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 7'];
  for (let i = 0; i < 4; i++) t.match(await rawUpgrade(port, wrongVersion), /^HTTP\/1\.1 400/, 'wrong version: 400');
  // A valid handshake whose client hung up first: the library drops it without a socket.
  const valid = ['Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13'];
  for (let i = 0; i < 4; i++) await rawUpgrade(port, valid, { hangUp: true });

  const url = sy.url.replace('http', 'ws');
  const sockets = [];
  for (let i = 0; i < 4; i++) sockets.push(await openSocket(t, url));
  t.equal(
    (await sockets[0]!.ask('{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}')).result,
    '0xba',
    'four valid sockets open and answer',
  );
  const gauge = metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_ws_connections');
  t.same(gauge, [4], 'switchyard_ws_connections: 4');
  await t.rejects(openSocket(t, url), /429/, 'the fifth valid socket: 429');

  // Closing one frees its place.
  sockets[0]!.socket.close();
  await sockets[0]!.closed;
  await waitFor(
    'the server saw the close',
    async () => metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_ws_connections')[0] === 3,
  );
  const again = await openSocket(t, url);
  t.equal(
    (await again.ask('{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}')).result,
    '0xba',
    'a place freed by a close is taken again',
  );
});
