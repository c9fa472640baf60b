/**
 * Guesses at API keys cost the guesser (issue 22): a request with a key the configuration does not
 * list is charged one unit of its IP's rate budget, so it gets 401 while the budget lasts and then
 * 429 with Retry-After (a WebSocket upgrade with an unknown key too); a client on another IP,
 * and the key's real holder, are served meanwhile.
 */
import t from 'tap';
import { Agent, request } from 'undici';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { rawUpgrade } from '../helpers/ws.js';

const KEY = 'a-real-key-0123456789';
const CALL = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}';
const GUESSES = 60;

t.test(`${GUESSES} unknown keys from one IP: 401 within its budget, then 429; others are served`, async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: anvil.url }],
    rateLimit: {
      perIp: { ratePerSec: 5, burst: 10, burstWindowSec: 60 },
      apiKeys: [{ name: 'real', key: KEY, ratePerSec: 1000, burst: 1000 }],
    },
  });
  const other = new Agent({ localAddress: '127.0.0.2' });
  t.teardown(() => other.close());
  const statuses: number[] = [];
  let retryAfter: string | undefined;
  let body = '';
  const started = performance.now();
  for (let i = 0; i < GUESSES; i++) {
    // Alternating the header and the path: both are ways to present a key.
    const guess = `guess-${i}-0123456789abcdef`;
    const r =
      i % 2 === 0
        ? await request(sy.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': guess },
            body: CALL,
          })
        : await request(`${sy.url}/key/${guess}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: CALL,
          });
    const text = await r.body.text();
    statuses.push(r.statusCode);
    if (r.statusCode === 429) {
      retryAfter = r.headers['retry-after'] as string;
      body = text;
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const refused = statuses.filter((s) => s === 429).length;
  const unknown = statuses.filter((s) => s === 401).length;
  t.equal(
    unknown + refused,
    GUESSES,
    `every guess got 401 or 429 (${unknown} 401, ${refused} 429 in ${seconds.toFixed(1)} s)`,
  );
  // The budget: 10 in the first second (burst), 5 more each further second, so at most 10 + 5 x ceil(seconds) + 5.
  t.ok(unknown <= 15 + 5 * Math.ceil(seconds), `401s bounded by the IP's budget (${unknown})`);
  t.ok(refused >= GUESSES - 15 - 5 * Math.ceil(seconds), `the rest 429 (${refused})`);
  t.ok(Number(retryAfter) >= 1, `429 carries Retry-After (${retryAfter})`);
  t.match(
    JSON.parse(body),
    { id: null, error: { code: -32005, data: { reason: 'RATE_LIMITED' } } },
    'and a -32005 body',
  );

  const upgrade = await rawUpgrade(sy.app.ports.http, [
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    'Sec-WebSocket-Version: 13',
    'X-Api-Key: guess-ws-0123456789abcdef',
  ]);
  t.match(upgrade, /^HTTP\/1\.1 429/, `a WebSocket upgrade with an unknown key from that IP: 429 too (${upgrade})`);
  const fromOther = await request(sy.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: CALL,
    dispatcher: other,
  });
  t.equal(
    await fromOther.body.text(),
    '{"jsonrpc":"2.0","id":1,"result":"0xba"}',
    'a client on another IP is answered',
  );
  const holder = await request(sy.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    body: CALL,
  });
  t.equal(
    await holder.body.text(),
    '{"jsonrpc":"2.0","id":1,"result":"0xba"}',
    "the real key's holder on the guessing IP is answered (its own budget)",
  );
  const m = (await get(`${sy.adminUrl}/metrics`)).text;
  t.same(
    metricSamples(m, 'switchyard_calls_total', { method: 'invalid', reason: 'RATE_LIMITED' }),
    [refused],
    'each refused guess counts as one call of method invalid',
  );
});
