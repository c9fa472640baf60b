/**
 * One Redis connection manager (src/redis/connections.ts): with a top-level `redis`, the cache's
 * second level, the shared rate limits and shared heads of one replica all use ONE command
 * connection (plus one pub/sub connection, and one for the shared uptime page's store images),
 * counted on a real redis-server with CLIENT LIST; a
 * reload that rebuilds the rate limits keeps it. Redis killed: one warning line naming every user
 * and what each does meanwhile, `switchyard_redis_up` 0, calls still answered; Redis restarted on
 * the same port: one "reachable again" line, the gauge back to 1, and all three users on Redis again.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { validateConfig } from '../../src/config/load.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { startRedis } from '../helpers/redis.js';
import { call, get } from '../helpers/rpc.js';
import { startSwitchyard, testConfig } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { memoryLogger } from '../limits/fixtures/tools.js';

t.test('one connection per Redis URL, shared by cache, rate limits and shared heads', async (t) => {
  const redis = await startRedis(t);
  const anvil = await startAnvil({ args: ['--block-time', '1'] });
  t.teardown(() => anvil.stop());
  const logs = memoryLogger('info');
  const input = (ratePerSec: number): Partial<ConfigInput> & Pick<ConfigInput, 'upstreams'> => ({
    upstreams: [{ name: 'anvil', url: anvil.url }],
    redis: redis.url,
    routing: { headPollMs: 250 },
    rateLimit: { perIp: { ratePerSec, burst: ratePerSec } },
  });
  const sy = await startSwitchyard(t, input(1_000), { logger: logs.logger });
  const probe = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 200 });
  probe.on('error', () => undefined);
  t.teardown(() => probe.disconnect());

  /** Switchyard's connections by name, from CLIENT LIST. */
  const connections = async (): Promise<Record<string, number>> => {
    const out: Record<string, number> = {};
    for (const line of String(await probe.call('CLIENT', 'LIST')).split('\n')) {
      const name = /\bname=(\S*)/.exec(line)?.[1];
      if (name?.startsWith('switchyard')) out[name] = (out[name] ?? 0) + 1;
    }
    return out;
  };
  const redisUp = async (): Promise<number | undefined> =>
    metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_redis_up')[0];
  /** The rate limits charge a call in Redis (the window is written before the answer). */
  const rateLimitsWrite = async (): Promise<boolean> => {
    const key = 'switchyard:rl:186:ip:sustained:127.0.0.1';
    await probe.del(key);
    await call(sy.url, 'eth_chainId');
    return (await probe.exists(key)) === 1;
  };
  /**
   * Every user on a Redis that held none of its keys: a rate-limit window, the heads hash, and a
   * cache entry (a block by hash is immutable; the latest block's is a memory miss once mined).
   */
  const everyUserWrites = async (): Promise<void> => {
    await waitFor('the rate limits charge in redis', rateLimitsWrite);
    await waitFor('shared heads write their hash', async () => (await probe.exists('switchyard:186:heads')) === 1);
    await waitFor(
      'the cache writes an entry',
      async () => {
        const latest = (await call(sy.url, 'eth_getBlockByNumber', ['latest', false])).result.hash;
        await call(sy.url, 'eth_getBlockByHash', [latest, false]);
        return (await probe.keys('switchyard:cache:*')).length > 0;
      },
      { intervalMs: 250 },
    );
  };

  await waitFor('connected', async () => (await redisUp()) === 1);
  await everyUserWrites();
  t.same(
    await connections(),
    { switchyard: 1, 'switchyard-sub': 1, 'switchyard-uptime': 1 },
    'one command connection and one pub/sub connection',
  );

  await sy.app.reload(validateConfig(testConfig(input(2_000))));
  await waitFor('the rate limits rebuilt by the reload charge in redis', rateLimitsWrite);
  t.same(
    await connections(),
    { switchyard: 1, 'switchyard-sub': 1, 'switchyard-uptime': 1 },
    'after a reload that rebuilt the rate limits: still one of each',
  );

  const mark = logs.lines().length;
  await redis.kill();
  await waitFor('switchyard_redis_up 0', async () => (await redisUp()) === 0);
  for (let i = 0; i < 10; i++)
    t.match((await call(sy.url, 'eth_blockNumber')).result, /^0x/, `call ${i} answered with Redis down`);
  const down = logs
    .lines()
    .slice(mark)
    .filter((l) => /redis unreachable/.test(l.msg));
  t.equal(down.length, 1, 'one line for the transition to down');
  t.equal(down[0]?.level, 'warn', 'a warning');
  t.same(
    [...(down[0]?.users ?? [])].sort(),
    ['cache', 'cordons', 'rate limits', 'shared heads', 'uptime'],
    'naming every user of that Redis',
  );
  t.notMatch(JSON.stringify(down[0]), String(redis.port), 'and never its address');

  await redis.start();
  await waitFor('switchyard_redis_up 1 again', async () => (await redisUp()) === 1, { timeoutMs: 30_000 });
  // A fresh, empty redis-server: whatever is in it now was written after the restart.
  await everyUserWrites();
  const up = logs
    .lines()
    .slice(mark)
    .filter((l) => /redis reachable again/.test(l.msg));
  t.equal(up.length, 1, 'one line for the transition back up');
  t.equal(up[0]?.level, 'info', 'at info');
  t.same(
    await connections(),
    { switchyard: 1, 'switchyard-sub': 1, 'switchyard-uptime': 1 },
    'reconnected: still one of each',
  );
});

t.test('switchyard_redis_up is absent while a reload leaves no Redis in use', async (t) => {
  const redis = await startRedis(t);
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const input = (redisUrl: string | null): Partial<ConfigInput> & Pick<ConfigInput, 'upstreams'> => ({
    upstreams: [{ name: 'anvil', url: anvil.url }],
    rateLimit: { perIp: { ratePerSec: 1_000, burst: 1_000 }, redis: redisUrl },
  });
  const sy = await startSwitchyard(t, input(redis.url));
  const samples = async (): Promise<number[]> =>
    metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_redis_up');
  await waitFor('switchyard_redis_up 1 with rateLimit.redis', async () => (await samples())[0] === 1);
  await sy.app.reload(validateConfig(testConfig(input(null))));
  // A 0 here would fire RedisUnreachable for a replica that no longer uses any Redis.
  await waitFor('the gauge gone once no Redis is in use', async () => (await samples()).length === 0);
  t.pass('no switchyard_redis_up sample without a Redis');
  await sy.app.reload(validateConfig(testConfig(input(redis.url))));
  await waitFor('switchyard_redis_up 1 again', async () => (await samples())[0] === 1);
  t.pass('back with the Redis');
});
