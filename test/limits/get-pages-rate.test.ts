/**
 * GET pages on the JSON-RPC port are rate limited per IP (issue 22): each GET (the uptime page,
 * its JSON, GET /) costs one unit of the client IP's budget; a flood from one IP gets 429 with
 * Retry-After while a client on another IP is served.
 */
import t from 'tap';
import { Agent, request } from 'undici';
import { startAnvil } from '../helpers/anvil.js';
import { startSwitchyard } from '../helpers/switchyard.js';

const FLOOD = 60;

t.test(`${FLOOD} GETs of /uptime from one IP: 429 past its budget, another IP served`, async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: anvil.url }],
    rateLimit: { perIp: { ratePerSec: 5, burst: 10, burstWindowSec: 60 } },
  });
  const other = new Agent({ localAddress: '127.0.0.2' });
  t.teardown(() => other.close());
  const paths = ['/uptime', '/uptime.json', '/'];
  const statuses: number[] = [];
  let limited: { retryAfter: string | undefined; body: string } | undefined;
  const started = performance.now();
  const otherMs: number[] = [];
  for (let i = 0; i < FLOOD; i++) {
    const r = await request(`${sy.url}${paths[i % paths.length]}`);
    const text = await r.body.text();
    statuses.push(r.statusCode);
    if (r.statusCode === 429) limited = { retryAfter: r.headers['retry-after'] as string, body: text };
    if (i % 10 === 9) {
      const s = performance.now();
      const o = await request(`${sy.url}/uptime`, { dispatcher: other });
      await o.body.text();
      t.equal(o.statusCode, 200, `meanwhile another IP gets the page (${i + 1} sent)`);
      otherMs.push(performance.now() - s);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const served = statuses.filter((s) => s === 200).length;
  const refused = statuses.filter((s) => s === 429).length;
  t.equal(
    served + refused,
    FLOOD,
    `every GET got 200 or 429 (${served} 200, ${refused} 429 in ${seconds.toFixed(1)} s)`,
  );
  // The budget: 10 in the first second (burst), 5 more each further second.
  t.ok(served <= 15 + 5 * Math.ceil(seconds), `200s bounded by the IP's budget (${served})`);
  t.ok(refused > 0, 'the flood is refused past it');
  t.ok(Number(limited?.retryAfter) >= 1, `429 carries Retry-After (${limited?.retryAfter})`);
  t.match(
    JSON.parse(limited?.body ?? '{}'),
    { error: { code: -32005, data: { reason: 'RATE_LIMITED' } } },
    'and a -32005 body',
  );
  t.ok(Math.max(...otherMs) < 2_000, `the other IP's slowest page: ${Math.round(Math.max(...otherMs))} ms`);
});
