/**
 * The per-upstream circuit breaker (upstream/health.ts) with an injected clock: it opens after
 * `threshold` consecutive failures, refuses calls for `cooldownMs`, then lets exactly one trial
 * through; the trial's outcome closes it or opens it for another full cooldown.
 */
import t from 'tap';
import { Breaker } from '../../src/upstream/health.js';

function clocked(threshold = 3, cooldownMs = 1000): { b: Breaker; advance: (ms: number) => void } {
  let now = 1_000_000;
  const b = new Breaker({ threshold, cooldownMs, now: () => now });
  return { b, advance: (ms) => (now += ms) };
}

t.test('threshold: consecutive failures open it; a success in between resets the count', async (t) => {
  const { b } = clocked(3);
  t.equal(b.state, 'closed');
  t.ok(b.allows());
  b.failure();
  b.failure();
  t.equal(b.state, 'closed', 'two failures of three: still closed');
  b.success();
  b.failure();
  b.failure();
  t.equal(b.state, 'closed', 'the success reset the count');
  t.ok(b.allows());
  b.failure();
  t.equal(b.state, 'open', 'third consecutive failure opens it');
  t.notOk(b.allows(), 'open: no calls');
  t.equal(b.label, 'open');
});

t.test('default threshold is 5', async (t) => {
  const b = new Breaker();
  for (let i = 0; i < 4; i++) b.failure();
  t.equal(b.state, 'closed');
  b.failure();
  t.equal(b.state, 'open');
});

t.test('cooldown: open until cooldownMs has passed, then half-open', async (t) => {
  const { b, advance } = clocked(2, 1000);
  b.failure();
  b.failure();
  advance(999);
  t.equal(b.state, 'open', '1 ms before the cooldown ends');
  t.notOk(b.allows());
  advance(1);
  t.equal(b.state, 'half-open', 'at the cooldown');
  t.equal(b.label, 'half_open');
  t.ok(b.allows(), 'a trial may go');
});

t.test('half-open: a single trial at a time', async (t) => {
  const { b, advance } = clocked(2, 1000);
  b.failure();
  b.failure();
  advance(1000);
  t.ok(b.allows());
  b.begin();
  t.notOk(b.allows(), 'while the trial is out, nothing else goes');
  t.equal(b.state, 'half-open');
  advance(10_000);
  t.notOk(b.allows(), 'however long the trial takes');
});

t.test('half-open trial succeeds: closed, and the failure count starts over', async (t) => {
  const { b, advance } = clocked(2, 1000);
  b.failure();
  b.failure();
  advance(1000);
  b.begin();
  b.success();
  t.equal(b.state, 'closed');
  t.ok(b.allows());
  t.equal(b.label, 'closed');
  b.failure();
  t.equal(b.state, 'closed', 'one failure after closing is not the threshold');
});

t.test('half-open trial fails: open again for a full cooldown from the failure', async (t) => {
  const { b, advance } = clocked(3, 1000);
  for (let i = 0; i < 3; i++) b.failure();
  advance(1500);
  t.equal(b.state, 'half-open');
  b.begin();
  b.failure();
  t.equal(b.state, 'open', 'one failed trial reopens it (no need for threshold failures)');
  t.notOk(b.allows());
  advance(999);
  t.equal(b.state, 'open', 'cooldown counted from the trial failure');
  advance(1);
  t.equal(b.state, 'half-open');
  t.ok(b.allows(), 'and a new single trial is allowed');
});

t.test('begin() while closed does not block other calls', async (t) => {
  const { b } = clocked();
  b.begin();
  b.begin();
  t.ok(b.allows());
});
