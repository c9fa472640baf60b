/**
 * Concurrency guards (SPEC 6, docs/limits.md): calls being worked on at once, per
 * client IP (`server.maxInFlightPerIp`) and for the whole server (`server.maxInFlight`). Beyond
 * either, a request is shed at once with -32005, never queued. The node is a real anvil behind a
 * counting proxy that holds eth_getBalance calls (counted one by one as they arrive, batched or
 * not): a node slow to answer, for exactly as long as the test needs, so "shed before the slow calls finish" is checked by order, not by timing guesses.
 */
import t, { type Test } from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startCountingProxy } from '../helpers/counting-proxy.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { Client, metric, rpc, type Reply } from './fixtures/tools.js';

const anvil = await startAnvil();
t.teardown(() => anvil.stop());

const address = (i: number): string => `0x${(0x1000 + i).toString(16).padStart(40, '0')}`;
/** Distinct addresses: identical reads in flight would share one node call, and this is about calls. */
const balance = (i: number): object => rpc('eth_getBalance', [address(i), 'latest']);
/** The node holds balance calls of addresses 0..29; 30 and up answer at once. */
const HELD = (params: unknown[]): boolean =>
  typeof params[0] === 'string' && Number.parseInt(params[0], 16) - 0x1000 < 30;

interface Tracked {
  reply: Reply | undefined;
  done: Promise<Reply>;
}
function track(p: Promise<Reply>): Tracked {
  const tr: Tracked = { reply: undefined, done: p };
  void p.then((r) => (tr.reply = r));
  return tr;
}

async function setup(t: Test, server: Record<string, unknown>) {
  const proxy = await startCountingProxy(t, anvil.url);
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: proxy.url }],
    server: { trustedProxies: ['127.0.0.1/32'], ...server },
  });
  const client = new Client(t, sy.url);
  await client.warm(20);
  return { proxy, sy, client };
}

const isBalance = (r: Reply | undefined): boolean =>
  r?.status === 200 && typeof r.json?.result === 'string' && r.json.result.startsWith('0x');

t.test('per-IP in-flight bound: 10 concurrent calls with maxInFlightPerIp 5', async (t) => {
  const { proxy, sy, client } = await setup(t, { maxInFlightPerIp: 5, maxInFlight: 1000 });
  const hold = proxy.hold('eth_getBalance', HELD);
  // Counted per call as they arrive (Switchyard may send several in one upstream batch).
  const atNode = (): number => proxy.count('eth_getBalance', HELD);
  const calls = Array.from({ length: 10 }, (_, i) => track(client.post(balance(i))));
  await waitFor(
    '5 calls at the node and 5 answered',
    () => atNode() === 5 && calls.filter((c) => c.reply !== undefined).length === 5,
  );
  const shed = calls.filter((c) => c.reply !== undefined).map((c) => c.reply!);
  t.equal(shed.length, 5, '5 calls shed while the other 5 are still at the node');
  t.ok(
    shed.every(
      (r) =>
        r.status === 429 &&
        r.json.error?.code === -32005 &&
        r.json.error.message === 'too many concurrent calls from this client',
    ),
    'each: HTTP 429, -32005 "too many concurrent calls from this client"',
  );
  t.ok(
    shed.every((r) => r.json.error.data?.retryAfterSeconds === 1 && r.headers['retry-after'] === '1'),
    'with retryAfterSeconds 1 and Retry-After: 1',
  );
  t.ok(
    shed.every((r) => r.json.error.data.reason === 'IP_CONCURRENCY'),
    'reason IP_CONCURRENCY',
  );

  // One more slot taken leaves none: a batch of 2 needs 2 slots and is shed whole, each call its own -32005.
  const batch = await client.post([balance(20), balance(21)]);
  t.equal(batch.status, 429, 'a batch needing more slots than are free: 429');
  t.ok(
    Array.isArray(batch.json) && batch.json.length === 2 && batch.json.every((o: any) => o.error?.code === -32005),
    'one -32005 per call',
  );

  // Another client (X-Forwarded-For from the trusted proxy 127.0.0.1) has slots of its own.
  const other = await client.post(balance(30), { 'x-forwarded-for': '10.0.0.9' });
  t.ok(isBalance(other), 'another client IP is not affected');

  t.equal(
    await metric(sy, 'switchyard_rate_limited_calls_total', { reason: 'ip_concurrency' }),
    7,
    'switchyard_rate_limited_calls_total{reason="ip_concurrency"} counts the 7 shed calls',
  );
  hold.release();
  const held = await Promise.all(calls.filter((c) => !shed.includes(c.reply!)).map((c) => c.done));
  t.ok(held.every(isBalance), 'the 5 admitted calls are answered by the node once it answers');
  const after = await Promise.all(Array.from({ length: 5 }, (_, i) => client.post(balance(40 + i))));
  t.ok(after.every(isBalance), 'slots released: 5 calls at once are served again');
});

t.test('global in-flight bound: maxInFlight 6 sheds a 7th call with 503 at once', async (t) => {
  const { proxy, sy, client } = await setup(t, { maxInFlightPerIp: 4, maxInFlight: 6 });
  const hold = proxy.hold('eth_getBalance', HELD);
  const atNode = (): number => proxy.count('eth_getBalance', HELD);
  const a = Array.from({ length: 4 }, (_, i) => track(client.post(balance(i), { 'x-forwarded-for': '10.0.0.1' })));
  const b = Array.from({ length: 2 }, (_, i) => track(client.post(balance(10 + i), { 'x-forwarded-for': '10.0.0.2' })));
  await waitFor('6 calls at the node', () => atNode() === 6);
  const c = await client.post(balance(20), { 'x-forwarded-for': '10.0.0.3' });
  t.equal(c.status, 503, 'a third client, under its own per-IP bound: 503');
  t.equal(c.json.error?.code, -32005);
  t.equal(c.json.error?.message, 'server overloaded');
  t.equal(c.json.error?.data?.reason, 'OVERLOADED');
  t.equal(c.json.error?.data?.retryAfterSeconds, 1);
  t.equal(c.headers['retry-after'], '1', 'Retry-After: 1');
  // The 6 calls are held at the node until released below: an answer now means it did not queue.
  t.ok(
    [...a, ...b].every((x) => x.reply === undefined),
    'shed at once: before any of the slow calls finished',
  );
  t.equal(atNode(), 6, 'and it never reached the node');
  const notification = await client.post(
    { jsonrpc: '2.0', method: 'eth_getBalance', params: [address(21), 'latest'] },
    { 'x-forwarded-for': '10.0.0.3' },
  );
  t.equal(notification.status, 503, 'a notification needs a slot too: 503');
  t.equal(notification.json?.error?.code, -32005, 'and the refusal still has a body');
  t.equal(
    await metric(sy, 'switchyard_rate_limited_calls_total', { reason: 'overloaded' }),
    2,
    'switchyard_rate_limited_calls_total{reason="overloaded"}',
  );
  hold.release();
  t.ok((await Promise.all([...a, ...b].map((x) => x.done))).every(isBalance), 'the 6 slow calls are answered');
  t.ok(isBalance(await client.post(balance(32), { 'x-forwarded-for': '10.0.0.3' })), 'service is back');
});
