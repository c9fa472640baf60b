/**
 * The block number served to clients (Fleet.blockNumber) against heads a fleet is told of by hand,
 * over fake clients and a controlled clock: it never goes backwards, except away from a head no
 * node of this chain has (one judged implausible, or above a reorg to a shorter chain).
 */
import t, { type Test } from 'tap';
import { Fleet } from '../../src/upstream/fleet.js';
import { Metrics } from '../../src/metrics/registry.js';
import { createLogger } from '../../src/log/logger.js';
import type { Upstream } from '../../src/upstream/node.js';
import { FakeClient, upstreamConfig, TEST_FLEET_OPTIONS } from '../helpers/fake-client.js';

const OPTS = TEST_FLEET_OPTIONS;

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
  clock.ms += 10_000;
  fleet.observeHeader(by('b'), header(20));
  t.equal(fleet.head, 20, 'ten blocks in ten seconds alone is progress');
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
  const { fleet, by, clock } = fleetOf(t, ['a', 'b']);
  fleet.observeHeader(by('a'), header(100_000));
  fleet.observeHeader(by('b'), header(100_000));
  fleet.markDown(by('b'));
  for (let n = 100_001; n <= 100_010; n++) {
    clock.ms += 1_000;
    fleet.observeHeader(by('a'), header(n));
  }
  t.equal(fleet.blockNumber(), 100_010);
  fleet.markUp(by('b'));
  fleet.observeHeader(by('b'), header(90_000));
  t.equal(fleet.head, 100_010, 'the fleet head stays with the node that has kept up');
  t.equal(fleet.blockNumber(), 100_010);
  t.equal(by('a').implausible, false, 'and that node is still routed');
});

t.test(
  'a head 900 blocks beyond two nodes that agree is not believed, and nothing is left of it when its node dies',
  async (t) => {
    const { fleet, by, clock } = fleetOf(t, ['a', 'b', 'liar']);
    for (let n = 1; n <= 20; n++) {
      clock.ms += 1_000;
      for (const name of ['a', 'b', 'liar']) fleet.observeHeader(by(name), header(n));
    }
    t.equal(fleet.blockNumber(), 20);
    fleet.observeHeader(by('liar'), header(920));
    t.equal(fleet.head, 20, 'the fleet head stays with the two that agree');
    t.equal(fleet.blockNumber(), 20, 'eth_blockNumber does not jump to the lie');
    t.equal(fleet.latest(), 20, '`latest` reads stay at a block the honest nodes have');
    t.equal(
      by('liar').implausible,
      false,
      'within maxHeadJumpBlocks the node is still routed for the blocks it shares',
    );
    clock.ms += 3_000;
    fleet.markDown(by('liar'));
    clock.ms += 1_000;
    for (const name of ['a', 'b']) fleet.observeHeader(by(name), header(21));
    t.equal(fleet.blockNumber(), 21, 'and the fleet goes on from the honest heads');
  },
);

t.test(
  'a head a few blocks ahead of the others is believed at once; one a second node reaches is confirmed',
  async (t) => {
    const { fleet, by, clock } = fleetOf(t, ['a', 'b', 'c']);
    for (let n = 1; n <= 20; n++) {
      clock.ms += 1_000;
      for (const name of ['a', 'b', 'c']) fleet.observeHeader(by(name), header(n));
    }
    clock.ms += 1_000;
    fleet.observeHeader(by('a'), header(21));
    t.equal(fleet.head, 21, 'the chain can have made one block in a second');
    t.equal(fleet.blockNumber(), 21);
    fleet.observeHeader(by('a'), header(40));
    t.equal(fleet.head, 20, 'not nineteen more in no time: the head is the one the others have');
    t.equal(fleet.blockNumber(), 21, 'eth_blockNumber holds');
    t.equal(fleet.latest(), 20, '`latest` reads are pinned to the believed head');
    fleet.observeHeader(by('b'), header(40));
    t.equal(fleet.head, 40, 'until a second node has them');
  },
);

t.test('a fleet of one follows its node, leaps included', async (t) => {
  const { fleet, by } = fleetOf(t, ['only']);
  fleet.observeHeader(by('only'), header(10));
  fleet.observeHeader(by('only'), header(5_000));
  t.equal(fleet.blockNumber(), 5_000);
});

t.test('`latest` is pinned to a block a routable node has when the node at the served head is gone', async (t) => {
  const { fleet, by, clock } = fleetOf(t, ['a', 'b']);
  for (let n = 1; n <= 10; n++) {
    clock.ms += 1_000;
    fleet.observeHeader(by('a'), header(n));
    if (n <= 8) fleet.observeHeader(by('b'), header(n));
  }
  t.equal(fleet.blockNumber(), 10);
  fleet.markDown(by('a'));
  t.equal(fleet.blockNumber(), 10, 'eth_blockNumber holds');
  t.equal(fleet.latest(), 8, '`latest` reads go to the block the node left has');
  fleet.observeHeader(by('b'), header(11));
  t.equal(fleet.latest(), 11, 'and follow the fleet once it passes');
});

t.test('a node catching up after an outage confirms the blocks the other made meanwhile: the head holds', async (t) => {
  const { fleet, by, clock } = fleetOf(t, ['a', 'b']);
  for (let n = 1; n <= 30; n++) {
    clock.ms += 1_000;
    fleet.observeHeader(by('a'), header(n));
    fleet.observeHeader(by('b'), header(n));
  }
  fleet.markDown(by('b'));
  for (let n = 31; n <= 330; n++) {
    clock.ms += 1_000;
    fleet.observeHeader(by('a'), header(n));
  }
  t.equal(fleet.head, 330, 'alone at the pace the chain kept');
  fleet.markUp(by('b'));
  for (let n = 40; n <= 320; n += 20) {
    clock.ms += 100;
    fleet.observeHeader(by('b'), header(n));
    t.equal(fleet.head, 330, `b at ${n}: the head stays with a`);
  }
});

t.test('a head told by another replica is taken only within reach of what this fleet confirmed', async (t) => {
  const { fleet, by, clock } = fleetOf(t, ['a', 'b']);
  for (let n = 1; n <= 20; n++) {
    clock.ms += 1_000;
    fleet.observeHeader(by('a'), header(n));
    fleet.observeHeader(by('b'), header(n));
  }
  t.equal(fleet.takeShared(by('a'), 21), true, 'the next block is taken');
  t.equal(by('a').head, 21);
  t.equal(fleet.takeShared(by('b'), 920), false, 'a head 900 ahead is refused');
  t.equal(by('b').head, 20);
  t.equal(fleet.takeShared(by('b'), Number.NaN), false, 'and so is what is no height');
});
