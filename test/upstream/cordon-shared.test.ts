/**
 * Cordons shared through Redis (SPEC 4.8): two Switchyard replicas with one real redis-server in
 * front of a replicated two-node anvil devnet. A cordon through replica A is seen by replica B
 * (the delay is reported), B routes no call to the node, and the cordon survives closing and
 * starting both replicas again; an uncordon through B reaches A; a cordon written to Redis without
 * an announcement is found by the periodic re-read. What Redis holds is input: a
 * value that is no cordon, or a field that is no upstream name, is refused and counted, and
 * cordons nothing.
 */
import { Redis } from 'ioredis';
import t from 'tap';
import { startDevnet } from '../../src/devnet/index.js';
import { createLogger } from '../../src/log/logger.js';
import { Metrics } from '../../src/metrics/registry.js';
import { RedisConnections } from '../../src/redis/connections.js';
import { SharedCordons } from '../../src/replicas/shared-cordons.js';
import { SharedRedis } from '../../src/replicas/shared-state.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { startRedis } from '../helpers/redis.js';
import { call, get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const stateOf = async (sy: RunningSwitchyard, name: string): Promise<string | undefined> =>
  ((await get(`${sy.adminUrl}/upstreams`)).json().upstreams as { name: string; state: string }[]).find(
    (u) => u.name === name,
  )?.state;
const metric = async (sy: RunningSwitchyard, name: string, labels: Record<string, string>): Promise<number> =>
  metricSamples((await get(`${sy.adminUrl}/metrics`)).text, name, labels).reduce((a, b) => a + b, 0);

t.test('a cordon through one replica reaches the other and survives restarting both', async (t) => {
  const redis = await startRedis(t);
  const devnet = await startDevnet({ nodes: 2, chainId: 186, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  const upstreams = devnet.nodes().map((n) => ({ name: n.name, url: n.url }));
  const [first, second] = upstreams.map((u) => u.name) as [string, string];
  const start = (): Promise<RunningSwitchyard> => startSwitchyard(t, { upstreams, redis: redis.url });
  let a = await start();
  let b = await start();
  t.equal((await get(`${b.adminUrl}/upstreams`)).json().keptIn, 'redis', 'kept in Redis');

  const sent = Date.now();
  const res = await post(`${a.adminUrl}/upstreams/${first}/cordon`, { reason: 'resync' });
  t.equal(res.status, 200, 'cordoned through A');
  await waitFor('B sees the cordon', async () => (await stateOf(b, first)) === 'cordoned', { timeoutMs: 10_000 });
  t.comment(`B saw the cordon ${Date.now() - sent} ms after A was asked (SPEC: within 2 s)`);

  const before = await metric(b, 'switchyard_upstream_calls_total', { upstream: first });
  const failed: string[] = [];
  for (let i = 0; i < 20; i++) {
    const address = `0x${(i + 1).toString(16).padStart(40, '0')}`;
    const r = await call(b.url, 'eth_getBalance', [address, 'latest']);
    if (typeof r.result !== 'string') failed.push(JSON.stringify(r).slice(0, 200));
  }
  t.same(failed, [], '20 reads through B answered');
  t.equal(await metric(b, 'switchyard_upstream_calls_total', { upstream: first }), before, 'B sent it no call');
  t.equal(await metric(b, 'switchyard_upstream_cordoned', { upstream: first }), 1, "B's gauge reads 1");

  await a.close();
  await b.close();
  a = await start();
  b = await start();
  t.equal(await stateOf(a, first), 'cordoned', 'after restarting both: A starts with the cordon');
  t.equal(await stateOf(b, first), 'cordoned', 'and so does B');
  const status = (await get(`${a.adminUrl}/status`)).json();
  t.match(status.upstreams[0], { name: first, state: 'cordoned', cordon: { reason: 'resync' } }, 'reason kept');

  const lifted = Date.now();
  t.equal((await post(`${b.adminUrl}/upstreams/${first}/uncordon`, '')).status, 200, 'uncordoned through B');
  await waitFor('A sees the uncordon', async () => (await stateOf(a, first)) === 'healthy', { timeoutMs: 10_000 });
  t.comment(`A saw the uncordon ${Date.now() - lifted} ms after B was asked`);

  const writer = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  t.teardown(() => writer.disconnect());
  // Written without an announcement (as if the message were missed): the periodic re-read finds it.
  const quiet = Date.now();
  await writer.hset('switchyard:186:cordons', second, JSON.stringify({ reason: 'quiet', at: quiet }));
  await waitFor('A reads the unannounced cordon', async () => (await stateOf(a, second)) === 'cordoned', {
    timeoutMs: 10_000,
  });
  t.comment(`A read a cordon written without an announcement ${Date.now() - quiet} ms later`);
  await writer.hdel('switchyard:186:cordons', second);
  await waitFor('and its removal', async () => (await stateOf(a, second)) === 'healthy', { timeoutMs: 10_000 });

  // Poisoned by a writer of the test's own: nothing is taken, each is counted.
  const refused = (): Promise<number> => metric(a, 'switchyard_redis_values_refused_total', { use: 'cordons' });
  const was = await refused();
  await writer.hset('switchyard:186:cordons', second, '{"reason":42}', 'not a name!', '{"reason":null,"at":1}');
  await waitFor('the poisoned values counted', async () => (await refused()) >= was + 2, { timeoutMs: 10_000 });
  t.equal(await stateOf(a, second), 'healthy', 'a value that is no cordon cordons nothing');
  t.same((await get(`${a.adminUrl}/upstreams`)).json().ignoredCordons, [], 'and a field that is no name is no cordon');
});

t.test('closed while a read is in flight: the answer goes nowhere and nothing throws', async (t) => {
  const redis = await startRedis(t);
  const connections = new RedisConnections(new Metrics(), createLogger('silent'));
  // Another user keeps the connection open, as the cache or the heads do in a replica.
  const other = connections.link(redis.url, { name: 'other', whileDown: 'nothing' });
  const cordons = new SharedCordons(new SharedRedis(connections, redis.url, 186), () => ['a'], new Metrics());
  const seen: number[] = [];
  await cordons.start((all) => seen.push(all.size));
  const before = seen.length;
  t.ok(before >= 1, 'the first read reached the keeper');
  redis.pause(); // the next read's script waits in Redis, so close() runs while it is in flight
  const read = cordons.exchange();
  await cordons.close();
  redis.resume();
  t.equal(await read, false, 'the read in flight resolves false instead of calling a closed keeper');
  t.equal(seen.length, before, 'and hands nothing on');
  other.release();
  await connections.close();
});
