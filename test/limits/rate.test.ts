/**
 * The rate-limit window figures of SPEC 6 and docs/limits.md "Rate limits", exact, in process, on a
 * controlled clock. The memory windows are rate-limiter-flexible's, which read Date.now and arm a
 * setTimeout per window, so @sinonjs/fake-timers replaces both for each test: time moves only when
 * a test ticks it, however slow the machine. With perIp {ratePerSec 10, burst 30, burstWindowSec 10}
 * a client has 10 units in each 1-second window plus a burst allowance of 20 units per 10 s.
 */
import * as FakeTimers from '@sinonjs/fake-timers';
import t, { type Test } from 'tap';
import { DEFAULT_METHOD_COST } from '../../src/config/schema.js';
import { type Admission, type RateLimitConfig, RateLimits } from '../../src/limits/rate.js';
import { createLogger } from '../../src/log/logger.js';
import { Metrics } from '../../src/metrics/registry.js';
import { metricValue } from './fixtures/tools.js';

const PER_IP = { ratePerSec: 10, burst: 30, burstWindowSec: 10 };
const WHO = { ip: '10.0.0.1' };

interface Rig {
  limits: RateLimits;
  metrics: Metrics;
  /** Moves the fake clock (Date.now and the window timers) forward. */
  tick(ms: number): void;
  /** `n` single calls of `method` at once, each its own admit (as n HTTP requests). */
  burst(n: number, method?: string, who?: typeof WHO | { ip: string; apiKey: string }): Promise<Admission[]>;
}

let clock: ReturnType<typeof FakeTimers.install>;
t.beforeEach(() => {
  clock = FakeTimers.install({ now: 1_000_000, toFake: ['Date', 'setTimeout', 'clearTimeout'] });
});
t.afterEach(() => clock.uninstall());

function rig(t: Test, cfg: Partial<RateLimitConfig> = {}): Rig {
  const metrics = new Metrics({ processMetrics: false });
  const limits = new RateLimits(
    { perIp: PER_IP, methodCost: DEFAULT_METHOD_COST, redis: null, exempt: [], apiKeys: [], ...cfg },
    metrics,
    createLogger('silent'),
  );
  t.teardown(() => limits.close());
  return {
    limits,
    metrics,
    tick: (ms) => clock.tick(ms),
    burst: async (n, method = 'eth_chainId', who = WHO) =>
      (await Promise.all(Array.from({ length: n }, () => limits.admit(who, [method])))).map((a) => a[0]!),
  };
}

const admittedIn = (out: Admission[]): number => out.filter((a) => a === null).length;
const refusals = (out: Admission[]): Admission[] => out.filter((a) => a !== null);

t.test(
  'a burst of 50 at once: 30 admitted, 20 refused with Retry-After 1; then 10 in each 1-second window',
  async (t) => {
    const r = rig(t);
    const first = await r.burst(50);
    t.equal(admittedIn(first), 30, 'burst (30) admitted: 10 sustained + 20 burst allowance');
    t.same(
      refusals(first),
      Array(20).fill(1),
      'the other 20 refused, each told to retry after 1 s (the sustained window ends within a second)',
    );
    t.same(first.slice(0, 30), Array(30).fill(null), 'in arrival order: the first 30 in, the last 20 out');
    t.equal(
      metricValue(await r.metrics.registry.metrics(), 'switchyard_rate_limited_calls_total', { reason: 'rate' }),
      20,
      'the 20 counted',
    );

    r.tick(500);
    t.same(
      await r.burst(5),
      Array(5).fill(1),
      'half a second later: still nothing (same sustained window, allowance spent)',
    );
    r.tick(500);
    const second = await r.burst(20);
    t.equal(admittedIn(second), 10, 'one second after the first call, a new sustained window: exactly ratePerSec (10)');
    t.same(refusals(second), Array(10).fill(1), 'the rest refused with Retry-After 1');
    r.tick(999);
    t.same(await r.burst(3), [1, 1, 1], '1 ms before the window ends: still refused');
    r.tick(1);
    t.equal(admittedIn(await r.burst(20)), 10, 'at the window end: 10 more');
  },
);

t.test('bursts each second through one burst window: ratePerSec x W + (burst - ratePerSec) admitted', async (t) => {
  const r = rig(t);
  let admitted = 0;
  for (let s = 0; s < 10; s++) {
    admitted += admittedIn(await r.burst(50));
    r.tick(1_000);
  }
  t.equal(admitted, 10 * 10 + 20, '120 calls admitted in 10 s of bursts of 50 each second');
});

t.test('the burst allowance refills burstWindowSec after it was first spent', async (t) => {
  const r = rig(t);
  t.equal(admittedIn(await r.burst(50)), 30, 'first burst: 30');
  r.tick(9_000);
  t.equal(admittedIn(await r.burst(50)), 10, '9 s later the allowance is still spent: 10');
  r.tick(1_000);
  t.equal(admittedIn(await r.burst(50)), 30, '10 s after it was first spent: 30 again');
});

t.test(
  'a call costing more than ratePerSec only ever fits the burst allowance; its Retry-After is the burst window end',
  async (t) => {
    const r = rig(t, { methodCost: { eth_blockNumber: 15 } });
    t.same(await r.burst(1, 'eth_blockNumber'), [null], 'cost 15 fits the allowance (20)');
    t.same(
      await r.burst(1, 'eth_blockNumber'),
      [10],
      'a second does not (5 left, and 15 never fits 10): retry after the 10 s burst window',
    );
    r.tick(2_500);
    t.same(await r.burst(1, 'eth_blockNumber'), [8], '2.5 s later: 8 s (7.5 rounded up)');
    t.equal(admittedIn(await r.burst(10)), 10, 'cost-1 calls still have their sustained 10');
    r.tick(7_500);
    t.same(await r.burst(1, 'eth_blockNumber'), [null], 'once the burst window has ended it fits again');
  },
);

t.test(
  'a call costing more than any window holds is refused as never, charged nothing, whatever the wait',
  async (t) => {
    // ratePerSec 10 and an allowance of 20: a cost of 20 fits the allowance, 21 fits nothing.
    const r = rig(t, { methodCost: { eth_getLogs: 21, eth_call: 20 } });
    t.same(
      await r.limits.admit(WHO, ['eth_getLogs', 'eth_chainId']),
      ['never', null],
      'cost 21: never; the cheap call after it is admitted',
    );
    t.same(await r.burst(1, 'eth_call'), [null], 'cost 20 is paid from the allowance');
    t.equal(admittedIn(await r.burst(20)), 9, 'the never-admitted call took nothing: 9 sustained units left');
    r.tick(3_600_000);
    t.same(await r.burst(1, 'eth_getLogs'), ['never'], 'an hour later: still never');
    t.equal(
      metricValue(await r.metrics.registry.metrics(), 'switchyard_rate_limited_calls_total', { reason: 'rate' }),
      13,
      'refusals counted, the never ones included',
    );
  },
);

t.test('a batch is charged in request order with its methods costs; a call over budget is refused alone', async (t) => {
  t.equal(DEFAULT_METHOD_COST.eth_getLogs, 10, 'eth_getLogs costs 10 by default');
  const r = rig(t);
  t.same(
    await r.limits.admit(WHO, ['eth_getLogs', 'eth_getLogs', 'eth_getLogs', 'eth_chainId']),
    [null, null, null, 1],
    '10 + 10 + 10 = 30 units: the 31st is over',
  );

  const b = rig(t);
  const forty = await b.limits.admit(WHO, Array(40).fill('eth_chainId'));
  t.same(
    forty,
    [...Array(30).fill(null), ...Array(10).fill(1)],
    '40 calls with 30 units: the first 30 in, the last 10 out',
  );
  t.same(
    await b.limits.admit(WHO, Array(5).fill('eth_chainId')),
    Array(5).fill(1),
    'a batch wholly over: every call refused',
  );
  t.same(
    await b.limits.admit(WHO, ['web3_clientVersion', 'eth_getLogs', 'eth_chainId']),
    [1, 1, 1],
    'cost is per method, the budget per client',
  );
});

t.test('a batch that fits what is left of the window is charged whole; one that does not, call by call', async (t) => {
  const r = rig(t);
  t.same(await r.limits.admit(WHO, Array(8).fill('eth_chainId')), Array(8).fill(null), "8 of the window's 10: in");
  t.same(
    await r.limits.admit(WHO, Array(5).fill('eth_chainId')),
    Array(5).fill(null),
    '5 more do not fit the 2 left whole: 2 from the window, 3 from the burst allowance, call by call',
  );
  // Had the 5 stayed charged to the window, all 5 would have come from the allowance (15 left).
  t.same(
    await r.limits.admit(WHO, Array(18).fill('eth_chainId')),
    [...Array(17).fill(null), 1],
    'what the 5 left the allowance (17 of its 20): the refused whole charge was refunded',
  );
  r.tick(1000);
  t.same(await r.limits.admit(WHO, Array(10).fill('eth_chainId')), Array(10).fill(null), 'a new window: 10 in whole');
  t.same(await r.limits.admit(WHO, ['eth_chainId']), [1], 'and nothing more, its allowance spent');
});

t.test('a refused call costs nothing: after a refused eth_getLogs, cheaper calls still fit', async (t) => {
  const r = rig(t);
  t.equal(admittedIn(await r.limits.admit(WHO, Array(25).fill('eth_chainId'))), 25, '25 units spent, 5 left');
  t.same(await r.limits.admit(WHO, ['eth_getLogs']), [1], 'eth_getLogs (10) does not fit in 5');
  t.same(await r.limits.admit(WHO, ['eth_getLogs']), [1], 'nor does a second one');
  t.same(
    await r.limits.admit(WHO, Array(6).fill('eth_chainId')),
    [null, null, null, null, null, 1],
    'the 5 units left are all still there; the 6th is over',
  );
});

t.test('a cost of 0 is never charged; exempt ranges and perIp null are never limited', async (t) => {
  const r = rig(t, { methodCost: { eth_chainId: 0 }, exempt: ['10.9.0.0/16'] });
  t.equal(admittedIn(await r.burst(100)), 100, 'cost 0: all 100 in');
  t.equal(admittedIn(await r.burst(100, 'eth_blockNumber', { ip: '10.9.1.2' })), 100, 'an exempt client: all 100 in');
  t.equal(admittedIn(await r.burst(100, 'eth_blockNumber')), 30, 'another client: limited');
  const off = rig(t, { perIp: null });
  t.same(off.limits.admit(WHO, ['eth_chainId']), [null], 'perIp null: admitted at once, without a promise');
});

t.test("an API key has its own budget, apart from its holder's IP", async (t) => {
  const key = 'partner-key-0123456789';
  const r = rig(t, { apiKeys: [{ name: 'partner', key, ratePerSec: 5, burst: 5, burstWindowSec: 10 }] });
  const keyed = await r.burst(8, 'eth_chainId', { ip: WHO.ip, apiKey: key });
  t.equal(admittedIn(keyed), 5, "the key's budget: 5 (no burst allowance when burst == ratePerSec)");
  t.same(refusals(keyed), [1, 1, 1], 'the other 3 refused');
  t.equal(admittedIn(await r.burst(50)), 30, "the IP's own budget is untouched");
  t.equal(r.limits.keyName(key), 'partner');
  t.equal(r.limits.knowsKey('not-a-key-of-this-config'), false, 'an unknown key is not known');
});

t.test('stats: the limits in force and the calls refused', async (t) => {
  const r = rig(t);
  await r.burst(35);
  t.same(r.limits.stats(), { perIp: PER_IP, apiKeys: [], exemptRanges: 0, shared: null, refused: 5 });
});
