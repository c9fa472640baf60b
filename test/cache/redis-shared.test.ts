/**
 * Two Switchyard instances in front of the same nodes share finalized answers through a real
 * redis-server: an entry filled through A is a hit for B (B's nodes never see the call). Killing
 * Redis (SIGKILL, mid-test) changes nothing for clients: both keep answering every call correctly
 * and report `switchyard_cache_redis_up 0`. Redis back on the same port: sharing resumes.
 */
import t, { type Test } from 'tap';
import { Redis } from 'ioredis';
import { startCountingProxy, type CountingProxy } from '../helpers/counting-proxy.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { startAnvil } from '../helpers/anvil.js';
import { ResponseCache } from '../../src/cache/index.js';
import { Metrics } from '../../src/metrics/registry.js';
import { createLogger } from '../../src/log/logger.js';
import { waitFor } from '../helpers/wait.js';
import {
  hex,
  metric,
  rawCall,
  rawMember,
  startProxiedStack,
  startRedis,
  startSwitchyardVia,
  waitSynced,
} from './fixtures/tools.js';

t.test('a finalized entry filled by one instance is a hit for the other; Redis down changes nothing', async (t) => {
  const redis = await startRedis(t);
  const {
    devnet,
    proxies: proxiesA,
    sy: a,
    node,
  } = await startProxiedStack(t, { nodes: 2, config: { cache: { redis: redis.url } } });
  const proxiesB = await Promise.all(devnet.nodes().map((n) => startCountingProxy(t, n.url)));
  const b = await startSwitchyardVia(t, devnet, proxiesB, { cache: { redis: redis.url } });
  // A plain client of the test's own, to see when A's write has landed (A writes without waiting).
  const probe = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 200 });
  probe.on('error', () => undefined);
  t.teardown(() => probe.disconnect());

  await devnet.mine(14);
  const { finalized } = await waitSynced(a, node);
  await waitSynced(b, node);
  t.ok(finalized >= 6, `blocks 1..6 are finalized (${finalized})`);
  const redisUp = (sy: RunningSwitchyard) => metric(sy, 'switchyard_cache_redis_up');
  await waitFor('both instances connected to redis', async () => (await redisUp(a)) === 1 && (await redisUp(b)) === 1);

  /** Reads through A, waits for A's entry to reach Redis, then reads through B: B must hit. */
  const shared = async (t: Test, params: unknown[]) => {
    const want = rawMember((await rawCall(node, 'eth_getBlockByNumber', params)).text, 'result');
    const keysBefore = await probe.dbsize();
    const marksA = proxiesA.map((p) => p.mark());
    const viaA = await rawCall(a.url, 'eth_getBlockByNumber', params);
    t.equal(rawMember(viaA.text, 'result'), want, 'A answers the node answer');
    t.equal(countAll(proxiesA, 'eth_getBlockByNumber', params, marksA), 1, "A's miss reached one of its nodes");
    await waitFor("A's entry written to redis", async () => (await probe.dbsize()) > keysBefore);
    const marks = proxiesB.map((p) => p.mark());
    const hitsBefore = await metric(b, 'switchyard_cache_lookups_total', { result: 'hit', class: 'immutable' });
    const viaB = await rawCall(b.url, 'eth_getBlockByNumber', params);
    t.equal(rawMember(viaB.text, 'result'), want, 'B answers the same bytes');
    t.equal(
      (await metric(b, 'switchyard_cache_lookups_total', { result: 'hit', class: 'immutable' })) - hitsBefore,
      1,
      "B's lookup was a hit",
    );
    t.equal(countAll(proxiesB, 'eth_getBlockByNumber', params, marks), 0, "B's nodes never saw the call");
  };

  await t.test('shared through redis', async (t) => {
    await probe.connect();
    await shared(t, ['0x3', true]);
  });

  await t.test('redis killed: both instances keep answering, redis_up 0', async (t) => {
    await redis.kill();
    const wants = new Map<number, string>();
    for (let n = 0; n <= finalized; n++)
      wants.set(n, rawMember((await rawCall(node, 'eth_getBlockByNumber', [hex(n), false])).text, 'result')!);
    for (const [name, sy] of [
      ['A', a],
      ['B', b],
    ] as const) {
      const answers = await Promise.all(
        Array.from({ length: 100 }, async (_, i) => {
          const n = i % (finalized + 1);
          const r = await rawCall(sy.url, 'eth_getBlockByNumber', [hex(n), false]);
          return rawMember(r.text, 'result') === wants.get(n);
        }),
      );
      t.equal(
        answers.filter(Boolean).length,
        100,
        `${name}: 100 of 100 calls answered with the right block while redis is down`,
      );
    }
    await waitFor('both instances report redis down', async () => (await redisUp(a)) === 0 && (await redisUp(b)) === 0);
    t.pass('switchyard_cache_redis_up is 0 on both');
    t.equal(
      (await rawCall(b.url, 'eth_getBlockByNumber', ['0x3', true])).json.result?.number,
      '0x3',
      'an entry B got from redis is still in its memory',
    );
  });

  await t.test('redis back on the same port: sharing resumes', async (t) => {
    await redis.start();
    await waitFor('both instances reconnected', async () => (await redisUp(a)) === 1 && (await redisUp(b)) === 1, {
      timeoutMs: 30_000,
    });
    await waitFor('probe reconnected', async () => probe.status === 'ready');
    t.equal(await probe.dbsize(), 0, 'a fresh redis (no persistence)');
    await shared(t, [hex(finalized - 1), true]);
  });

  await t.test("an instance for another chain sharing the same redis never gets this chain's entries", async (t) => {
    const other = await startAnvil({ chainId: 187 });
    t.teardown(() => other.stop());
    const c = await startSwitchyard(t, {
      chainId: 187,
      upstreams: [{ name: 'other-chain', url: other.url }],
      cache: { redis: redis.url },
    });
    await waitFor('C connected to redis', async () => (await redisUp(c)) === 1);
    const keysBefore = await probe.dbsize();
    const ours = await rawCall(a.url, 'eth_getBlockByNumber', ['0x0', true]);
    await waitFor("A's genesis written to redis", async () => (await probe.dbsize()) > keysBefore);
    const theirs = await rawCall(other.url, 'eth_getBlockByNumber', ['0x0', true]);
    t.not(theirs.json.result.hash, ours.json.result.hash, 'the two chains have different genesis blocks');
    const viaC = await rawCall(c.url, 'eth_getBlockByNumber', ['0x0', true]);
    t.equal(
      viaC.json.result?.hash,
      theirs.json.result.hash,
      "C answers its own chain's genesis, not the one A put in redis",
    );
  });

  await t.test('ResponseCache keys its redis entries by the chain id it is given', async (t) => {
    const make = (chainId: number) => {
      const cache = new ResponseCache(
        { maxBytes: 1_000_000, redis: redis.url, chainId },
        new Metrics({ processMetrics: false }),
        createLogger('silent'),
      );
      t.teardown(() => cache.close());
      return cache;
    };
    const [c186, c186b, c187] = [make(186), make(186), make(187)];
    const key = `eth_getBlockByNumber:["0x1",false,"${Date.now()}"]`;
    const plan = { key, cls: 'immutable' as const, shareKey: key, head: 0, secondMiss: false };
    await waitFor('the three caches connected', async () =>
      [c186, c186b, c187].every((c) => (c.stats().redis as { ready: boolean }).ready),
    );
    const keysBefore = await probe.dbsize();
    c186.store(plan, '{"hash":"0xaa"}', c186.generation, 0);
    await waitFor('entry written', async () => (await probe.dbsize()) > keysBefore);
    // A memory miss of an immutable plan is asked of Redis (before the call would be dispatched).
    t.equal(c186b.lookup(plan), undefined, "not in the other instance's memory");
    t.ok(c186b.shared(plan), 'so the other instance asks Redis');
    t.equal(await c186b.lookupShared(plan), '{"hash":"0xaa"}', 'another instance of the same chain finds it');
    t.equal(await c187.lookupShared(plan), undefined, 'an instance of another chain does not');
  });
});

function countAll(proxies: CountingProxy[], method: string, params: unknown[], marks: number[]): number {
  return proxies.reduce((n, p, i) => n + p.count(method, params, marks[i]), 0);
}
