/**
 * A batch's reads that go to a node leave together (src/routing/dispatch.ts, once per request from
 * server/front.ts): one exchange per chosen node and requirement, cut at the node's batch size; a
 * call whose answer is not a result goes on through the failover steps as a call sent alone would;
 * a node error is the answer; identical calls share one upstream call. Nodes are fake clients with scripted verdicts behind a
 * real Fleet, so every exchange and every call sent can be counted.
 */
import t, { type Test } from 'tap';
import { ResponseCache } from '../../src/cache/index.js';
import { Concurrency } from '../../src/limits/concurrency.js';
import type { RateLimits } from '../../src/limits/rate.js';
import { createLogger } from '../../src/log/logger.js';
import { MethodPolicy } from '../../src/methods/policy.js';
import { Metrics } from '../../src/metrics/registry.js';
import { Pipeline, type RequestContext } from '../../src/pipeline/index.js';
import { Front } from '../../src/server/front.js';
import type { UpstreamConfig } from '../../src/config/schema.js';
import type { Verdict } from '../../src/upstream/classify.js';
import { fakeFleet, type SentCall, TEST_FLEET_OPTIONS } from '../helpers/fake-client.js';

const OPTS = TEST_FLEET_OPTIONS;
const HEAD = 100;
const NOW = 1_000_000;
const log = createLogger('silent');

const addr = (i: number): string => `0x${i.toString(16).padStart(40, '0')}`;
/** The balance a node gives for an address: its number, so every answer is told apart. */
const balanceOf = (c: SentCall): Verdict => ({
  kind: 'result',
  result: JSON.stringify(`0x${BigInt(JSON.parse(c.paramsJson)[0] as string).toString(16)}`),
});
const transport: Verdict = { kind: 'retry', reason: 'transport', health: true };
const revert: Verdict = {
  kind: 'node-error',
  error: '{"code":3,"message":"execution reverted"}',
  code: 3,
  message: 'execution reverted',
};

interface Node {
  config?: Partial<UpstreamConfig>;
  latencyMs: number;
  answer: (c: SentCall) => Verdict | Promise<Verdict>;
}

/** A slot's answer as the client got it: a result's text, our error's reason, or a node's error text. */
interface Answer {
  result?: string;
  error?: { reason: string };
  nodeError?: string;
}

function stack(t: Test, nodes: Record<string, Node>) {
  const metrics = new Metrics({ processMetrics: false });
  const { fleet, clients } = fakeFleet(
    t,
    Object.fromEntries(
      Object.entries(nodes).map(([name, n]) => [
        name,
        { answers: [n.answer], latencyMs: n.latencyMs, head: HEAD, config: n.config },
      ]),
    ),
    { options: OPTS, now: NOW, metrics },
  );
  const cache = new ResponseCache({ maxBytes: 1_000_000, redis: null }, metrics, log);
  const pipeline = new Pipeline({
    fleet,
    metrics,
    policy: new MethodPolicy({ allow: [], deny: [], extensions: [] }),
    chainId: 186,
    maxLagBlocks: 2,
    recentBlocks: 128,
    broadcastTransactions: false,
    cache,
    maxAttempts: 3,
    upstreamTimeoutMs: 1000,
  });
  // Every request's context, to read the nodes it asked (its trail) in order.
  const contexts: RequestContext[] = [];
  const context = pipeline.context.bind(pipeline);
  pipeline.context = (...args) => {
    const ctx = context(...args);
    contexts.push(ctx);
    return ctx;
  };
  const admitAll = {
    admit: (_who: unknown, methods: readonly string[]) => methods.map(() => null),
  } as unknown as RateLimits;
  const front = new Front({
    pipeline,
    concurrency: new Concurrency(1000, 1000),
    rateLimits: admitAll,
    metrics,
    maxBatchSize: 100,
    requestTimeoutMs: 30_000,
  });
  /** One request through the front: each slot's outcome in slot order (results and node errors as text), and the trail. */
  const request = async (calls: [string, unknown[]][] | string): Promise<{ outcomes: Answer[]; trail: string[] }> => {
    const body =
      typeof calls === 'string'
        ? calls
        : JSON.stringify(calls.map(([method, params], id) => ({ jsonrpc: '2.0', id, method, params })));
    const before = contexts.length;
    const answered = await front.process(body, { ip: '127.0.0.1' }, log);
    const ctx = contexts[before]!;
    const slots = JSON.parse(String(answered.body)) as {
      result?: unknown;
      error?: { code: number; data?: { reason?: string } };
    }[];
    const outcomes = slots.map((r): Answer => {
      if ('result' in r) return { result: JSON.stringify(r.result) };
      if (r.error?.data?.reason !== undefined) return { error: { reason: r.error.data.reason } };
      return { nodeError: JSON.stringify(r.error) };
    });
    return { outcomes, trail: ctx.trail };
  };
  return { clients, request, metrics };
}

const balances = (from: number, n: number): [string, unknown[]][] =>
  Array.from({ length: n }, (_, i) => ['eth_getBalance', [addr(from + i), 'latest']]);
const expected = (from: number, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `"0x${(from + i).toString(16)}"`);

t.test('a batch of reads leaves as one exchange, each answer in its own slot', async (t) => {
  const { clients, request } = stack(t, {
    a: { latencyMs: 1, answer: balanceOf },
    b: { latencyMs: 10, answer: balanceOf },
  });
  const { outcomes, trail } = await request(balances(1, 10));
  t.same(
    outcomes.map((o) => o.result),
    expected(1, 10),
  );
  t.same(clients.get('a')!.exchanges, [10], 'one exchange of 10 calls with the cheaper node');
  t.same(clients.get('b')!.exchanges, [], 'none with the other');
  t.same(trail, ['a']);
  t.ok(
    clients.get('a')!.sent.every((c) => c.paramsJson.endsWith(`,"0x${HEAD.toString(16)}"]`)),
    'latest pinned to the head in each',
  );
});

t.test("exchanges are cut at the node's batch size", async (t) => {
  const { clients, request } = stack(t, { a: { latencyMs: 1, answer: balanceOf, config: { maxBatchSize: 4 } } });
  const { outcomes } = await request(balances(1, 10));
  t.same(
    outcomes.map((o) => o.result),
    expected(1, 10),
  );
  t.same(clients.get('a')!.exchanges, [4, 4, 2]);
});

t.test('a call the node could not answer fails over alone; the others keep their answers', async (t) => {
  // a fails the calls for odd addresses (a transport fault for those), b answers everything.
  const failOdd = (c: SentCall): Verdict =>
    BigInt(JSON.parse(c.paramsJson)[0] as string) % 2n === 1n ? transport : balanceOf(c);
  const { clients, request } = stack(t, {
    a: { latencyMs: 1, answer: failOdd },
    b: { latencyMs: 10, answer: balanceOf },
  });
  const { outcomes, trail } = await request(balances(1, 6));
  t.same(
    outcomes.map((o) => o.result),
    expected(1, 6),
    'every call answered, in place',
  );
  t.same(clients.get('a')!.exchanges, [6], 'the six left together');
  t.same(
    clients
      .get('b')!
      .sent.map((c) => JSON.parse(c.paramsJson)[0])
      .sort(),
    [addr(1), addr(3), addr(5)],
    'only the three that failed went on to b',
  );
  t.same(clients.get('b')!.exchanges, [], 'each on its own way (its failover steps, not another exchange)');
  t.same(trail.slice(0, 1), ['a']);
  t.equal(trail.filter((n) => n === 'b').length, 3);
});

t.test('a node error is the answer: verbatim, no failover', async (t) => {
  const revertFirst = (c: SentCall): Verdict => (JSON.parse(c.paramsJson)[0] === addr(1) ? revert : balanceOf(c));
  const { clients, request } = stack(t, {
    a: { latencyMs: 1, answer: revertFirst },
    b: { latencyMs: 10, answer: balanceOf },
  });
  const { outcomes } = await request(balances(1, 3));
  t.same(outcomes[0], { nodeError: '{"code":3,"message":"execution reverted"}' });
  t.same(
    outcomes.slice(1).map((o) => o.result),
    expected(2, 2),
  );
  t.equal(clients.get('b')!.sent.length, 0, 'b was not asked');
});

t.test('when every attempt fails, each call gets -32002 in its slot', async (t) => {
  const { request } = stack(t, {
    a: { latencyMs: 1, answer: () => transport },
    b: { latencyMs: 10, answer: () => transport },
  });
  const { outcomes } = await request(balances(1, 3));
  t.same(
    outcomes.map((o) => o.error?.reason),
    ['UPSTREAM_FAILED', 'UPSTREAM_FAILED', 'UPSTREAM_FAILED'],
  );
});

t.test('identical calls share one upstream call, within a batch and across requests', async (t) => {
  let release!: () => void;
  const held = new Promise<void>((r) => {
    release = r;
  });
  const slow = async (c: SentCall): Promise<Verdict> => {
    await held;
    return balanceOf(c);
  };
  const { clients, request, metrics } = stack(t, { a: { latencyMs: 1, answer: slow } });
  const same: [string, unknown[]] = ['eth_getBalance', [addr(7), 'latest']];
  const batch = request([same, ['eth_getBalance', [addr(8), 'latest']], same]);
  const single = request([same]);
  await new Promise((r) => setImmediate(r));
  release();
  const [b, s] = await Promise.all([batch, single]);
  t.same(
    b.outcomes.map((o) => o.result),
    ['"0x7"', '"0x8"', '"0x7"'],
  );
  t.same(
    s.outcomes.map((o) => o.result),
    ['"0x7"'],
  );
  t.equal(
    clients.get('a')!.sent.filter((c) => JSON.parse(c.paramsJson)[0] === addr(7)).length,
    1,
    'the node saw the shared call once',
  );
  const text = await metrics.registry.metrics();
  t.match(text, /switchyard_coalesced_calls_total 2\b/, 'two calls joined it');
});

t.test('a lone read is sent alone (the micro-batcher joins it with other requests)', async (t) => {
  const { clients, request } = stack(t, { a: { latencyMs: 1, answer: balanceOf } });
  const { outcomes } = await request(balances(5, 1));
  t.same(
    outcomes.map((o) => o.result),
    expected(5, 1),
  );
  t.same(clients.get('a')!.exchanges, [], 'no exchange of its own');
  t.equal(clients.get('a')!.sent.length, 1);
});

t.test('the upstream metrics count each call of an exchange', async (t) => {
  const { request, metrics } = stack(t, { a: { latencyMs: 1, answer: balanceOf } });
  await request(balances(1, 5));
  const text = await metrics.registry.metrics();
  t.match(text, /switchyard_upstream_calls_total\{[^}]*method="eth_getBalance"[^}]*outcome="result"[^}]*\} 5\b/);
  t.match(text, /switchyard_upstream_duration_seconds_count\{[^}]*method="eth_getBalance"[^}]*\} 5\b/);
});

t.test('`latest` is pinned to the head in the params text as the client wrote it, whatever its place', async (t) => {
  const { clients, request } = stack(t, { a: { latencyMs: 1, answer: () => ({ kind: 'result', result: '"0x1"' }) } });
  const a = '0xAbC000000000000000000000000000000000000';
  const head = `"0x${HEAD.toString(16)}"`;
  const calls: [string, string, string][] = [
    // [method, params as sent by the client, params the node must get]
    ['eth_getBalance', `["${a}1","latest"]`, `["${a}1",${head}]`],
    // (another address: identical calls would share one upstream call)
    ['eth_getBalance', `[ "${a}2" , "latest" ]`, `[ "${a}2" , ${head} ]`],
    ['eth_getStorageAt', `["${a}1","0x0","latest"]`, `["${a}1","0x0",${head}]`],
    ['eth_getBlockByNumber', '["latest",false]', `[${head},false]`],
    ['eth_call', `[{"to":"${a}1","data":"0x"},"latest"]`, `[{"to":"${a}1","data":"0x"},${head}]`],
  ];
  const body = `[${calls.map(([method, params], id) => `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${params}}`).join(',')}]`;
  const { outcomes } = await request(body);
  t.equal(outcomes.length, calls.length);
  const sent = new Map(clients.get('a')!.sent.map((c) => [c.method + c.paramsJson, c.paramsJson]));
  for (const [method, , want] of calls) t.equal(sent.get(method + want), want, `${method} ${want}`);
});

t.test('a chunk for a budgeted node takes a token per call; past the budget each call goes its own way', async (t) => {
  // a's budget: 10 calls, refilled in hours (no window ends within the test).
  const { clients, request, metrics } = stack(t, {
    a: { latencyMs: 1, answer: balanceOf, config: { rateLimit: { ratePerSec: 0.0001, burst: 10 } } },
    b: { latencyMs: 10, answer: balanceOf },
  });
  const first = await request(balances(1, 4));
  t.same(
    first.outcomes.map((o) => o.result),
    expected(1, 4),
  );
  t.same(clients.get('a')!.exchanges, [4], 'within the budget: one exchange of 4, 4 tokens');
  const second = await request(balances(5, 10));
  t.same(
    second.outcomes.map((o) => o.result),
    expected(5, 10),
    'every call answered, in place',
  );
  t.same(clients.get('a')!.exchanges, [4], 'the chunk of 10 did not fit the 6 left: no exchange');
  t.equal(clients.get('a')!.sent.length, 10, 'a got the 6 it had tokens for, one by one');
  t.equal(clients.get('b')!.sent.length, 4, 'the other 4 went to b');
  const text = await metrics.registry.metrics();
  t.match(text, /switchyard_upstream_budget_exhausted_total\{upstream="a"\} 4\b/, 'each call turned away counted once');
});
