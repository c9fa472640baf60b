/**
 * A batch that fits what is left of a client's window is charged to the shared (Redis) window in one
 * step, not one round trip per call (src/limits/rate.ts): counted on a real redis-server by the
 * commands it processed. A batch that does not fit is charged call by call, each call over budget
 * refused alone, as before.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { DEFAULT_METHOD_COST } from '../../src/config/schema.js';
import { RateLimits } from '../../src/limits/rate.js';
import { createLogger } from '../../src/log/logger.js';
import { Metrics } from '../../src/metrics/registry.js';
import { waitFor } from '../helpers/wait.js';
import { startRedis } from './fixtures/tools.js';

const redis = await startRedis(t);
const probe = new Redis(redis.url, { maxRetriesPerRequest: 1 });
t.teardown(() => probe.disconnect());
const limits = new RateLimits(
  {
    perIp: { ratePerSec: 1000, burst: 1000, burstWindowSec: 10 },
    methodCost: DEFAULT_METHOD_COST,
    redis: redis.url,
    exempt: [],
    apiKeys: [],
  },
  new Metrics({ processMetrics: false }),
  createLogger('silent'),
);
t.teardown(() => limits.close());
await waitFor('the limits charge through redis', () => (limits.stats().shared as { usable: boolean }).usable);

/** Commands redis processed while `f` ran (the INFO that reads the count is one). */
async function commands(f: () => Promise<unknown>): Promise<number> {
  const count = async (): Promise<number> =>
    Number(/total_commands_processed:(\d+)/.exec(await probe.info('stats'))![1]);
  const before = await count();
  await f();
  return (await count()) - before - 1;
}

t.test('25 calls that fit are charged in one step; 25 over budget one by one', async (t) => {
  const single = await commands(async () => {
    for (let i = 0; i < 25; i++) await limits.admit({ ip: '10.0.0.1' }, ['eth_chainId']);
  });
  let out: unknown;
  const whole = await commands(async () => {
    out = await limits.admit({ ip: '10.0.0.2' }, Array(25).fill('eth_chainId'));
  });
  t.same(out, Array(25).fill(null), 'a batch of 25 that fits: all admitted');
  t.ok(
    whole > 0 && whole * 5 <= single,
    `in one step: ${whole} redis commands for the batch, ${single} for 25 single calls`,
  );

  await limits.admit({ ip: '10.0.0.3' }, Array(990).fill('eth_chainId'));
  const each = await commands(async () => {
    out = await limits.admit({ ip: '10.0.0.3' }, Array(25).fill('eth_chainId'));
  });
  t.same(out, [...Array(10).fill(null), ...Array(15).fill(1)], '10 left in the window: 10 in, 15 refused');
  t.ok(each >= 25, `a batch that does not fit, call by call: ${each} redis commands`);
});
