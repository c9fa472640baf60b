/**
 * The example Redis (compose.yaml, deploy/kubernetes/redis.yaml) evicts only keys with a TTL: a
 * real redis-server set to the shipped policy, filled past its maxmemory with cache entries as
 * Switchyard writes them (SET ... EX), keeps the uptime page's history and the cordons, which
 * carry no TTL. Under allkeys-lru they were the first to go.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import t from 'tap';
import { parse, parseAllDocuments } from 'yaml';
import { startRedis } from '../helpers/redis.js';

const root = (p: string): string => fileURLToPath(new URL(`../../${p}`, import.meta.url));

/** The value after `flag` in a redis-server argument list. */
function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
}

const compose = parse(readFileSync(root('compose.yaml'), 'utf8')) as { services: { redis: { command: string[] } } };
const k8s = parseAllDocuments(readFileSync(root('deploy/kubernetes/redis.yaml'), 'utf8'))
  .map((d) => d.toJSON() as { kind: string; spec: { template: { spec: { containers: { args: string[] }[] } } } })
  .find((d) => d.kind === 'Deployment')!;
const shipped = {
  compose: compose.services.redis.command,
  kubernetes: k8s.spec.template.spec.containers[0]!.args,
};

t.test('both example Redis configs bound memory and evict only keys with a TTL', async (t) => {
  for (const [where, args] of Object.entries(shipped)) {
    t.equal(flag(args, '--maxmemory-policy'), 'volatile-lru', `${where}: volatile-lru`);
    t.match(flag(args, '--maxmemory'), /^\d+mb$/, `${where}: a maxmemory`);
  }
});

t.test('filled past maxmemory under the shipped policy: the history and the cordons stay', async (t) => {
  const server = await startRedis(t);
  const redis = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  t.teardown(() => redis.disconnect());
  await redis.connect();
  await redis.config('SET', 'maxmemory', '8mb');
  await redis.config('SET', 'maxmemory-policy', flag(shipped.kubernetes, '--maxmemory-policy')!);
  const image = 'x'.repeat(1_000_000);
  await redis.set('switchyard:186:uptime:image', image);
  await redis.set('switchyard:186:uptime:version', '7');
  await redis.hset('switchyard:186:cordons', 'node-1', JSON.stringify({ reason: 'disk swap', at: 1 }));
  // 30 MB of cache entries, 10 kB each, with the cache's TTL: several times the bound.
  const entry = 'y'.repeat(10_000);
  for (let batch = 0; batch < 30; batch++) {
    const p = redis.pipeline();
    for (let i = 0; i < 100; i++) p.set(`switchyard:cache:186:k${batch * 100 + i}`, entry, 'EX', 604_800);
    const results = (await p.exec()) ?? [];
    t.notOk(
      results.some(([err]) => err !== null),
      `batch ${batch}: every write taken`,
      { diagnostic: false },
    );
  }
  const evicted = Number(/evicted_keys:(\d+)/.exec(await redis.info('stats'))?.[1]);
  t.ok(evicted > 0, `cache entries were evicted (${evicted})`);
  t.equal((await redis.get('switchyard:186:uptime:image'))?.length, image.length, 'the page history stays');
  t.equal(await redis.get('switchyard:186:uptime:version'), '7');
  t.ok(await redis.hget('switchyard:186:cordons', 'node-1'), 'the cordon stays');
});
