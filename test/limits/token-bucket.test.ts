/**
 * Rate-limit figures (SPEC 3.2, 6; README "Rate limits"): with perIp {ratePerSec 10, burst 30,
 * burstWindowSec 10} a client has 10 units in each 1-second sustained window plus a burst allowance
 * of 20 units per 10 s. Both windows are fixed and start at the client's first charge, so calls
 * that all arrive within one second of it meet exactly one sustained window: the figures below are
 * exact. Every scenario checks it really ran inside one second and, if the machine was too slow,
 * runs again on a fresh instance rather than guessing.
 */
import t, { type Test } from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { Client, GET_LOGS, inOneWindow, isRateLimited, metric, ONE_WINDOW_MS, rpc, type Reply } from './fixtures/tools.js';

const anvil = await startAnvil();
t.teardown(() => anvil.stop());

const PER_IP = { ratePerSec: 10, burst: 30, burstWindowSec: 10 };
interface Fresh {
  sy: RunningSwitchyard;
  client: Client;
  close(): Promise<void>;
}

async function fresh(t: Test, rateLimit: Record<string, unknown> = {}): Promise<Fresh> {
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'a', url: anvil.url }], rateLimit: { perIp: PER_IP, ...rateLimit } });
  const client = new Client(t, sy.url);
  await client.warm(50);
  return { sy, client, close: () => sy.close() };
}

const admitted = (r: Reply): boolean => r.status === 200 && r.json?.result === '0xba';

t.test('a burst of 50 calls at once: exactly 30 admitted, 20 get 429 + Retry-After + -32005; then 10 per second', async (t) => {
  const { client } = await inOneWindow(
    t,
    () => fresh(t),
    ({ client }) => client.burst(50, () => rpc('eth_chainId')),
    async (replies, { sy }) => {
      const ok = replies.filter(admitted);
      const refused = replies.filter((r) => r.status === 429);
      t.equal(ok.length, 30, 'burst (30) calls admitted');
      t.equal(refused.length, 20, 'the other 20 refused with HTTP 429');
      t.equal(ok.length + refused.length, 50, 'nothing else');
      t.ok(
        refused.every((r) => isRateLimited(r.json) && !Array.isArray(r.json)),
        'each refusal is one -32005 "rate limit exceeded" object with data.retryAfterSeconds',
      );
      t.ok(
        refused.every((r) => r.headers['retry-after'] === '1' && r.json.error.data.retryAfterSeconds === 1),
        'Retry-After: 1 (the sustained window restarts within a second) in the header and in data',
      );
      t.ok(
        refused.every((r) => r.json.id !== null && r.json.error.data.reason === 'RATE_LIMITED'),
        'ids echoed, reason RATE_LIMITED',
      );
      t.equal(await metric(sy, 'switchyard_rate_limited_calls_total', { reason: 'rate' }), 20, 'switchyard_rate_limited_calls_total{reason="rate"} counts the 20');
    },
  );

  // The sustained window started at the burst's first call; once it has passed, 10 units are back.
  // The burst allowance (10 s window) is still spent, so this second is worth exactly ratePerSec.
  await waitFor('a call admitted again', async () => admitted(await client.post(rpc('eth_chainId'))), { timeoutMs: 5_000, intervalMs: 25 });
  // The call just admitted opened a new sustained window: 9 units left in it.
  const started = performance.now();
  const next = await client.burst(20, () => rpc('eth_chainId'));
  const ms = performance.now() - started;
  t.ok(ms < ONE_WINDOW_MS, `second burst inside the new window (${Math.round(ms)} ms)`);
  t.equal(next.filter(admitted).length, 9, 'the new window admits ratePerSec (10) calls: the probe and 9 more');
  t.equal(next.filter((r) => r.status === 429 && isRateLimited(r.json)).length, 11, 'the rest are refused');
});

t.test('per-method cost: eth_getLogs costs 10 units by default', async (t) => {
  await inOneWindow(
    t,
    () => fresh(t),
    async ({ client: c }) => {
      // 10 (sustained) + 10 + 10 (burst allowance) = 30: the budget is spent, a cost-1 call is over.
      const batch = await c.post([GET_LOGS(), GET_LOGS(), GET_LOGS(), rpc('eth_chainId')]);
      const single = await c.post(rpc('eth_chainId'));
      return { batch, single };
    },
    ({ batch, single }) => {
      t.equal(batch.status, 200, 'a partly admitted batch is HTTP 200');
      t.equal(batch.json.length, 4);
      t.ok(
        batch.json.slice(0, 3).every((o: any) => Array.isArray(o.result)),
        'three eth_getLogs answered by the node',
      );
      t.ok(isRateLimited(batch.json[3]), 'the 31st unit is over: -32005 in its slot');
      t.equal(single.status, 429, 'and a single call after it gets 429');
    },
  );
});

t.test('a call costing more than ratePerSec can only spend the burst allowance', async (t) => {
  await inOneWindow(
    t,
    () => fresh(t, { methodCost: { eth_blockNumber: 15 } }),
    async ({ client: c }) => [await c.post(rpc('eth_blockNumber')), await c.post(rpc('eth_blockNumber'))],
    ([first, second]) => {
      t.equal(first!.status, 200, 'cost 15 fits the burst allowance (20)');
      t.match(first!.json.result, /^0x/);
      t.equal(second!.status, 429, 'a second one does not: 5 left in the allowance, and 15 never fits the sustained 10');
      t.ok(isRateLimited(second!.json));
      const wait = second!.json.error.data.retryAfterSeconds as number;
      t.ok(wait >= 9 && wait <= 10, `retryAfterSeconds points at the burst window's end, not the next second (${wait})`);
      t.equal(second!.headers['retry-after'], String(wait), 'Retry-After says the same');
    },
  );
});

t.test('batch partial admission: 40 calls with 30 units left; then a batch wholly over gets 429', async (t) => {
  await inOneWindow(
    t,
    () => fresh(t),
    async ({ client: c }) => {
      const forty = await c.post(Array.from({ length: 40 }, (_, i) => rpc('eth_chainId', [], i + 1)));
      const five = await c.post(Array.from({ length: 5 }, (_, i) => rpc('eth_chainId', [], 100 + i)));
      return { forty, five };
    },
    ({ forty, five }) => {
      t.equal(forty.status, 200, 'partly admitted: HTTP 200');
      t.equal(forty.json.length, 40, 'one answer per call');
      t.same(
        forty.json.map((o: any) => o.id),
        Array.from({ length: 40 }, (_, i) => i + 1),
        'answers in request order',
      );
      t.ok(
        forty.json.slice(0, 30).every((o: any) => o.result === '0xba'),
        'the first 30 calls answered',
      );
      t.ok(forty.json.slice(30).every(isRateLimited), 'the last 10 get -32005 in their slots');
      t.equal(five.status, 429, 'every call of a batch over: HTTP 429');
      t.match(five.headers['retry-after'], /^[1-9]\d*$/, 'with Retry-After');
      t.ok(Array.isArray(five.json) && five.json.length === 5, 'the body is still one answer per call');
      t.ok(five.json.every(isRateLimited), 'each -32005');
      t.same(
        five.json.map((o: any) => o.id),
        [100, 101, 102, 103, 104],
        'ids echoed in order',
      );
    },
  );
});

t.test('a refused call costs nothing: after a refused eth_getLogs, cheaper calls still fit', async (t) => {
  await inOneWindow(
    t,
    () => fresh(t),
    async ({ client: c }) => {
      const spend = await c.post(Array.from({ length: 25 }, (_, i) => rpc('eth_chainId', [], i + 1)));
      const logs = await c.post(GET_LOGS());
      const logsAgain = await c.post(GET_LOGS());
      const six = await c.post(Array.from({ length: 6 }, (_, i) => rpc('eth_chainId', [], i + 1)));
      return { spend, logs, logsAgain, six };
    },
    ({ spend, logs, logsAgain, six }) => {
      t.ok(spend.status === 200 && spend.json.every((o: any) => o.result === '0xba'), '25 units spent, 5 left');
      t.equal(logs.status, 429, 'eth_getLogs (10) does not fit in 5');
      t.ok(isRateLimited(logs.json));
      t.equal(logsAgain.status, 429, 'nor does a second one');
      t.equal(six.status, 200);
      t.equal(six.json.filter((o: any) => o.result === '0xba').length, 5, 'the 5 units left are all still there');
      t.ok(isRateLimited(six.json[5]), 'and the 6th call is over');
    },
  );
});

t.test('perIp: null turns the per-IP limit off', async (t) => {
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'a', url: anvil.url }], rateLimit: { perIp: null } });
  const client = new Client(t, sy.url);
  await client.warm(50);
  const replies = await client.burst(50, () => rpc('eth_chainId'));
  t.equal(replies.filter(admitted).length, 50, 'all 50 admitted');
});

t.test('rateLimit.exempt: listed client IPs are never limited', async (t) => {
  const { client } = await fresh(t, { exempt: ['127.0.0.0/8'] });
  const replies = await client.burst(50, () => rpc('eth_chainId'));
  t.equal(replies.filter(admitted).length, 50, 'all 50 admitted from 127.0.0.1');
});

t.test('API keys: their own budget, by header or by path; an unknown key is refused', async (t) => {
  const KEY = 'partner-key-0123456789';
  await inOneWindow(
    t,
    () => fresh(t, { apiKeys: [{ name: 'partner', key: KEY, ratePerSec: 5, burst: 5 }] }),
    async ({ client }) => {
      const byHeader = await client.burst(
        4,
        () => rpc('eth_chainId'),
        () => ({ 'x-api-key': KEY }),
      );
      const byPath = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const r = await client.pool.request({ path: `/key/${KEY}`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rpc('eth_chainId')) });
          return { status: r.statusCode, json: (await r.body.json()) as any };
        }),
      );
      const ip = await client.burst(30, () => rpc('eth_chainId'));
      const unknown = await client.post(rpc('eth_chainId'), { 'x-api-key': 'not-a-key-of-this-config' });
      return { byHeader, byPath, ip, unknown };
    },
    ({ byHeader, byPath, ip, unknown }) => {
      const keyed = [...byHeader, ...byPath];
      t.equal(keyed.filter((r) => r.status === 200 && r.json.result === '0xba').length, 5, "header and /key/<key> share the key's budget of 5");
      t.equal(keyed.filter((r) => r.status === 429 && isRateLimited(r.json)).length, 3, 'the other 3 refused');
      t.equal(ip.filter(admitted).length, 30, "the client's IP budget (30) was not touched by its keyed calls");
      t.equal(unknown.status, 401, 'an unknown key: 401');
      t.equal(unknown.json.error?.code, -32001, '-32001');
      t.equal(unknown.json.error?.message, 'invalid API key');
    },
  );
});
