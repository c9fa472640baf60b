/**
 * Rate limits end to end (SPEC 3.2, 6): the wiring from the HTTP front to the limiter and back —
 * HTTP 429 with Retry-After, -32005 objects in their slots, ids echoed, the metric — with figures that
 * hold however slow the machine is: under ONE_CALL (fixtures/tools.ts) exactly one call per client
 * is admitted for the whole test. The window arithmetic (1-second windows, refills,
 * refunds, batch order) is checked exactly on a controlled clock in rate.test.ts.
 */
import t, { type Test } from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { Client, hourWait, isRateLimited, metric, ONE_CALL, rpc, type Reply } from './fixtures/tools.js';

const anvil = await startAnvil();
t.teardown(() => anvil.stop());

async function fresh(
  t: Test,
  rateLimit: Record<string, unknown> = {},
): Promise<{ sy: RunningSwitchyard; client: Client }> {
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: anvil.url }],
    rateLimit: { ...ONE_CALL, ...rateLimit },
  });
  return { sy, client: new Client(t, sy.url) };
}

const admitted = (r: Reply): boolean => r.status === 200 && r.json?.result === '0xba';
t.test('a burst of 50 single calls: one admitted, 49 get 429 + Retry-After + -32005, counted', async (t) => {
  const { sy, client } = await fresh(t);
  const replies = await client.burst(50, () => rpc('eth_chainId'));
  const refused = replies.filter((r) => r.status === 429);
  t.equal(replies.filter(admitted).length, 1, 'one call admitted and answered by the node');
  t.equal(refused.length, 49, 'the other 49 refused with HTTP 429');
  t.ok(
    refused.every((r) => isRateLimited(r.json) && !Array.isArray(r.json)),
    'each refusal is one -32005 "rate limit exceeded" object with data.retryAfterSeconds',
  );
  t.ok(
    refused.every(
      (r) =>
        hourWait(r.json.error.data.retryAfterSeconds) &&
        r.headers['retry-after'] === String(r.json.error.data.retryAfterSeconds),
    ),
    'Retry-After points at the burst window end (about an hour), the same in the header and in data',
  );
  t.ok(
    refused.every((r) => r.json.id !== null && r.json.error.data.reason === 'RATE_LIMITED'),
    'ids echoed, reason RATE_LIMITED',
  );
  t.equal(
    await metric(sy, 'switchyard_rate_limited_calls_total', { reason: 'rate' }),
    49,
    'switchyard_rate_limited_calls_total{reason="rate"} counts the 49',
  );
});

t.test(
  'batch partial admission: answers and -32005 in their slots, in order; a batch wholly over gets 429',
  async (t) => {
    const { client: c } = await fresh(t);
    const forty = await c.post(Array.from({ length: 40 }, (_, i) => rpc('eth_chainId', [], i + 1)));
    t.equal(forty.status, 200, 'partly admitted: HTTP 200');
    t.equal(forty.headers['retry-after'], undefined, 'no Retry-After on a partly admitted batch');
    t.same(
      forty.json.map((o: any) => o.id),
      Array.from({ length: 40 }, (_, i) => i + 1),
      'one answer per call, in request order',
    );
    t.equal(forty.json[0].result, '0xba', 'the first call answered');
    t.ok(forty.json.slice(1).every(isRateLimited), 'the other 39 get -32005 in their slots');
    const five = await c.post(Array.from({ length: 5 }, (_, i) => rpc('eth_chainId', [], 100 + i)));
    t.equal(five.status, 429, 'every call of a batch over: HTTP 429');
    t.ok(hourWait(Number(five.headers['retry-after'])), `with Retry-After (${five.headers['retry-after']})`);
    t.ok(Array.isArray(five.json) && five.json.length === 5, 'the body is still one answer per call');
    t.ok(five.json.every(isRateLimited), 'each -32005');
    t.same(
      five.json.map((o: any) => o.id),
      [100, 101, 102, 103, 104],
      'ids echoed in order',
    );
  },
);

t.test('a notification over the limit: 429 still carries a -32005 body, id null', async (t) => {
  const { client } = await fresh(t);
  t.ok(admitted(await client.post(rpc('eth_chainId'))), 'the one call of the budget');
  for (const body of [
    { jsonrpc: '2.0', method: 'eth_chainId', params: [] },
    [
      { jsonrpc: '2.0', method: 'eth_chainId' },
      { jsonrpc: '2.0', method: 'eth_chainId' },
    ],
  ]) {
    const r = await client.post(body);
    t.equal(r.status, 429, 'HTTP 429');
    t.ok(isRateLimited(r.json) && !Array.isArray(r.json), 'one -32005 "rate limit exceeded" object');
    t.equal(r.json?.id, null, 'id null');
    t.equal(r.headers['retry-after'], String(r.json?.error?.data?.retryAfterSeconds), 'Retry-After as in data');
  }
});

t.test(
  'a call costing more than the limits ever admit: -32005 COST_OVER_LIMIT, HTTP 200, no retry promised',
  async (t) => {
    // ONE_CALL: ratePerSec 1, an allowance of 2; eth_getLogs costs 3, more than either.
    const { sy, client } = await fresh(t, { methodCost: { ...ONE_CALL.methodCost, eth_getLogs: 3 } });
    const alone = await client.post(rpc('eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x0' }], 7));
    t.equal(alone.status, 200, 'HTTP 200: a 429 would tell the client to retry');
    t.equal(alone.headers['retry-after'], undefined, 'no Retry-After');
    t.same(alone.json, {
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: -32005,
        message: 'call costs more than the rate limit ever admits',
        data: { reason: 'COST_OVER_LIMIT' },
      },
    });
    const batch = await client.post([
      rpc('eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x0' }], 8),
      rpc('eth_chainId', [], 9),
    ]);
    t.equal(batch.status, 200);
    t.equal(batch.json[0].error.data.reason, 'COST_OVER_LIMIT', 'in its slot');
    t.equal(batch.json[1].result, '0xba', 'charged nothing: the one call the limits admit still fits');
    const over = await client.post([
      rpc('eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x0' }], 10),
      rpc('eth_chainId', [], 11),
    ]);
    t.equal(over.status, 429, 'with a call a wait would admit, the batch is a 429 as before');
    t.ok(hourWait(Number(over.headers['retry-after'])), "its Retry-After is that call's");
    t.equal(over.json[0].error.data.reason, 'COST_OVER_LIMIT');
    t.ok(isRateLimited(over.json[1]));
    t.equal(
      await metric(sy, 'switchyard_calls_total', { reason: 'COST_OVER_LIMIT' }),
      3,
      'counted by reason in calls by outcome',
    );
  },
);

t.test('perIp: null turns the per-IP limit off', async (t) => {
  const { client } = await fresh(t, { perIp: null });
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
  const { client } = await fresh(t, { apiKeys: [{ name: 'partner', key: KEY, ...ONE_CALL.perIp }] });
  const byHeader = await client.burst(
    4,
    () => rpc('eth_chainId'),
    () => ({ 'x-api-key': KEY }),
  );
  const byPath = await Promise.all(
    Array.from({ length: 4 }, async () => {
      const r = await client.pool.request({
        path: `/key/${KEY}`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(rpc('eth_chainId')),
      });
      return { status: r.statusCode, json: (await r.body.json()) as any };
    }),
  );
  const ip = await client.burst(5, () => rpc('eth_chainId'));
  const unknown = await client.post(rpc('eth_chainId'), { 'x-api-key': 'not-a-key-of-this-config' });
  const keyed = [...byHeader, ...byPath];
  t.equal(
    keyed.filter((r) => r.status === 200 && r.json.result === '0xba').length,
    1,
    "header and /key/<key> share the key's budget of one call",
  );
  t.equal(keyed.filter((r) => r.status === 429 && isRateLimited(r.json)).length, 7, 'the other 7 refused');
  t.equal(ip.filter(admitted).length, 1, "the client's own IP budget (one call) was not touched by its keyed calls");
  t.equal(unknown.status, 401, 'an unknown key: 401');
  t.equal(unknown.json.error?.code, -32001, '-32001');
  t.equal(unknown.json.error?.message, 'invalid API key');
});
