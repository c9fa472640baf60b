/**
 * dispatch() of one call (a lone call is a group of one) as a table: nodes with scripted verdicts (fake clients, no network) behind a real
 * Fleet, one row per routing decision: the answer returned and the nodes asked, in order.
 * Two nodes with different latencies, so power-of-two choices always asks `a` first.
 */
import t from 'tap';
import { dispatch, type DispatchContext, type Sendable } from '../../src/routing/dispatch.js';
import type { RpcError } from '../../src/jsonrpc/errors.js';
import type { Outcome } from '../../src/jsonrpc/response.js';
import { Metrics } from '../../src/metrics/registry.js';
import type { Fleet } from '../../src/upstream/fleet.js';
import type { Verdict } from '../../src/upstream/classify.js';
import type { Requirement } from '../../src/routing/select.js';
import { fakeFleet, TEST_FLEET_OPTIONS } from '../helpers/fake-client.js';

const OPTS = TEST_FLEET_OPTIONS;
const RAW = '0x02f8';
const ok = (result: string): Verdict => ({ kind: 'result', result });
const revert: Verdict = {
  kind: 'node-error',
  error: '{"code":3,"message":"execution reverted"}',
  code: 3,
  message: 'execution reverted',
};
const known: Verdict = {
  kind: 'node-error',
  error: '{"code":-32000,"message":"already known"}',
  code: -32000,
  message: 'already known',
};
const transport: Verdict = { kind: 'retry', reason: 'transport', health: true };
const http5xx: Verdict = { kind: 'retry', reason: 'http_5xx', health: true };
const tooLarge: Verdict = { kind: 'retry', reason: 'response_too_large', health: false };
const missing: Verdict = {
  kind: 'retry',
  reason: 'node_missing_block',
  health: false,
  error: '{"code":-32000,"message":"header not found"}',
};

/** The fleet's clock, stopped: deadlines are judged against it, not against the wall clock. */
const NOW = 1_000_000;

interface Row {
  name: string;
  a: Verdict[];
  b: Verdict[];
  heads?: [number, number];
  down?: ('a' | 'b')[];
  requirement?: Requirement;
  call?: Partial<Sendable>;
  /** The call's deadline on the fleet's clock (30 s from now unless given). */
  deadline?: number;
  /** Runs once the call is under way (a node reaching a block while the call waits). */
  meanwhile?: (fleet: Fleet) => void;
  expect: string;
  trail: string[];
}

function summary(o: Outcome): string {
  if (o.result !== undefined) return `result ${o.result}`;
  if ('nodeError' in o) return `nodeError ${o.nodeError}`;
  const { reason, ...data } = (o.error as RpcError).data;
  return `error ${String(reason)} ${JSON.stringify(data)}`;
}

const ROWS: Row[] = [
  { name: 'first answer returned', a: [ok('"0x1"')], b: [ok('"0x2"')], expect: 'result "0x1"', trail: ['a'] },
  { name: 'transport failure fails over', a: [transport], b: [ok('"0x2"')], expect: 'result "0x2"', trail: ['a', 'b'] },
  {
    name: 'a revert is the answer, verbatim, no failover',
    a: [revert],
    b: [ok('"0x2"')],
    expect: `nodeError ${revert.kind === 'node-error' ? revert.error : ''}`,
    trail: ['a'],
  },
  {
    name: 'every attempt failed: -32002 with the last reason',
    a: [transport],
    b: [http5xx],
    expect: 'error UPSTREAM_FAILED {"attempts":2,"last":"http_5xx"}',
    trail: ['a', 'b'],
  },
  {
    name: 'a node error seen on the way is returned when no node answers',
    a: [missing],
    b: [transport],
    expect: `nodeError ${missing.kind === 'retry' ? missing.error : ''}`,
    trail: ['a', 'b'],
  },
  {
    name: 'too large: no failover',
    a: [tooLarge],
    b: [ok('"0x2"')],
    expect: 'error RESPONSE_TOO_LARGE {}',
    trail: ['a'],
  },
  {
    name: 'null that may lag: asks another node',
    a: [ok('null')],
    b: [ok('"0x2"')],
    call: { nullMayLag: true },
    expect: 'result "0x2"',
    trail: ['a', 'b'],
  },
  {
    name: 'null from both: null',
    a: [ok('null')],
    b: [ok('null')],
    call: { nullMayLag: true },
    expect: 'result null',
    trail: ['a', 'b'],
  },
  {
    name: 'null then a node error: the null stands',
    a: [ok('null')],
    b: [revert],
    call: { nullMayLag: true },
    expect: 'result null',
    trail: ['a', 'b'],
  },
  { name: 'null where null is final', a: [ok('null')], b: [ok('"0x2"')], expect: 'result null', trail: ['a'] },
  {
    name: 'no routable node',
    a: [],
    b: [],
    down: ['a', 'b'],
    expect: 'error NO_UPSTREAM {"why":"none healthy"}',
    trail: [],
  },
  {
    name: 'the deadline has passed: no node asked, -32002 timeout',
    a: [ok('"0x1"')],
    b: [ok('"0x2"')],
    deadline: NOW,
    expect: 'error UPSTREAM_FAILED {"attempts":0,"last":"timeout"}',
    trail: [],
  },
  {
    name: 'no node has the block and none can catch up',
    a: [],
    b: [],
    heads: [10, 10],
    requirement: { minHead: 12 },
    deadline: 0,
    expect: 'error UPSTREAM_FAILED {"attempts":0,"last":"timeout"}',
    trail: [],
  },
  {
    name: 'waits for a head: b reaches the block meanwhile',
    a: [ok('"0x1"')],
    b: [ok('"0xb"')],
    heads: [10, 10],
    requirement: { minHead: 11 },
    meanwhile: (fleet) => fleet.observeHeader(fleet.upstreams[1]!, { number: 11, hash: '0x0b', parentHash: '0x0a' }),
    expect: 'result "0xb"',
    trail: ['b'],
  },
  {
    name: 'a resent transaction "already known" answers its hash',
    a: [transport],
    b: [known],
    call: { rawTransaction: RAW },
    expect: 'result "0x0ddf8a6da315d4ef30b0aade0a1c088e835829dec13e448b619da0dd383a1e70"',
    trail: ['a', 'b'],
  },
  {
    name: '"already known" on the first attempt is a node error',
    a: [known],
    b: [ok('"0x2"')],
    call: { rawTransaction: RAW },
    expect: `nodeError ${known.kind === 'node-error' ? known.error : ''}`,
    trail: ['a'],
  },
];

for (const row of ROWS) {
  t.test(row.name, async (t) => {
    const heads = row.heads ?? [10, 10];
    const { fleet, clients } = fakeFleet(
      t,
      { a: { answers: row.a, latencyMs: 1, head: heads[0] }, b: { answers: row.b, latencyMs: 10, head: heads[1] } },
      { options: OPTS, now: NOW },
    );
    for (const u of fleet.upstreams) if (row.down?.includes(u.name as 'a' | 'b')) fleet.markDown(u);
    const call: Sendable = {
      method: 'eth_call',
      label: 'eth_call',
      paramsJson: '[]',
      requirement: row.requirement ?? {},
      ...row.call,
    };
    const ctx: DispatchContext = {
      routing: { fleet, metrics: new Metrics({ processMetrics: false }), maxAttempts: 3, upstreamTimeoutMs: 1000 },
      deadline: row.deadline ?? NOW + 30_000,
      trail: [],
    };
    const pending = dispatch([call], ctx);
    if (row.meanwhile) setImmediate(() => row.meanwhile!(fleet));
    const [got] = await pending;
    t.equal(summary(got!.outcome), row.expect);
    t.same(ctx.trail, row.trail, 'nodes asked');
    for (const [name, c] of clients)
      t.equal(c.sent.length, ctx.trail.filter((n) => n === name).length, `${name} got exactly the calls in the trail`);
  });
}

t.test('a null is checked with a node at the request head, not one merely as far ahead as the first', async (t) => {
  // a and b lag (a hash lookup may go to either), c is at the head the client was told of: the
  // receipt is only on c. Asking b after a would return null for a receipt the client already saw.
  const { fleet } = fakeFleet(
    t,
    {
      a: { answers: [ok('null')], latencyMs: 1, head: 8 },
      b: { answers: [ok('null')], latencyMs: 10, head: 9 },
      c: { answers: [ok('{"status":"0x1"}')], latencyMs: 100, head: 10 },
    },
    { options: OPTS, now: NOW },
  );
  // Power of two choices draws a and b first (then a, the cheaper, is asked).
  const random = Math.random;
  Math.random = () => 0;
  t.teardown(() => {
    Math.random = random;
  });
  const call: Sendable = {
    method: 'eth_getTransactionReceipt',
    label: 'eth_getTransactionReceipt',
    paramsJson: '[]',
    requirement: { maxLag: 5 },
    nullMayLag: true,
  };
  const ctx: DispatchContext = {
    routing: { fleet, metrics: new Metrics({ processMetrics: false }), maxAttempts: 3, upstreamTimeoutMs: 1000 },
    deadline: NOW + 30_000,
    head: 10,
    trail: [],
  };
  const [got] = await dispatch([call], ctx);
  t.equal(summary(got!.outcome), 'result {"status":"0x1"}');
  t.same(ctx.trail, ['a', 'c'], 'the second opinion came from the node at the head');
});
