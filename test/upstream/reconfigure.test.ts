/**
 * Fleet.apply (a reload) in-process, against two fake nodes with a fixed head: a reloaded entry with the
 * same address but another weight is the same node, so it stays routable through the swap (no
 * "none healthy" gap until its next poll) and keeps its /metrics series; a removed entry's series
 * go away; a new address starts unverified ('connecting') until its chain id is checked.
 */
import t from 'tap';
import { Fleet } from '../../src/upstream/fleet.js';
import { fleetOptions } from '../../src/upstream/membership.js';
import { Metrics } from '../../src/metrics/registry.js';
import { createLogger } from '../../src/log/logger.js';
import { eligible } from '../../src/routing/select.js';
import { configSchema, type Config, type UpstreamConfig } from '../../src/config/schema.js';
import { upstreamConfig } from '../helpers/fake-client.js';
import { startFakeNode } from '../helpers/fake-node.js';
import { waitFor } from '../helpers/wait.js';

const BASE: Config = configSchema.parse({
  upstreams: [{ name: 'x', url: 'http://127.0.0.1:9' }],
  routing: { headPollMs: 100, upstreamTimeoutMs: 1000 },
});
const OPTS = fleetOptions(BASE);
/** The configuration a reload reads: BASE with these upstreams. */
const reloaded = (upstreams: UpstreamConfig[]): Config => ({ ...BASE, upstreams });
const HEADER = { number: '0x7', hash: `0x${'11'.repeat(32)}`, parentHash: `0x${'22'.repeat(32)}` };

const cfg = (name: string, url: string, weight = 1): UpstreamConfig =>
  upstreamConfig(name, { url, weight, maxConnections: 4 });

t.test('re-weighting keeps the node routable and its metrics', async (t) => {
  const script = (method: string) => (method === 'eth_getBlockByNumber' ? { result: HEADER } : undefined);
  const [a, b, c] = await Promise.all([startFakeNode(t, script), startFakeNode(t, script), startFakeNode(t, script)]);
  const metrics = new Metrics({ processMetrics: false });
  const fleet = new Fleet(OPTS, [cfg('a', a.url), cfg('b', b.url)], metrics, createLogger('silent'));
  t.teardown(() => fleet.stop());
  fleet.start();
  await waitFor('both healthy at head 7, finalized known', () =>
    fleet.upstreams.every((u) => u.state === 'healthy' && u.head === 7 && u.finalized === 7),
  );

  const oldA = fleet.upstreams[0]!;
  // Checked synchronously, before any poll of the new objects could have answered.
  const reweighting = fleet.apply(reloaded([cfg('a', a.url, 3), cfg('b', b.url, 2)]));
  t.not(fleet.upstreams[0], oldA, 'a changed entry is a new object');
  t.same(
    fleet.upstreams.map((u) => u.weight),
    [3, 2],
    'with the new weights',
  );
  t.same(
    fleet.upstreams.map((u) => u.available),
    [true, true],
    'routable at once: same address, same node',
  );
  const pool = eligible(fleet, { minHead: 7 }, []);
  t.same(
    typeof pool === 'string' ? pool : pool.map((u) => u.name),
    ['a', 'b'],
    'eligible for a call at the head right away',
  );
  await reweighting;
  t.ok(oldA.retiring, 'the old object is retired');

  const text = await metrics.registry.metrics();
  t.match(text, /switchyard_upstream_head_block_number\{upstream="a"\} 7/, 'node a keeps its head series');
  t.match(text, /switchyard_upstream_healthy\{upstream="b"\} 1/, 'node b keeps its healthy series');

  const swapping = fleet.apply(reloaded([cfg('b', b.url, 2), cfg('c', c.url)]));
  t.equal(fleet.upstreams[1]!.state, 'connecting', 'a new address starts unverified');
  await swapping;
  await waitFor('c healthy', () => fleet.upstreams[1]!.state === 'healthy');
  const after = await metrics.registry.metrics();
  t.notMatch(after, /switchyard_upstream_head_block_number\{upstream="a"\}/, 'the removed node a has no series left');
  t.match(after, /switchyard_upstream_head_block_number\{upstream="c"\} 7/, 'the added node c has its series');
});

t.test('a removed node is closed when its last call ends, and that call gets its answer', async (t) => {
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const script = (method: string) =>
    method === 'eth_getBlockByNumber'
      ? { result: HEADER }
      : method === 'eth_getBalance'
        ? { defer: () => held.then(() => ({ result: '0x2a' })) }
        : undefined;
  const [a, b] = await Promise.all([startFakeNode(t, script), startFakeNode(t, script)]);
  const fleet = new Fleet(
    OPTS,
    [cfg('a', a.url), cfg('b', b.url)],
    new Metrics({ processMetrics: false }),
    createLogger('silent'),
  );
  t.teardown(() => fleet.stop());
  fleet.start();
  await waitFor('both healthy', () => fleet.upstreams.every((u) => u.state === 'healthy'));

  const oldA = fleet.upstreams[0]!;
  const answer = oldA.call('eth_getBalance', '["0x0","latest"]', 10_000);
  await waitFor('the call reached node a', () => a.calls.some((c) => c.method === 'eth_getBalance'));
  let closed = false;
  const removing = fleet.apply(reloaded([cfg('b', b.url)])).then(() => (closed = true));
  t.same(
    fleet.upstreams.map((u) => u.name),
    ['b'],
    'removed from the fleet at once',
  );
  t.ok(oldA.retiring, 'and takes no new calls');
  await new Promise((resolve) => setImmediate(resolve));
  t.notOk(closed, 'not closed while its call is in flight');
  release();
  t.same((await answer).verdict, { kind: 'result', result: '"0x2a"' }, 'the call in flight gets its answer');
  await removing;
  t.ok(closed, 'closed once that call ended');
});
