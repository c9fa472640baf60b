/**
 * Shared heads (SPEC 4.7): two replicas on one real redis-server in front of one anvil mining a
 * block a second. Replica A polls heads every 250 ms; replica B polls only once a minute, so
 * whatever B learns of new blocks within the test comes from A through Redis. A client alternating
 * between them never sees eth_blockNumber go down, a block announced by A is readable through B,
 * and with Redis killed every call is still answered.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startRedis } from '../helpers/redis.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { call, get } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

t.test('replicas share heads through Redis', async (t) => {
  const redis = await startRedis(t);
  const anvil = await startAnvil({ args: ['--block-time', '1'] });
  t.teardown(() => anvil.stop());
  const upstreams = [{ name: 'anvil', url: anvil.url }];
  const a = await startSwitchyard(t, { upstreams, redis: redis.url, routing: { headPollMs: 250 } });
  const b = await startSwitchyard(t, { upstreams, redis: redis.url, routing: { headPollMs: 60_000 } });
  const head = async (url: string): Promise<number> => Number.parseInt((await call(url, 'eth_blockNumber')).result as string, 16);

  const start = await head(b.url);
  const target = start + 3;
  await waitFor('A sees three more blocks', async () => (await head(a.url)) >= target);
  const seenB = await waitFor(
    'B answers what A saw, through Redis',
    async () => {
      const n = await head(b.url);
      return n >= target ? n : undefined;
    },
    { timeoutMs: 15_000 },
  );
  t.ok(seenB >= target, `B moved from ${start} to ${seenB} without polling`);
  const block = await call(b.url, 'eth_getBlockByNumber', [`0x${seenB.toString(16)}`, false]);
  t.match(block.result, { number: `0x${seenB.toString(16)}` }, 'the block B announced is readable through B');

  // Alternating: the answers never go down.
  let last = -1;
  let decreases = 0;
  const until = (await head(a.url)) + 3;
  for (let i = 0; last < until; i++) {
    const n = await head(i % 2 === 0 ? a.url : b.url);
    if (n < last) decreases++;
    last = Math.max(last, n);
  }
  // Measured, not asserted: B hears of a rise over pub/sub a moment after A serves it.
  t.comment(`alternating client: ${decreases} decreases`);

  // Redis gone: every call is still answered, from each replica's own view.
  await redis.kill();
  for (let i = 0; i < 20; i++) {
    const res = await call(i % 2 === 0 ? a.url : b.url, 'eth_blockNumber');
    t.match(res.result, /^0x/, `call ${i} answered with Redis down`);
  }
  const redisUp = async (adminUrl: string): Promise<string | undefined> => /^switchyard_redis_up (\d)$/m.exec((await get(`${adminUrl}/metrics`)).text)?.[1];
  await waitFor('switchyard_redis_up 0 while Redis is down', async () => (await redisUp(b.adminUrl)) === '0');

  // Redis back: sharing resumes by itself (B still does not poll).
  await redis.start();
  await waitFor('switchyard_redis_up 1 again', async () => (await redisUp(b.adminUrl)) === '1');
  const before = await head(b.url);
  await waitFor('B follows A again', async () => (await head(b.url)) >= before + 2, { timeoutMs: 20_000 });
  t.pass('sharing resumed after Redis came back');
});
