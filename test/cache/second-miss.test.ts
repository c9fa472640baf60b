/**
 * Head-scoped answers with a key per address or call are kept from the second miss of their key
 * within a head: a read asked once per block (a scan over many addresses) never enters the table,
 * a read asked again is kept, and identical calls that arrive together are kept from their one
 * shared answer. Fee reads (one key per head) are kept from their first answer.
 */
import t from 'tap';
import { planCache, ResponseCache, type CachePlan } from '../../src/cache/index.js';
import { createLogger } from '../../src/log/logger.js';
import { Metrics } from '../../src/metrics/registry.js';
import { METHODS } from '../../src/methods/table.js';

const HEAD = 100;
const view = (head = HEAD) => ({ head, finalized: head - 64 });
const balance = (address: string, head = HEAD): CachePlan =>
  planCache('eth_getBalance', METHODS.eth_getBalance!, [address, `0x${head.toString(16)}`], view(head))!;
const addr = (i: number): string => `0x${i.toString(16).padStart(40, '0')}`;

function cache(): ResponseCache {
  return new ResponseCache(
    { maxBytes: 64 * 1024 * 1024, redis: null },
    new Metrics({ processMetrics: false }),
    createLogger('silent'),
  );
}

/** A miss answered by a node: looked up (missing), then the answer offered to the cache. */
function missAndAnswer(c: ResponseCache, plan: CachePlan, value = '"0x1"'): void {
  if (c.lookup(plan) !== undefined) throw new Error(`${plan.key} was not a miss`);
  c.store(plan, value, c.generation, view().finalized);
}

t.test('a balance at the head: kept from its second miss, hit after that', async (t) => {
  const c = cache();
  const plan = () => balance(addr(1));
  t.equal(plan().secondMiss, true, 'a balance at the head asks for a second miss');
  missAndAnswer(c, plan());
  t.equal(c.lookup(plan()), undefined, 'the first answer was not kept');
  c.store(plan(), '"0x1"', c.generation, view().finalized);
  t.equal(c.lookup(plan()), '"0x1"', 'the answer to the second miss was kept');
});

t.test('identical calls arriving together are kept from their one shared answer', async (t) => {
  const c = cache();
  const plan = () => balance(addr(2));
  t.equal(c.lookup(plan()), undefined, 'the first call misses');
  t.equal(c.lookup(plan()), undefined, 'so does the one arriving while the first is out');
  c.store(plan(), '"0x2"', c.generation, view().finalized);
  t.equal(c.lookup(plan()), '"0x2"', 'the shared answer was kept');
});

t.test('fee reads and answers that are not head-scoped are kept from their first answer', async (t) => {
  const c = cache();
  const gas = planCache('eth_gasPrice', METHODS.eth_gasPrice!, [], view())!;
  t.equal(gas.secondMiss, false);
  missAndAnswer(c, gas, '"0x3b9aca00"');
  t.equal(c.lookup(gas), '"0x3b9aca00"', 'gas price kept at once');
  const old = planCache('eth_getBalance', METHODS.eth_getBalance!, [addr(3), '0x1'], view())!;
  t.equal(old.cls, 'immutable');
  t.equal(old.secondMiss, false);
  missAndAnswer(c, old, '"0x5"');
  t.equal(c.lookup(old), '"0x5"', 'a finalized balance kept at once');
});

t.test('misses count within one head: a miss at the head before does not make a second', async (t) => {
  const c = cache();
  missAndAnswer(c, balance(addr(4), HEAD));
  const next = () => balance(addr(4), HEAD + 1);
  missAndAnswer(c, next());
  t.equal(c.lookup(next()), undefined, 'the first miss at the new head was not kept');
  c.store(next(), '"0x1"', c.generation, view().finalized);
  t.equal(c.lookup(next()), '"0x1"', 'the second one was');
});

t.test('a scan asking 20,000 addresses once each leaves the head table almost empty', async (t) => {
  const c = cache();
  for (let i = 0; i < 20_000; i++) missAndAnswer(c, balance(addr(1_000_000 + i)));
  const { entries } = c.stats() as { entries: number };
  // Only keys whose hash bit an earlier key already set count as asked again (~1% here).
  t.ok(entries < 600, `${entries} of 20,000 one-off answers kept`);
});

t.test(
  "a kept answer is found for its head after misses at a newer head began (a request's older snapshot)",
  async (t) => {
    const c = cache();
    const kept = () => balance(addr(5), HEAD);
    missAndAnswer(c, kept());
    missAndAnswer(c, kept());
    t.equal(c.lookup(kept()), '"0x1"', 'kept at the head');
    t.equal(c.lookup(balance(addr(6), HEAD + 1)), undefined, 'a miss at the next head, before any answer for it');
    t.equal(c.lookup(kept()), '"0x1"', 'still found for the head it was kept for');
  },
);
