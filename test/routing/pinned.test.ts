/**
 * A request pinned to one node (X-Switchyard-Use-Upstream, routing/pinned.ts) as a table over a
 * real Fleet of fake clients: every call goes to that node only (the cheaper node is never asked),
 * a failed attempt is not retried elsewhere, a call waits only for its own node to reach a block,
 * and -32002 says why that node cannot take a call. `a` is the cheaper node: unpinned, it is asked first.
 */
import t from 'tap';
import { dispatch, type DispatchContext, type Sendable } from '../../src/routing/dispatch.js';
import type { RpcError } from '../../src/jsonrpc/errors.js';
import type { Outcome } from '../../src/jsonrpc/response.js';
import { Metrics } from '../../src/metrics/registry.js';
import type { Fleet } from '../../src/upstream/fleet.js';
import type { Verdict } from '../../src/upstream/classify.js';
import { fakeFleet, TEST_FLEET_OPTIONS } from '../helpers/fake-client.js';

const NOW = 1_000_000;
const ok = (result: string): Verdict => ({ kind: 'result', result });
const transport: Verdict = { kind: 'retry', reason: 'transport', health: true };

interface Row {
  name: string;
  pin: string;
  a?: Verdict[];
  b?: Verdict[];
  heads?: [number, number];
  calls?: Partial<Sendable>[];
  /** The calls are filter calls whose filter this node holds. */
  filterAt?: 'a' | 'b';
  setup?: (fleet: Fleet) => void;
  meanwhile?: (fleet: Fleet) => void;
  /** The calls' deadline on the fleet's stopped clock (30 s from now unless given). */
  deadline?: number;
  expect: string[];
  trail: string[];
}

function summary(o: Outcome): string {
  if (o.result !== undefined) return `result ${o.result}`;
  if ('nodeError' in o) return `nodeError ${o.nodeError}`;
  const { reason, ...data } = (o.error as RpcError).data;
  return `error ${String(reason)} ${JSON.stringify(data)}`;
}

const why = (w: string): string => `error NO_UPSTREAM ${JSON.stringify({ why: `the requested upstream ${w}` })}`;

const ROWS: Row[] = [
  { name: 'to the pinned node, not the cheaper one', pin: 'b', expect: ['result "0xb"'], trail: ['b'] },
  {
    name: 'a batch goes to the pinned node in one exchange',
    pin: 'b',
    b: [ok('"0x1"'), ok('"0x2"'), ok('"0x3"')],
    calls: [{ batchable: true }, { batchable: true }, { batchable: true }],
    expect: ['result "0x1"', 'result "0x2"', 'result "0x3"'],
    trail: ['b'],
  },
  {
    name: 'a failed attempt is not retried on another node',
    pin: 'b',
    b: [transport],
    expect: ['error UPSTREAM_FAILED {"attempts":1,"last":"transport"}'],
    trail: ['b'],
  },
  {
    name: 'a transaction goes to the pinned node only, not broadcast',
    pin: 'b',
    calls: [{ broadcast: true, rawTransaction: '0x02f8' }],
    expect: ['result "0xb"'],
    trail: ['b'],
  },
  { name: 'an unknown name', pin: 'z', expect: [why('is unknown')], trail: [] },
  {
    name: 'a node down',
    pin: 'b',
    setup: (f) => f.markDown(f.upstreams[1]!),
    expect: [why('is not healthy')],
    trail: [],
  },
  {
    name: 'a node behind the block waits for it: it reaches it meanwhile',
    pin: 'b',
    heads: [12, 10],
    calls: [{ requirement: { minHead: 12 } }],
    meanwhile: (f) => f.observeHeader(f.upstreams[1]!, { number: 12, hash: '0x0b', parentHash: '0x0a' }),
    expect: ['result "0xb"'],
    trail: ['b'],
  },
  {
    name: 'a node behind the block that does not reach it in time: -32002, the other not asked',
    pin: 'b',
    heads: [12, 10],
    calls: [{ requirement: { minHead: 12 } }],
    deadline: NOW + 1,
    expect: [why('lacks the block')],
    trail: [],
  },
  {
    name: 'a filter held by another node',
    pin: 'b',
    filterAt: 'a',
    expect: [why('does not hold the filter')],
    trail: [],
  },
];

for (const row of ROWS) {
  t.test(row.name, async (t) => {
    const heads = row.heads ?? [10, 10];
    const { fleet, clients } = fakeFleet(
      t,
      {
        a: { answers: row.a ?? [ok('"0xa"')], latencyMs: 1, head: heads[0] },
        b: { answers: row.b ?? [ok('"0xb"')], latencyMs: 100, head: heads[1] },
      },
      { options: TEST_FLEET_OPTIONS, now: NOW },
    );
    row.setup?.(fleet);
    const calls: Sendable[] = (row.calls ?? [{}]).map((c, i) => ({
      method: 'eth_getBalance',
      label: 'eth_getBalance',
      paramsJson: `["0x${i}"]`,
      requirement: {},
      only: fleet.upstreams.find((u) => u.name === row.filterAt),
      ...c,
    }));
    const ctx: DispatchContext = {
      routing: { fleet, metrics: new Metrics({ processMetrics: false }), maxAttempts: 3, upstreamTimeoutMs: 1000 },
      deadline: row.deadline ?? NOW + 30_000,
      trail: [],
      useUpstream: row.pin,
    };
    const pending = dispatch(calls, ctx);
    if (row.meanwhile) setImmediate(() => row.meanwhile!(fleet));
    const got = await pending;
    t.same(
      got.map((a) => summary(a.outcome)),
      row.expect,
    );
    t.same([...new Set(ctx.trail)], row.trail, 'nodes asked');
    t.equal(clients.get('a')!.sent.length, 0, 'the other node got nothing');
    if (calls.every((c) => c.batchable === true))
      t.same(clients.get('b')!.exchanges, [calls.length], 'in one exchange');
  });
}
