/**
 * One Redis for deployments of two chains: every Redis key carries the chain id, so a client's
 * per-IP limit and a node's budget on chain 186 are not spent by the same client or the same node
 * name on chain 1337. Two Switchyard instances, one per chain, each in front of a real anvil of its
 * chain, share one real redis-server; each has an upstream named `node` with a budget and the same
 * per-IP limit. The limits refill in an hour or more, so no count depends on where a window ends.
 */
import { Redis } from 'ioredis';
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startRedis } from '../helpers/redis.js';
import { call, get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const PER_IP = { ratePerSec: 1, burst: 10, burstWindowSec: 3600 };
const BUDGET = { ratePerSec: 0.0001, burst: 50 };

async function remaining(sy: RunningSwitchyard): Promise<number> {
  const status = (await get(`${sy.adminUrl}/status`)).json() as { upstreams: { budget: { remaining: number } }[] };
  return status.upstreams[0]!.budget.remaining;
}

t.test('two chains on one Redis share neither per-IP limits nor budgets', async (t) => {
  const redis = await startRedis(t);
  const chains = [186, 1337];
  const nodes = await Promise.all(chains.map((chainId) => startAnvil({ chainId })));
  t.teardown(() => Promise.all(nodes.map((n) => n.stop())));
  const [one, two] = await Promise.all(
    chains.map((chainId, i) =>
      startSwitchyard(t, {
        chainId,
        redis: redis.url,
        upstreams: [{ name: 'node', url: nodes[i]!.url, rateLimit: BUDGET }],
        rateLimit: { perIp: PER_IP, redis: redis.url, methodCost: {} },
      }),
    ),
  );
  await waitFor('both budgets shared through Redis', async () => {
    const shared = await Promise.all(
      [one!, two!].map(async (sy) => (await get(`${sy.adminUrl}/status`)).json().upstreams[0].budget.shared),
    );
    return shared.every((s) => s === true);
  });

  // Chain 186's node spends 5 calls of its budget; chain 1337's node budget is untouched by it.
  const before = await remaining(two!);
  const batch = Array.from({ length: 5 }, (_, id) => ({
    jsonrpc: '2.0',
    id,
    method: 'eth_getBalance',
    params: [`0x${(id + 1).toString(16).padStart(40, '0')}`, 'latest'],
  }));
  const answers = (await post(one!.url, batch)).json() as { result?: string }[];
  t.ok(
    answers.every((a) => a.result === '0x0'),
    '5 reads answered on chain 186',
  );
  t.ok((await remaining(one!)) <= BUDGET.burst - 5, "chain 186's node budget is spent");
  t.equal(await remaining(two!), before, "chain 1337's node of the same name kept its budget");

  // The same client (127.0.0.1) spends the rest of its per-IP limit (10 calls) on chain 186 alone.
  const replies: unknown[] = [];
  for (let i = 0; i < 6; i++) replies.push(await call(one!.url, 'eth_chainId'));
  t.match(replies.at(-1), { error: { code: -32005, message: 'rate limit exceeded' } }, 'rate-limited on chain 186');
  t.match(await call(two!.url, 'eth_chainId'), { result: '0x539' }, 'and not on chain 1337');

  const probe = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  t.teardown(() => probe.disconnect());
  const keys = (await probe.keys('switchyard:*')).sort();
  t.ok(keys.length > 0, `${keys.length} keys in Redis`);
  t.same(
    keys.filter((k) => !/^switchyard:(rl|budget|cache):(186|1337):|^switchyard:(186|1337):/.test(k)),
    [],
    'every key names its chain',
  );
});
