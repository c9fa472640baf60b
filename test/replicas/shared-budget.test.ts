/**
 * Upstream budgets shared by replicas (SPEC 4.8): two Switchyard replicas with the same top-level
 * `redis` (a real redis-server) in front of two real anvil nodes of one devnet chain; node `a` has
 * a budget of 6 calls (refilled in hours, so no count depends on where a window ends) and weighs
 * 1000 times `b`, so it is the one chosen while it has budget. What one replica spends, the other
 * cannot: `a` gets 6 calls from the two together. Then redis-server is SIGKILLed: each replica
 * counts in its own memory (one budget per replica meanwhile), and every call is still answered.
 * Each replica's chain feed reads the head block through routing at start (a call like any other):
 * the replicas start while Redis is down, so that read is counted in their own memory, and Redis
 * is started once both have made it.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { startDevnet } from '../../src/devnet/index.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { startRedis } from '../helpers/redis.js';
import { call, get } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const BURST = 6;

let address = 0;
/** One balance read no earlier call made (never answered from a cache): its result. */
async function read(sy: RunningSwitchyard): Promise<unknown> {
  const who = `0x${(++address).toString(16).padStart(40, '0')}`;
  return (await call(sy.url, 'eth_getBalance', [who, 'latest'])).result;
}

async function calls(sy: RunningSwitchyard, labels: Record<string, string>): Promise<number> {
  const text = (await get(`${sy.adminUrl}/metrics`)).text;
  return metricSamples(text, 'switchyard_upstream_calls_total', labels).reduce((x, y) => x + y, 0);
}

async function budgetOfA(sy: RunningSwitchyard): Promise<{ remaining: number; shared: boolean | null }> {
  const status = (await get(`${sy.adminUrl}/status`)).json() as {
    upstreams: { name: string; budget: { remaining: number; shared: boolean | null } }[];
  };
  return status.upstreams.find((u) => u.name === 'a')!.budget;
}

t.test('two replicas share one budget per node through Redis; without Redis each counts its own', async (t) => {
  const devnet = await startDevnet({ nodes: 2, chainId: 186, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  const [nodeA, nodeB] = devnet.nodes();
  const redis = await startRedis(t);
  await redis.kill();
  const config = {
    upstreams: [
      { name: 'a', url: nodeA!.url, weight: 1000, rateLimit: { ratePerSec: 0.0001, burst: BURST } },
      { name: 'b', url: nodeB!.url },
    ],
    redis: redis.url,
  };
  const one = await startSwitchyard(t, config);
  const two = await startSwitchyard(t, config);
  for (const sy of [one, two])
    await waitFor(
      "the chain feed's read of the head block",
      async () => (await calls(sy, { method: 'eth_getBlockByNumber' })) >= 1,
    );
  // What replica one's feed took from a, in its own memory (Redis was down).
  const feedA = await calls(one, { upstream: 'a' });
  await redis.start();
  for (const sy of [one, two])
    await waitFor('the budget shared through redis', async () => (await budgetOfA(sy)).shared === true);

  const before = { oneA: feedA, twoA: await calls(two, { upstream: 'a' }), twoB: await calls(two, { upstream: 'b' }) };
  for (let i = 0; i < BURST - 1; i++) t.equal(await read(one), '0x0', `replica one, call ${i + 1}`);
  t.equal((await calls(one, { upstream: 'a' })) - before.oneA, BURST - 1, 'replica one spent all but one');
  for (let i = 0; i < 3; i++) t.equal(await read(two), '0x0', `replica two, call ${i + 1}`);
  t.equal((await calls(two, { upstream: 'a' })) - before.twoA, 1, 'replica two had one left');
  t.equal((await calls(two, { upstream: 'b' })) - before.twoB, 2, 'and sent the rest to b');
  t.equal((await budgetOfA(two)).remaining, 0, "replica two's /status: nothing left");
  const probe = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  t.equal(await probe.get('switchyard:budget:186:a:calls'), String(BURST), 'one count in Redis for both');
  probe.disconnect();

  await redis.kill();
  await waitFor('replica one counting in memory', async () => (await budgetOfA(one)).shared === false);
  const down = { a: await calls(one, { upstream: 'a' }), b: await calls(one, { upstream: 'b' }) };
  const own = BURST - feedA;
  for (let i = 0; i < own + 1; i++) t.equal(await read(one), '0x0', `Redis down, call ${i + 1} answered`);
  t.equal((await calls(one, { upstream: 'a' })) - down.a, own, "a got what replica one's own budget had left");
  t.equal((await calls(one, { upstream: 'b' })) - down.b, 1, 'the last call went to b');
});
