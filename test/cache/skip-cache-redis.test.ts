/**
 * X-Switchyard-Skip-Cache reads neither cache level: two instances share finalized answers through
 * a real redis-server; an entry A filled is a hit for B's plain call, but B's call with the
 * directive (from an API key with `directives: true`) reaches one of B's nodes.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { startCountingProxy } from '../helpers/counting-proxy.js';
import { post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';
import {
  metric,
  nodeCalls,
  rawCall,
  rawMember,
  startProxiedStack,
  startRedis,
  startSwitchyardVia,
  waitSynced,
} from './fixtures/tools.js';

const ONCALL = 'oncall-key-0123456789abcdef';

t.test('Skip-Cache passes over a Redis hit, and the plain call still hits', async (t) => {
  const redis = await startRedis(t);
  const { devnet, sy: a, node } = await startProxiedStack(t, { nodes: 2, config: { cache: { redis: redis.url } } });
  const proxiesB = await Promise.all(devnet.nodes().map((n) => startCountingProxy(t, n.url)));
  const b = await startSwitchyardVia(t, devnet, proxiesB, {
    cache: { redis: redis.url },
    rateLimit: {
      perIp: null,
      apiKeys: [{ name: 'oncall', key: ONCALL, ratePerSec: 1000, burst: 1000, directives: true }],
    },
  });
  const probe = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 200 });
  probe.on('error', () => undefined);
  t.teardown(() => probe.disconnect());
  await probe.connect();

  await devnet.mine(14);
  const { finalized } = await waitSynced(a, node);
  await waitSynced(b, node);
  t.ok(finalized >= 3, `block 3 is finalized (${finalized})`);
  await waitFor('both instances connected to redis', async () => {
    const up = await Promise.all([a, b].map((sy) => metric(sy, 'switchyard_cache_redis_up')));
    return up.every((v) => v === 1);
  });

  /** Block n read through A, once its entry is in Redis. */
  const filled = async (n: string): Promise<string | undefined> => {
    const keysBefore = await probe.dbsize();
    const want = rawMember((await rawCall(a.url, 'eth_getBlockByNumber', [n, true])).text, 'result');
    await waitFor("A's entry written to redis", async () => (await probe.dbsize()) > keysBefore);
    return want;
  };
  const block = (n: string): object => ({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: [n, true] });

  const want2 = await filled('0x2');
  const plainMarks = proxiesB.map((p) => p.mark());
  const plain = await post(b.url, block('0x2'), { 'x-api-key': ONCALL });
  t.equal(rawMember(plain.text, 'result'), want2);
  t.equal(nodeCalls(proxiesB, 'eth_getBlockByNumber', plainMarks), 0, "without the directive, B's call is a Redis hit");

  const want3 = await filled('0x3');
  const skipMarks = proxiesB.map((p) => p.mark());
  const skipped = await post(b.url, block('0x3'), { 'x-api-key': ONCALL, 'x-switchyard-skip-cache': 'true' });
  t.equal(rawMember(skipped.text, 'result'), want3, 'the same block');
  t.equal(nodeCalls(proxiesB, 'eth_getBlockByNumber', skipMarks), 1, "with it, one of B's nodes was asked");
  t.equal(skipped.headers['x-switchyard-cache'], 'miss');
});
