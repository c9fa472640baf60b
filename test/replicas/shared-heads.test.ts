/**
 * Shared heads (SPEC 4.7): two replicas on one real redis-server in front of one anvil mining a
 * block a second; replica A polls heads every 250 ms, replica B every 2 s. For at least 20 s two
 * clients alternate between them: one asks only eth_blockNumber; the other also reads each block it
 * was told of through the other replica at once. Meanwhile redis-server is SIGKILLed, left down
 * while blocks are mined, and started again on the same port (by pid).
 * Asserted: every call of both clients answered; eth_blockNumber never decreased for the reading
 * client, and never for the other while Redis was shared; while shared, each announced block was
 * read at once through the other replica; after the restart `switchyard_redis_up` is 1 again on
 * both and B takes a head A published after the restart. With Redis down each replica goes on with
 * its own view, so B, polling 8 times less often, may answer a lower head than A did a moment
 * before: the eth_blockNumber-only client's decreases in that window are reported, not asserted
 * (the reading client's own reads teach the slower replica each block, so it sees none).
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { startRedis } from '../helpers/redis.js';
import { call, get } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const RUN_MS = 20_000;
const hex = (n: number): string => `0x${n.toString(16)}`;

type Phase = 'shared' | 'outage';

interface Tally {
  calls: Record<Phase, number>;
  decreases: Record<Phase, number>;
  unreadable: Record<Phase, string[]>;
  failed: string[];
}

const tally = (): Tally => ({
  calls: { shared: 0, outage: 0 },
  decreases: { shared: 0, outage: 0 },
  unreadable: { shared: [], outage: [] },
  failed: [],
});

t.test('replicas share heads through Redis, across a Redis restart', async (t) => {
  const redis = await startRedis(t);
  const anvil = await startAnvil({ args: ['--block-time', '1'] });
  t.teardown(() => anvil.stop());
  const upstreams = [{ name: 'anvil', url: anvil.url }];
  const a = await startSwitchyard(t, { upstreams, redis: redis.url, routing: { headPollMs: 250 } });
  const b = await startSwitchyard(t, { upstreams, redis: redis.url, routing: { headPollMs: 2_000 } });
  const metric = async (sy: RunningSwitchyard, name: string): Promise<number | undefined> =>
    metricSamples((await get(`${sy.adminUrl}/metrics`)).text, name)[0];
  const taken = async (sy: RunningSwitchyard): Promise<number> =>
    (await metric(sy, 'switchyard_shared_heads_taken_total')) ?? 0;
  const bothRedisUp = async (v: number): Promise<boolean> =>
    (await metric(a, 'switchyard_redis_up')) === v && (await metric(b, 'switchyard_redis_up')) === v;
  const anvilHead = async (): Promise<number> => Number.parseInt((await call(anvil.url, 'eth_blockNumber')).result, 16);

  await waitFor('both replicas on Redis', () => bothRedisUp(1));
  await waitFor('B takes a head A saw, through Redis', async () => (await taken(b)) > 0);

  let phase: Phase = 'shared';
  let stop = false;

  /** Alternates A, B, A, ...; with `readThrough`, each block number told is read at once through the other replica. */
  const client = async (tl: Tally, readThrough: boolean): Promise<void> => {
    let last = -1;
    for (let i = 0; !stop; i++) {
      const [from, other, names] = i % 2 === 0 ? [a, b, 'A then B'] : [b, a, 'B then A'];
      const startedIn = phase;
      let n: number;
      let block: { number?: string } | null | undefined;
      try {
        const res = await call(from.url, 'eth_blockNumber');
        n = typeof res.result === 'string' ? Number.parseInt(res.result, 16) : Number.NaN;
        if (!Number.isSafeInteger(n)) throw new Error(JSON.stringify(res).slice(0, 200));
        if (readThrough) {
          const read = await call(other.url, 'eth_getBlockByNumber', [hex(n), false]);
          if (read.error !== undefined) throw new Error(JSON.stringify(read).slice(0, 200));
          block = read.result;
        }
      } catch (err) {
        tl.failed.push(`${names}: ${(err as Error).message}`);
        continue;
      }
      // A call that began or ended with Redis down (or not yet shared again) belongs to the outage.
      const p: Phase = startedIn === 'outage' || phase === 'outage' ? 'outage' : 'shared';
      tl.calls[p]++;
      if (n < last) tl.decreases[p]++;
      last = Math.max(last, n);
      if (readThrough && block?.number !== hex(n))
        tl.unreadable[p].push(`${names}: block ${n} read as ${JSON.stringify(block)}`);
      // Paced a little: the machine running the test is shared by both replicas, anvil and Redis.
      await new Promise((r) => setTimeout(r, 5));
    }
  };

  const reading = tally();
  const plain = tally();
  const started = Date.now();
  const running = Promise.all([client(reading, true), client(plain, false)]);
  try {
    await waitFor('shared traffic', () => reading.calls.shared >= 40 && plain.calls.shared >= 40);
    phase = 'outage';
    await redis.kill();
    await waitFor('switchyard_redis_up 0 on both', () => bothRedisUp(0));
    // Down long enough for blocks to be mined that each replica learns of alone.
    const headAtKill = await anvilHead();
    await waitFor('two blocks mined with Redis down', async () => (await anvilHead()) >= headAtKill + 2);
    await redis.start();
    await waitFor('switchyard_redis_up 1 on both again', () => bothRedisUp(1), { timeoutMs: 30_000 });
    const before = await taken(b);
    await waitFor('B takes a head A published after the restart', async () => (await taken(b)) > before, {
      timeoutMs: 30_000,
    });
    phase = 'shared';
    const resumed = reading.calls.shared;
    await waitFor(
      'shared traffic after the restart, and the run at least 20 s long',
      () => reading.calls.shared >= resumed + 40 && Date.now() - started >= RUN_MS,
      {
        timeoutMs: 60_000,
      },
    );
  } finally {
    stop = true;
    await running;
  }

  const total = (tl: Tally): number => tl.calls.shared + tl.calls.outage + tl.failed.length;
  t.same(
    reading.failed.slice(0, 5),
    [],
    `reading client: every call answered (${reading.failed.length} of ${total(reading)} failed)`,
  );
  t.same(
    plain.failed.slice(0, 5),
    [],
    `eth_blockNumber client: every call answered (${plain.failed.length} of ${total(plain)} failed)`,
  );
  t.equal(
    reading.decreases.shared + reading.decreases.outage,
    0,
    'reading client: eth_blockNumber never decreased, Redis restart included',
  );
  t.equal(
    plain.decreases.shared,
    0,
    `eth_blockNumber client: never decreased while Redis was shared (${plain.calls.shared} calls)`,
  );
  t.same(
    reading.unreadable.shared.slice(0, 5),
    [],
    'Redis shared: each block announced by one replica read at once through the other',
  );
  t.ok(reading.calls.outage >= 20, `calls made while Redis was down or catching up: ${reading.calls.outage}`);
  t.comment(
    `${Math.round((Date.now() - started) / 1000)} s; reading client: ${total(reading)} calls, ${reading.failed.length} failed, ` +
      `${reading.decreases.shared + reading.decreases.outage} decreases, ${reading.unreadable.outage.length} blocks not yet readable through the other replica while Redis was down; ` +
      `eth_blockNumber client: ${total(plain)} calls, ${plain.failed.length} failed, ${plain.decreases.shared} decreases while shared, ${plain.decreases.outage} while Redis was down (${plain.calls.outage} calls)`,
  );
});
