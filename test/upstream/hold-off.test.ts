/**
 * The hold-off's arithmetic (upstream/holdoff.ts) with an injected clock and random source: 1 s
 * doubling on each repeat without Retry-After, Retry-After honoured, both capped at
 * routing.holdOffMaxMs with at most 20% added at random, refusals during a hold-off no repeat, a
 * good answer after it ending the doubling; Retry-After as seconds and as an HTTP date; and which
 * answers hold a node off (HTTP 429, -32005), none of them a health failure. No network.
 */
import t from 'tap';
import { classifyHttp } from '../../src/upstream/answers.js';
import type { Verdict } from '../../src/upstream/classify.js';
import { DEFAULT_HOLD_OFF_MAX_MS, HoldOff, retryAfterMs } from '../../src/upstream/holdoff.js';

/** A hold-off on a clock the test moves, with a fixed share of jitter. */
function clocked(opts: { random?: number; maxMs?: number } = {}) {
  let now = 1_000_000;
  let limits = 0;
  const h = new HoldOff({
    now: () => now,
    random: () => opts.random ?? 0,
    maxMs: () => opts.maxMs,
    onLimited: () => void limits++,
  });
  return {
    h,
    /** ms left of the hold-off, 0 when none. */
    left: () => (h.until === null ? 0 : h.until - now),
    pass: (ms: number) => void (now += ms),
    limits: () => limits,
  };
}

t.test('without Retry-After: 1 s doubling on each repeat, capped at holdOffMaxMs', async (t) => {
  const c = clocked({ maxMs: 30_000 });
  t.equal(c.h.active, false, 'not held off at first');
  t.equal(c.h.until, null);
  const seen: number[] = [];
  for (let i = 0; i < 8; i++) {
    c.h.limited();
    seen.push(c.left());
    c.pass(c.left());
    t.equal(c.h.active, false, `hold-off ${i + 1} ends at its time`);
  }
  t.same(seen, [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000], 'doubling, then the cap');
  t.equal(c.limits(), 8, 'each limit counted');
});

t.test('the default cap is 10 minutes', async (t) => {
  t.equal(DEFAULT_HOLD_OFF_MAX_MS, 600_000);
  const c = clocked();
  for (let i = 0; i < 12; i++) {
    c.h.limited();
    if (i < 11) c.pass(c.left());
  }
  t.equal(c.left(), 600_000, 'the 12th repeat (2^11 s) is held to 10 minutes');
  c.pass(600_000);
  c.h.limited();
  t.equal(c.left(), 600_000, 'and stays there');
});

t.test('jitter: up to 20% more, never past the cap', async (t) => {
  const high = clocked({ random: 0.999999, maxMs: 10_000 });
  high.h.limited();
  t.equal(high.left(), 1_200, '1 s becomes at most 1.2 s (whole milliseconds)');
  const half = clocked({ random: 0.5, maxMs: 10_000 });
  half.h.limited();
  t.equal(half.left(), 1_100, 'half the jitter: 1.1 s');
  const capped = clocked({ random: 0.999999, maxMs: 10_000 });
  capped.h.limited(9_000);
  t.equal(capped.left(), 10_000, 'a Retry-After near the cap: jitter stops at the cap');
});

t.test('Retry-After is honoured, up to the cap', async (t) => {
  const c = clocked({ maxMs: 60_000 });
  c.h.limited(30_000);
  t.equal(c.left(), 30_000, 'Retry-After 30 s: held off 30 s');
  c.pass(30_000);
  c.h.limited(3_600_000);
  t.equal(c.left(), 60_000, 'Retry-After of an hour: held to holdOffMaxMs');
  c.pass(60_000);
  c.h.limited();
  t.equal(c.left(), 4_000, 'a repeat without Retry-After doubles on from the repeats before (1 s x 2^2)');
});

t.test('refusals while held off are no repeat; a later Retry-After may lengthen it', async (t) => {
  const c = clocked({ maxMs: 60_000 });
  c.h.limited();
  for (let i = 0; i < 5; i++) c.h.limited();
  t.equal(c.left(), 1_000, 'five refusals of calls in flight when it began: still 1 s, not 32 s');
  c.h.limited(20_000);
  t.equal(c.left(), 20_000, 'one carrying Retry-After 20 s lengthens it');
  c.h.limited(5_000);
  t.equal(c.left(), 20_000, 'a shorter one never shortens it');
  c.pass(20_000);
  c.h.limited();
  t.equal(c.left(), 2_000, 'the next hold-off is the first repeat: 2 s');
  t.equal(c.limits(), 9, 'every refusal counted all the same');
});

t.test('a good answer after the hold-off ends the doubling; one during it does not', async (t) => {
  const c = clocked({ maxMs: 60_000 });
  c.h.limited();
  c.pass(1_000);
  c.h.limited();
  t.equal(c.left(), 2_000);
  c.h.answered();
  c.pass(2_000);
  c.h.limited();
  t.equal(c.left(), 4_000, 'an answer to a call sent before the hold-off began says nothing: 4 s');
  c.pass(4_000);
  c.h.answered();
  c.h.limited();
  t.equal(c.left(), 1_000, 'an answer after it ended: back to 1 s');
});

t.test('read(): one exchange is one limit, with its Retry-After; else a good answer ends the doubling', async (t) => {
  const c = clocked({ maxMs: 60_000 });
  const limited: Verdict = { kind: 'retry', reason: 'node_limit', health: false, error: '{}', holdOff: true };
  const result: Verdict = { kind: 'result', result: '"0x1"' };
  const batch = [result, limited, limited, limited];
  t.equal(c.h.read(batch, undefined), batch, 'the verdicts come back as given');
  t.equal(c.limits(), 1, 'three refusals in one exchange: one limit');
  t.equal(c.left(), 1_000);
  c.pass(1_000);
  c.h.read(new Map([[7, limited]]), '10');
  t.equal(c.left(), 10_000, "a batch answer's Retry-After (10 s)");
  c.pass(10_000);
  c.h.read(result, undefined);
  c.h.read(null, '5');
  t.equal(c.limits(), 2, 'a result and an unreadable batch: no limit');
  c.h.read({ kind: 'retry', reason: 'http_429', health: false, holdOff: true }, undefined);
  t.equal(c.left(), 1_000, 'after the good answer: 1 s again');
});

t.test('retryAfterMs: seconds or an HTTP date', async (t) => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  t.equal(retryAfterMs(undefined, now), undefined, 'absent');
  t.equal(retryAfterMs('120', now), 120_000, 'delta-seconds');
  t.equal(retryAfterMs(' 0 ', now), 0, 'zero, with spaces');
  t.equal(retryAfterMs('Thu, 01 Jan 2026 00:01:30 GMT', now), 90_000, 'an HTTP date 90 s ahead');
  t.equal(retryAfterMs('Wed, 31 Dec 2025 23:00:00 GMT', now), 0, 'a date past: 0');
  t.equal(retryAfterMs('soon', now), undefined, 'unreadable: the doubling applies');
  t.equal(retryAfterMs('-5', now), undefined, 'negative: unreadable');
  t.equal(retryAfterMs('1.5', now), undefined, 'a fraction: unreadable (not read as a date either)');
});

t.test('HTTP 429 and -32005 hold off; neither is a health failure', async (t) => {
  t.same(classifyHttp(429, 'Too Many Requests'), { kind: 'retry', reason: 'http_429', health: false, holdOff: true });
  t.same(
    classifyHttp(429, '{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"rate limit exceeded"}}', 1),
    { kind: 'retry', reason: 'http_429', health: false, holdOff: true },
    'the status speaks first',
  );
  t.match(classifyHttp(200, '{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"limit exceeded"}}', 1), {
    kind: 'retry',
    reason: 'node_limit',
    health: false,
    holdOff: true,
  });
  t.match(
    classifyHttp(200, '{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted: rate limit"}}', 1),
    { kind: 'node-error' },
    "a revert's reason is never read: no hold-off",
  );
});
