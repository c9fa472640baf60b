/**
 * What a shared Redis holds is input: a real redis-server, poisoned by a writer of the test's own,
 * in front of which Switchyard (top-level `redis`: cache and shared heads) serves one real anvil.
 * Cache entries: a value that would add an element to a batch answer (`"0x1"},{...`), a block of
 * another number, text that is no JSON, `null`. Shared heads: the anvil's head and the fleet head
 * 500 blocks ahead, then values that are no numbers. Meanwhile another client reads `latest`.
 * Asserted: batch answers are valid JSON with one element per call, each the anvil's answer; the
 * other client has 0 failures; eth_blockNumber never shows the poisoned head and still follows
 * the chain; exchanges with Redis keep working; refusals are counted.
 */
import { Redis } from 'ioredis';
import t from 'tap';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { startRedis } from '../helpers/redis.js';
import { call, get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const ADDR = DEV_ADDRESS.toLowerCase();
const metric = async (sy: RunningSwitchyard, name: string, labels: Record<string, string> = {}): Promise<number> =>
  metricSamples((await get(`${sy.adminUrl}/metrics`)).text, name, labels).reduce((a, b) => a + b, 0);

t.test(
  'values poisoned in the shared Redis are refused: answers stay whole and right, calls do not fail',
  async (t) => {
    const redis = await startRedis(t);
    const writer = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    t.teardown(() => writer.disconnect());
    const anvil = await startAnvil();
    t.teardown(() => anvil.stop());
    // Blocks up to head - 64 are finalized (anvil's default epoch): their reads are shared in Redis.
    await call(anvil.url, 'anvil_mine', ['0x50']);
    const head = 0x50;

    // Poisoned before Switchyard ever asks: each would be a hit if taken as it is.
    const cache = (key: string): string => `switchyard:cache:186:${key}`;
    await writer.set(cache(`eth_getBalance:["${ADDR}","0x5"]`), '"0x1"},{"jsonrpc":"2.0","id":99,"result":"0x2"');
    await writer.set(
      cache('eth_getBlockByNumber:["0x5",false]'),
      JSON.stringify({ number: '0x6', hash: `0x${'66'.repeat(32)}` }),
    );
    await writer.set(cache(`eth_getBalance:["${ADDR}","0x6"]`), '0xdead');
    await writer.set(cache(`eth_getBalance:["${ADDR}","0x7"]`), 'null');

    const sy = await startSwitchyard(t, {
      upstreams: [{ name: 'anvil', url: anvil.url }],
      redis: redis.url,
      routing: { headPollMs: 100 },
    });
    await waitFor('the head known', async () => (await call(sy.url, 'eth_blockNumber')).result === '0x50');

    // One batch over the poisoned entries.
    const batch = [
      { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [DEV_ADDRESS, '0x5'] },
      { jsonrpc: '2.0', id: 2, method: 'eth_getBlockByNumber', params: ['0x5', false] },
      { jsonrpc: '2.0', id: 3, method: 'eth_getBalance', params: [DEV_ADDRESS, '0x6'] },
      { jsonrpc: '2.0', id: 4, method: 'eth_getBalance', params: [DEV_ADDRESS, '0x7'] },
      { jsonrpc: '2.0', id: 5, method: 'eth_chainId', params: [] },
    ];
    const want = await Promise.all(
      batch.map(async (c) =>
        c.method === 'eth_chainId' ? '0xba' : (await call(anvil.url, c.method, c.params)).result,
      ),
    );
    for (let round = 0; round < 2; round++) {
      const r = await post(sy.url, batch);
      let answers: { id: number; result?: unknown }[] = [];
      try {
        answers = JSON.parse(r.text);
      } catch {
        t.fail(`round ${round}: the batch answer is not JSON: ${r.text.slice(0, 200)}`);
      }
      t.equal(answers.length, batch.length, `round ${round}: one answer per call`);
      t.same(
        answers.map((a) => [a.id, a.result]),
        batch.map((c, i) => [c.id, want[i]]),
        `round ${round}: each the anvil's answer`,
      );
    }
    t.ok(
      (await metric(sy, 'switchyard_redis_values_refused_total', { use: 'cache' })) >= 4,
      'the poisoned cache entries were refused and counted',
    );

    // The other client: a `latest` state read every 50 ms from now to the end.
    let stop = false;
    t.teardown(() => {
      stop = true;
    });
    const failures: string[] = [];
    const latencies: number[] = [];
    const balance = (await call(anvil.url, 'eth_getBalance', [DEV_ADDRESS, 'latest'])).result;
    const other = (async () => {
      while (!stop) {
        const started = performance.now();
        const r = await call(sy.url, 'eth_getBalance', [DEV_ADDRESS, 'latest']).catch((err: Error) => ({
          error: err.message,
        }));
        if (r.result !== balance) failures.push(JSON.stringify(r).slice(0, 200));
        latencies.push(performance.now() - started);
        await new Promise((res) => setTimeout(res, 50));
      }
    })();
    const seen = new Set<number>();
    const blockNumber = async (): Promise<number> => {
      const n = Number.parseInt((await call(sy.url, 'eth_blockNumber')).result, 16);
      seen.add(n);
      return n;
    };

    // Shared heads 500 blocks ahead of the chain.
    const key = 'switchyard:186:heads';
    const refusedHeads = (): Promise<number> => metric(sy, 'switchyard_redis_values_refused_total', { use: 'heads' });
    /** Poisons the hash with a long TTL: an exchange after it sets the TTL back to Switchyard's own (2 s). */
    const poison = async (...fields: string[]): Promise<void> => {
      await writer
        .multi()
        .hset(key, ...fields)
        .pexpire(key, 600_000)
        .exec();
      await waitFor('an exchange after the poisoning', async () => (await writer.pttl(key)) <= 2_000);
    };
    await poison('u:anvil', String(head + 500), 'fleet', String(head + 500));
    t.ok((await refusedHeads()) >= 2, 'the poisoned heads were refused and counted');
    await call(anvil.url, 'anvil_mine', ['0x1']);
    await waitFor('eth_blockNumber follows the chain', async () => (await blockNumber()) === head + 1);

    // Values that are no numbers: the exchange goes on (they are replaced or refused).
    const failedBefore = await metric(sy, 'switchyard_shared_heads_failures_total');
    const refusedBefore = await refusedHeads();
    await poison('u:anvil', '1e400', 'fleet', 'abc');
    await waitFor('the next exchanges read them', async () => (await refusedHeads()) >= refusedBefore + 1);
    t.equal(await metric(sy, 'switchyard_shared_heads_failures_total'), failedBefore, 'no exchange with Redis failed');
    t.equal(await metric(sy, 'switchyard_redis_up'), 1, 'Redis counts as up');
    await call(anvil.url, 'anvil_mine', ['0x1']);
    await waitFor('eth_blockNumber still follows the chain', async () => (await blockNumber()) === head + 2);

    // The poisoning may take less time than five of its calls: let it make at least five in all.
    await waitFor('the other client made five calls', async () => latencies.length >= 5);
    stop = true;
    await other;
    latencies.sort((x, y) => x - y);
    const max = latencies[latencies.length - 1] ?? 0;
    t.comment(
      `other client: ${latencies.length} calls, ${failures.length} failed, max ${max.toFixed(1)} ms; eth_blockNumber seen: ${[...seen].join(', ')}`,
    );
    t.same(failures.slice(0, 3), [], `the other client had no failure (${failures.length})`);
    t.ok(max < 2_000, `its slowest call took ${max.toFixed(0)} ms`);
    t.ok(
      [...seen].every((n) => n <= head + 2),
      'eth_blockNumber never showed the poisoned head',
    );
  },
);
