/**
 * The block number served to clients (Fleet.blockNumber) against heads a fleet is told of by hand,
 * over fake clients and a controlled clock: it never goes backwards, except away from a head no
 * node of this chain has (one judged implausible, or above a reorg to a shorter chain).
 */
import t, { type Test } from 'tap';
import { Fleet, type FleetOptions } from '../../src/upstream/fleet.js';
import { Metrics } from '../../src/metrics/registry.js';
import { createLogger } from '../../src/log/logger.js';
import type { Upstream } from '../../src/upstream/node.js';
import { FakeClient, upstreamConfig } from '../helpers/fake-client.js';

const OPTS: FleetOptions = { chainId: 186, headPollMs: 1000, chainIdCheckMs: 60_000, upstreamTimeoutMs: 1000, finalityDepth: 64, maxHeadJumpBlocks: 1000 };

function fleetOf(t: Test, names: string[]): { fleet: Fleet; by: (name: string) => Upstream; clock: { ms: number } } {
  const clock = { ms: 1_000_000 };
  const fleet = new Fleet(
    OPTS,
    names.map((n) => upstreamConfig(n)),
    new Metrics({ processMetrics: false }),
    createLogger('silent'),
    (c) => new FakeClient(c),
    () => clock.ms,
  );
  t.teardown(() => fleet.stop());
  const by = (name: string): Upstream => fleet.upstreams.find((u) => u.name === name)!;
  for (const u of fleet.upstreams) fleet.markUp(u);
  return { fleet, by, clock };
}

/** A header of chain `c` at height n (hash c<n>, parent c<n-1>). */
const header = (n: number, c = 'a') => ({ number: n, hash: `${c}${n}`, parentHash: `${c}${n - 1}` });

t.test('a block number served from an implausible head is given up once another node shows it is one', async (t) => {
  const { fleet, by } = fleetOf(t, ['honest', 'liar']);
  fleet.markDown(by('honest'));
  fleet.observeHeader(by('liar'), header(5_000_000));
  t.equal(fleet.blockNumber(), 5_000_000, 'alone from the start, nothing contradicts it');
  fleet.markUp(by('honest'));
  fleet.observeHeader(by('honest'), header(10));
  t.equal(fleet.head, 10, 'the fleet head is the honest one');
  t.equal(by('liar').implausible, true);
  t.equal(fleet.blockNumber(), 10, 'and eth_blockNumber follows it down from the lie');
  fleet.observeHeader(by('honest'), header(11));
  t.equal(fleet.blockNumber(), 11);
});

t.test('a node left alone is not believed when it leaps far beyond the fleet head, until time allows it', async (t) => {
  const { fleet, by, clock } = fleetOf(t, ['a', 'b']);
  fleet.observeHeader(by('a'), header(10));
  fleet.observeHeader(by('b'), header(10));
  t.equal(fleet.blockNumber(), 10);
  fleet.markDown(by('a'));
  fleet.observeHeader(by('b'), header(20));
  t.equal(fleet.head, 20, 'an ordinary step alone is progress');
  fleet.observeHeader(by('b'), header(5_000));
  t.equal(fleet.head, 20, 'a leap of 4,980 blocks alone is not');
  t.equal(by('b').implausible, true, 'and the node is flagged');
  t.equal(fleet.blockNumber(), 20);
  clock.ms += 4_000_000;
  fleet.observeHeader(by('b'), header(5_001));
  t.equal(fleet.head, 5_001, 'after 4,000 s without another head, the same height is believed');
  t.equal(by('b').implausible, false);
});

t.test('a reorg to a shorter chain takes eth_blockNumber down to the new head', async (t) => {
  const { fleet, by } = fleetOf(t, ['a']);
  for (let n = 1; n <= 10; n++) fleet.observeHeader(by('a'), header(n));
  t.equal(fleet.blockNumber(), 10);
  fleet.observeHeader(by('a'), { number: 8, hash: 'b8', parentHash: 'a7' });
  t.equal(fleet.blockNumber(), 8, 'blocks 9 and 10 are gone');
  fleet.observeHeader(by('a'), header(9, 'b'));
  t.equal(fleet.blockNumber(), 9);
});

t.test('a node failing over to a lower one is no reorg: the block number holds', async (t) => {
  const { fleet, by } = fleetOf(t, ['a', 'b']);
  for (let n = 1; n <= 10; n++) fleet.observeHeader(by('a'), header(n));
  for (let n = 1; n <= 8; n++) fleet.observeHeader(by('b'), header(n));
  t.equal(fleet.blockNumber(), 10);
  fleet.markDown(by('a'));
  t.equal(fleet.head, 8);
  t.equal(fleet.blockNumber(), 10, 'never backwards across a failover');
});

t.test('another node behind, at a height the fleet never recorded, is no reorg after a failover', async (t) => {
  const { fleet, by } = fleetOf(t, ['a', 'b']);
  for (const n of [1, 4, 7, 10]) fleet.observeHeader(by('a'), header(n));
  for (const n of [2, 5]) fleet.observeHeader(by('b'), header(n));
  t.equal(fleet.blockNumber(), 10);
  fleet.markDown(by('a'));
  fleet.observeHeader(by('b'), header(8));
  t.equal(fleet.blockNumber(), 10, 'b is only behind: the block number holds');
});

t.test('a node back alone after a long outage is believed at the pace the chain kept before', async (t) => {
  const { fleet, by, clock } = fleetOf(t, ['a', 'b']);
  // Two blocks a second for 100 s, both nodes agreeing.
  for (let n = 0; n <= 200; n++) {
    fleet.observeHeader(by('a'), header(n));
    fleet.observeHeader(by('b'), header(n));
    clock.ms += 500;
  }
  fleet.markDown(by('a'));
  fleet.markDown(by('b'));
  clock.ms += 1_200_000;
  fleet.markUp(by('b'));
  let n = 200 + 2 * 1_200;
  for (let minute = 0; minute < 60; minute++) {
    fleet.observeHeader(by('b'), header(n));
    t.equal(fleet.head, n, `minute ${minute}: the node's head (${n}) is the fleet head`);
    clock.ms += 60_000;
    n += 120;
  }
});

t.test('a node back far behind (syncing) does not drag the head, nor the block number, down', async (t) => {
  const { fleet, by } = fleetOf(t, ['a', 'b']);
  fleet.observeHeader(by('a'), header(100_000));
  fleet.observeHeader(by('b'), header(100_000));
  fleet.markDown(by('b'));
  for (let n = 100_001; n <= 100_010; n++) fleet.observeHeader(by('a'), header(n));
  t.equal(fleet.blockNumber(), 100_010);
  fleet.markUp(by('b'));
  fleet.observeHeader(by('b'), header(90_000));
  t.equal(fleet.head, 100_010, 'the fleet head stays with the node that has kept up');
  t.equal(fleet.blockNumber(), 100_010);
  t.equal(by('a').implausible, false, 'and that node is still routed');
});
