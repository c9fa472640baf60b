/**
 * WebSocket refusals leave their trace in /metrics: every upgrade counts once in
 * switchyard_http_requests_total by status (101, or 429/404/401/400 when refused; an upgrade is a
 * GET, so no call), and a frame closed with 1009 counts as one call of method `invalid`
 * (BODY_TOO_LARGE), as a body too large does over HTTP.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket, rawUpgrade } from '../helpers/ws.js';

t.test('refused upgrades and too-large frames are counted', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'solo', url: node.url }],
    subscriptions: { maxConnectionsPerIp: 1, maxMessageBytes: 1024 },
  });
  const url = sy.url.replace('http', 'ws');
  const metrics = async (): Promise<string> => (await get(`${sy.adminUrl}/metrics`)).text;
  const requests = (text: string, status: number): number =>
    metricSamples(text, 'switchyard_http_requests_total', { status: String(status) })[0] ?? 0;

  t.match(
    await rawUpgrade(sy.app.ports.http, ['Sec-WebSocket-Version: 13']),
    /^HTTP\/1\.1 400/,
    'no Sec-WebSocket-Key: 400',
  );
  const a = await openSocket(t, url);
  await t.rejects(openSocket(t, url), /429/, 'over maxConnectionsPerIp: 429');
  await t.rejects(openSocket(t, `${url}/nope`), /404/, 'unknown path: 404');
  await t.rejects(openSocket(t, `${url}/key/unknown`), /401/, 'unknown API key: 401');

  let text = await metrics();
  t.same(
    [101, 429, 404, 401, 400].map((s) => requests(text, s)),
    [1, 1, 1, 1, 1],
    'http_requests_total: one upgrade each of 101, 429, 404, 401, 400',
  );
  t.same(metricSamples(text, 'switchyard_calls_total', { method: 'invalid' }), [], 'refused upgrades are no calls');

  a.socket.send(`{"jsonrpc":"2.0","id":1,"method":"web3_sha3","params":["0x${'ab'.repeat(1024)}"]}`);
  t.equal((await a.closed).code, 1009, 'a frame over maxMessageBytes: close 1009');
  text = await waitFor('the 1009 close counted', async () => {
    const m = await metrics();
    return (metricSamples(m, 'switchyard_ws_closes_total', { reason: 'too_large' })[0] ?? 0) >= 1 ? m : undefined;
  });
  t.same(
    metricSamples(text, 'switchyard_calls_total', { method: 'invalid', reason: 'BODY_TOO_LARGE' }),
    [1],
    'the too-large frame: one call of method invalid, reason BODY_TOO_LARGE',
  );
});
