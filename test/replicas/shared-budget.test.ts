/**
 * Upstream budgets shared by replicas (SPEC 4.8): two Switchyard replicas with the same top-level
 * `redis` (a real redis-server) and two real anvil nodes; node `a` has a budget of 3 calls (refilled
 * in hours, so no count depends on where a window ends) and weighs 1000 times `b`, so it is the one
 * chosen while it has budget. What one replica spends, the other cannot: a is sent 3 calls in all.
 * Then redis-server is SIGKILLed: each replica counts in its own memory (one budget per replica
 * meanwhile), and every call is still answered.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { startRedis } from '../helpers/redis.js';
import { call, get } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const nodeA = await startAnvil();
const nodeB = await startAnvil();
t.teardown(() => Promise.all([nodeA.stop(), nodeB.stop()]));

let address = 0;
/** One balance read no earlier call made (never answered from a cache): its result. */
async function read(sy: RunningSwitchyard): Promise<unknown> {
  const who = `0x${(++address).toString(16).padStart(40, '0')}`;
  return (await call(sy.url, 'eth_getBalance', [who, 'latest'])).result;
}

async function callsTo(sy: RunningSwitchyard, upstream: string): Promise<number> {
  const text = (await get(`${sy.adminUrl}/metrics`)).text;
  return metricSamples(text, 'switchyard_upstream_calls_total', { upstream }).reduce((x, y) => x + y, 0);
}

async function budgetOfA(sy: RunningSwitchyard): Promise<{ remaining: number; shared: boolean | null }> {
  const status = (await get(`${sy.adminUrl}/status`)).json() as {
    upstreams: { name: string; budget: { remaining: number; shared: boolean | null } }[];
  };
  return status.upstreams.find((u) => u.name === 'a')!.budget;
}

t.test('two replicas share one budget per node through Redis; without Redis each counts its own', async (t) => {
  const redis = await startRedis(t);
  const config = {
    upstreams: [
      { name: 'a', url: nodeA.url, weight: 1000, rateLimit: { ratePerSec: 0.0001, burst: 3 } },
      { name: 'b', url: nodeB.url },
    ],
    redis: redis.url,
  };
  const one = await startSwitchyard(t, config);
  const two = await startSwitchyard(t, config);
  for (const sy of [one, two])
    await waitFor('the budget shared through redis', async () => (await budgetOfA(sy)).shared === true);

  for (let i = 0; i < 2; i++) t.equal(await read(one), '0x0', `replica one, call ${i + 1}`);
  t.equal(await callsTo(one, 'a'), 2, 'replica one spent two of the three');
  for (let i = 0; i < 3; i++) t.equal(await read(two), '0x0', `replica two, call ${i + 1}`);
  t.equal(await callsTo(two, 'a'), 1, 'replica two had one left');
  t.equal(await callsTo(two, 'b'), 2, 'and sent the rest to b');
  t.equal((await budgetOfA(two)).remaining, 0, "replica two's /status: nothing left");

  const probe = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  t.teardown(() => probe.disconnect());
  t.equal(await probe.get('switchyard:budget:186:a:calls'), '3', 'one count in Redis: 3 calls');
  probe.disconnect();

  await redis.kill();
  await waitFor('replica one counting in memory', async () => (await budgetOfA(one)).shared === false);
  for (let i = 0; i < 4; i++) t.equal(await read(one), '0x0', `Redis down, call ${i + 1} answered`);
  t.equal(await callsTo(one, 'a'), 2 + 3, "replica one's own budget of 3 in memory");
  t.equal(await callsTo(one, 'b'), 1, 'the fourth to b');
});
