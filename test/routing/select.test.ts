/**
 * Eligibility and selection (routing/select.ts) as pure functions over a fleet whose upstreams are
 * set by hand: no network. Each reason a call can find no node, power-of-two choices preferring the
 * cheaper node (random injected), weight scaling, and sticky keys that hold still.
 */
import t, { type Test } from 'tap';
import { Fleet } from '../../src/upstream/fleet.js';
import { freshStatus, Upstream } from '../../src/upstream/node.js';
import { Metrics } from '../../src/metrics/registry.js';
import { createLogger } from '../../src/log/logger.js';
import { choose, cost, eligible, hash } from '../../src/routing/select.js';
import { FakeClient, upstreamConfig, TEST_FLEET_OPTIONS } from '../helpers/fake-client.js';

const OPTS = TEST_FLEET_OPTIONS;

interface Setup {
  name: string;
  head?: number;
  state?: Upstream['state'];
  weight?: number;
  tags?: ('archive' | 'debug')[];
  latencyMs?: number;
  inFlight?: number;
}

/**
 * A fleet that is never started, over fake clients: states and heads go through the fleet's own
 * transitions, as probes would report them; client figures are set on the fakes.
 */
function fleetOf(
  t: Test,
  setups: Setup[],
  fleetHead: number,
): { fleet: Fleet; byName: Map<string, Upstream>; clients: Map<string, FakeClient> } {
  const configs = setups.map((s) => upstreamConfig(s.name, { weight: s.weight ?? 1, tags: s.tags ?? [] }));
  const clients = new Map<string, FakeClient>();
  const fleet = new Fleet(OPTS, configs, new Metrics({ processMetrics: false }), createLogger('silent'), (c) => {
    const f = new FakeClient(c);
    clients.set(c.name, f);
    return f;
  });
  t.teardown(() => fleet.stop());
  const byName = new Map<string, Upstream>();
  for (const [i, s] of setups.entries()) {
    const u = fleet.upstreams[i]!;
    const head = s.head ?? fleetHead;
    fleet.markUp(u);
    if (head >= 0) fleet.observeHeader(u, { number: head, hash: `0x${head.toString(16)}`, parentHash: '0x0' });
    if (s.state === 'down') fleet.markDown(u);
    else if (s.state === 'quarantined') fleet.quarantine(u, 1);
    else if (s.state === 'connecting') throw new Error('connecting: build with freshStatus()');
    const c = clients.get(s.name)!;
    if (s.latencyMs !== undefined) c.latencyMs = s.latencyMs;
    if (s.inFlight !== undefined) c.inFlight = s.inFlight;
    byName.set(s.name, u);
  }
  fleet.head = fleetHead;
  return { fleet, byName, clients };
}

const names = (r: Upstream[] | string): string[] | string => (typeof r === 'string' ? r : r.map((u) => u.name).sort());
const none: readonly Upstream[] = [];

/** A random() that replays a fixed sequence. */
function seq(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

t.test('eligibility reasons', async (t) => {
  t.test('none healthy: down, quarantined, breaker open', async (t) => {
    const { fleet, byName } = fleetOf(
      t,
      [{ name: 'a', state: 'down' }, { name: 'b', state: 'quarantined' }, { name: 'd' }],
      10,
    );
    const d = byName.get('d')!;
    for (let i = 0; i < 5; i++) d.breaker.failure();
    t.equal(eligible(fleet, {}, none), 'none healthy');
    const c = new FakeClient(upstreamConfig('x'));
    t.notOk(new Upstream(c, freshStatus()).available, 'connecting is not routable');
    t.notOk(
      new Upstream(c, { ...freshStatus(), state: 'healthy', head: 10, retiring: true }).available,
      'retiring is not routable',
    );
    t.ok(new Upstream(c, { ...freshStatus(), state: 'healthy', head: 10 }).available);
    t.equal(eligible(fleet, { minHead: 0 }, none), 'none healthy', 'even for a block everyone has');
  });

  t.test('none has the capability: debug needs a debug-tagged node', async (t) => {
    const { fleet } = fleetOf(t, [{ name: 'a' }, { name: 'b', tags: ['archive'] }], 10);
    t.equal(eligible(fleet, { capability: 'debug' }, none), 'none has the capability');
    const { fleet: f2 } = fleetOf(t, [{ name: 'a' }, { name: 'b', tags: ['debug'] }], 10);
    t.same(names(eligible(f2, { capability: 'debug' }, none)), ['b'], 'only the debug node');
  });

  t.test('archive is a preference: archive nodes when any, else everyone', async (t) => {
    const { fleet } = fleetOf(t, [{ name: 'a' }, { name: 'b', tags: ['archive'] }], 10);
    t.same(names(eligible(fleet, { capability: 'archive' }, none)), ['b']);
    const { fleet: f2 } = fleetOf(t, [{ name: 'a' }, { name: 'b' }], 10);
    t.same(names(eligible(f2, { capability: 'archive' }, none)), ['a', 'b']);
  });

  t.test('none has the block', async (t) => {
    const { fleet } = fleetOf(
      t,
      [
        { name: 'a', head: 7 },
        { name: 'b', head: 9 },
      ],
      9,
    );
    t.equal(eligible(fleet, { minHead: 10 }, none), 'none has the block');
    t.same(names(eligible(fleet, { minHead: 9 }, none)), ['b'], 'head >= N: only the node at 9');
    t.same(names(eligible(fleet, { minHead: 7 }, none)), ['a', 'b'], 'both have block 7');
  });

  t.test('none in sync: lag beyond maxLag', async (t) => {
    const { fleet } = fleetOf(
      t,
      [
        { name: 'a', head: 20 },
        { name: 'b', head: 14 },
        { name: 'c', state: 'down', head: 30 },
      ],
      30,
    );
    // The fleet head is 30 (as a node reported before going down); healthy ones lag 10 and 16.
    t.equal(eligible(fleet, { maxLag: 5 }, none), 'none in sync');
    t.same(names(eligible(fleet, { maxLag: 10 }, none)), ['a'], 'lag <= maxLag is in sync');
    t.same(names(eligible(fleet, { maxLag: 16 }, none)), ['a', 'b']);
  });

  t.test('a node with no head yet is never in sync', async (t) => {
    const { fleet } = fleetOf(
      t,
      [
        { name: 'a', head: -1 },
        { name: 'b', head: 5 },
      ],
      5,
    );
    t.same(names(eligible(fleet, { maxLag: 1000 }, none)), ['b']);
  });

  t.test('all tried', async (t) => {
    const { fleet, byName } = fleetOf(t, [{ name: 'a' }, { name: 'b' }], 10);
    t.same(names(eligible(fleet, {}, [byName.get('a')!])), ['b'], 'the excluded one is left out');
    t.equal(eligible(fleet, {}, [...byName.values()]), 'all tried');
  });
});

t.test('power of two choices prefers the cheaper node', async (t) => {
  const { fleet, byName, clients } = fleetOf(
    t,
    [
      { name: 'fast', latencyMs: 2 },
      { name: 'slow', latencyMs: 50 },
    ],
    10,
  );
  const pool = fleet.upstreams;
  // Whatever order the two draws come in, the cheaper one wins.
  for (const r of [seq(0, 0), seq(0.99, 0), seq(0.5, 0.5), seq(0.1, 0.9)])
    t.equal(choose(pool, undefined, r).name, 'fast');
  // In-flight work makes the fast node dearer: cost = (inFlight + 1) x latency / weight.
  clients.get('fast')!.inFlight = 30; // (31 x 2) = 62 > (1 x 50)
  t.equal(choose(pool, undefined, seq(0, 0)).name, 'slow', 'a busy fast node loses to an idle slow one');
  t.equal(cost(byName.get('fast')!), 62);
  t.equal(cost(byName.get('slow')!), 50);

  t.test('only the two drawn nodes are compared', async (t) => {
    const { fleet } = fleetOf(
      t,
      [
        { name: 'a', latencyMs: 30 },
        { name: 'b', latencyMs: 20 },
        { name: 'c', latencyMs: 1 },
      ],
      10,
    );
    const [a, b, c] = fleet.upstreams;
    // random 0 -> i = 0 (a); random 0.5 -> j = floor(0.5 x 2) = 1 -> >= i -> 2 (c)
    t.equal(choose([a!, b!, c!], undefined, seq(0, 0.5)).name, 'c');
    // i = 0 (a), j = 0 -> bumped to 1 (b): c is not drawn, b is cheaper than a.
    t.equal(choose([a!, b!, c!], undefined, seq(0, 0)).name, 'b');
    // i = 2 (c), j = 1 (b)
    t.equal(choose([a!, b!, c!], undefined, seq(0.9, 0.6)).name, 'c');
  });

  t.test('the second draw never lands on the first one', async (t) => {
    const { fleet } = fleetOf(
      t,
      [
        { name: 'slow', latencyMs: 100 },
        { name: 'fast', latencyMs: 1 },
      ],
      10,
    );
    // Both draws say "slot 0": without skipping the first slot, slow would be compared with itself.
    t.equal(choose(fleet.upstreams, undefined, seq(0, 0)).name, 'fast');
    t.equal(choose(fleet.upstreams, undefined, seq(0.99, 0.99)).name, 'fast');
  });

  t.test('over many random draws the cheaper node takes most of the calls', async (t) => {
    const { fleet } = fleetOf(
      t,
      [
        { name: 'fast', latencyMs: 2 },
        { name: 'mid', latencyMs: 10 },
        { name: 'slow', latencyMs: 50 },
      ],
      10,
    );
    const counts = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const u = choose(fleet.upstreams);
      counts.set(u.name, (counts.get(u.name) ?? 0) + 1);
    }
    // p2c with 3 nodes: the cheapest wins 2/3 of draws, the middle 1/3, the dearest never.
    t.ok((counts.get('fast') ?? 0) > 1700, `fast ${counts.get('fast')}`);
    t.equal(counts.get('slow') ?? 0, 0, 'the dearest node is never chosen over another');
  });
});

t.test('weight scales the cost', async (t) => {
  const { fleet, byName, clients } = fleetOf(
    t,
    [
      { name: 'light', latencyMs: 10, weight: 1 },
      { name: 'heavy', latencyMs: 15, weight: 2 },
    ],
    10,
  );
  t.equal(cost(byName.get('light')!), 10);
  t.equal(cost(byName.get('heavy')!), 7.5, '15 / 2');
  t.equal(
    choose(fleet.upstreams, undefined, seq(0, 0)).name,
    'heavy',
    'a slower node with twice the weight is cheaper',
  );
  clients.get('heavy')!.inFlight = 1; // 2 x 15 / 2 = 15 > 10
  t.equal(choose(fleet.upstreams, undefined, seq(0, 0)).name, 'light');
  t.test('weight is read from the config', async (t) => {
    const c = new FakeClient(upstreamConfig('w', { weight: 4 }));
    c.latencyMs = 8;
    t.equal(cost(new Upstream(c, { ...freshStatus(), state: 'healthy' })), 2);
  });
});

t.test('sticky keys', async (t) => {
  const { fleet, clients } = fleetOf(t, [{ name: 'n0' }, { name: 'n1' }, { name: 'n2' }, { name: 'n3' }], 10);
  const pool = fleet.upstreams;
  const keys = Array.from({ length: 200 }, (_, i) => `10.0.${i >> 8}.${i & 255}`);
  const first = keys.map((k) => choose(pool, k).name);
  // Stable: the same key gets the same node, whatever the random source or the candidate order,
  // and whatever the nodes' costs are (pending state must come from one node).
  const reversed = [...pool].reverse();
  clients.get(pool[0]!.name)!.inFlight = 1000;
  const again = keys.map((k) => choose(reversed, k, () => 0.7).name);
  t.same(again, first, 'same key, same node, in any candidate order and any load');
  // Spread: different keys do not all land on one node.
  const spread = new Map<string, number>();
  for (const n of first) spread.set(n, (spread.get(n) ?? 0) + 1);
  t.equal(spread.size, 4, `every node gets some keys: ${JSON.stringify([...spread])}`);
  for (const [name, n] of spread) t.ok(n > 20, `${name} gets ${n} of 200 keys`);
  t.test('a key moves only when its own node leaves, and comes back with it', async (t) => {
    for (const gone of pool) {
      const rest = pool.filter((u) => u !== gone);
      const without = keys.map((k) => choose(rest, k).name);
      let moved = 0;
      keys.forEach((k, i) => {
        if (first[i] === gone.name) moved++;
        else t.equal(without[i], first[i], `${k} stays on ${first[i]} when ${gone.name} leaves`);
      });
      t.ok(moved > 20, `the ${moved} keys of ${gone.name} moved`);
      t.notOk(without.includes(gone.name), 'none is sent to the node that left');
      const moves = new Set(without.filter((_, i) => first[i] === gone.name));
      t.ok(moves.size >= 2, `the keys of ${gone.name} spread over the others: ${[...moves].join(', ')}`);
    }
    t.same(
      keys.map((k) => choose(pool, k).name),
      first,
      'with every node back, every key is where it was',
    );
  });
  t.test('a node a block behind at a head change moves only its own keys', async (t) => {
    const behind = fleetOf(t, [{ name: 'n0' }, { name: 'n1' }, { name: 'n2', head: 9 }, { name: 'n3' }], 10).fleet;
    const candidates = eligible(behind, { minHead: 10 }, none);
    t.same(names(candidates), ['n0', 'n1', 'n3']);
    if (typeof candidates === 'string') return;
    const during = keys.map((k) => choose(candidates, k).name);
    keys.forEach((k, i) => {
      if (first[i] !== 'n2') t.equal(during[i], first[i], `${k} stays on ${first[i]}`);
    });
  });
  t.test('a single candidate is returned whatever the key', async (t) => {
    t.equal(choose([pool[2]!], 'any'), pool[2]);
  });
  t.test('hash is FNV-1a 32 bits (replicas must agree)', async (t) => {
    t.equal(hash(''), 0x811c9dc5);
    t.equal(hash('a'), 0xe40c292c);
    t.equal(hash('foobar'), 0xbf9cf968);
  });
});
