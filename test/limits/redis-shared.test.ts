/**
 * Rate limits shared across replicas (SPEC 6, docs/limits.md "Rate limits"): two Switchyard instances with
 * the same `rateLimit.redis` give a client ONE budget; a real redis-server is SIGKILLed mid-test and
 * both instances keep serving with the same limits from their own memory (logged once, counted);
 * redis back on the same port: sharing resumes.
 * Clients are told apart by X-Forwarded-For (the instances trust 127.0.0.1), so each phase uses a
 * client no earlier phase has charged. Each client: one call per hour (ONE_CALL), so no figure
 * depends on where a 1-second window ends.
 */
import t, { type Test } from 'tap';
import { Redis } from 'ioredis';
import { startAnvil } from '../helpers/anvil.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import {
  Client,
  isRateLimited,
  memoryLogger,
  metric,
  ONE_CALL,
  rpc,
  startRedis,
  type Reply,
} from './fixtures/tools.js';

const BUDGET = 1;
const anvil = await startAnvil();
t.teardown(() => anvil.stop());
const redis = await startRedis(t);

interface Replica {
  sy: RunningSwitchyard;
  client: Client;
  logs: ReturnType<typeof memoryLogger>;
}

async function replica(t: Test): Promise<Replica> {
  const logs = memoryLogger('info');
  const sy = await startSwitchyard(
    t,
    {
      upstreams: [{ name: 'a', url: anvil.url }],
      server: { trustedProxies: ['127.0.0.1/32'] },
      rateLimit: { ...ONE_CALL, redis: redis.url },
    },
    { logger: logs.logger },
  );
  const client = new Client(t, sy.url);
  await client.warm(20);
  return { sy, client, logs };
}

const a = await replica(t);
const b = await replica(t);
const probe = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 200 });
probe.on('error', () => undefined);
t.teardown(() => probe.disconnect());

let clients = 0;
/** A client address no one has charged yet. */
const newClient = (): Record<string, string> => ({
  'x-forwarded-for': `10.1.${Math.floor(++clients / 250)}.${clients % 250}`,
});

const ok = (r: Reply): boolean => r.status === 200 && r.json?.result === '0xba';
const fallbacks = (r: Replica): Promise<number> => metric(r.sy, 'switchyard_rate_limit_fallback_total');

/** 2n calls of one client, one after the other, alternating A, B, A, ...; answers in send order. */
async function alternate(n: number, who: Record<string, string>): Promise<Reply[]> {
  const out: Reply[] = [];
  for (let i = 0; i < 2 * n; i++) out.push(await (i % 2 === 0 ? a : b).client.post(rpc('eth_chainId'), who));
  return out;
}

/** Whether the two replicas share a budget now: a fresh client spends its budget through A, then tries B. */
async function sharing(): Promise<boolean> {
  const who = newClient();
  const spent = await Promise.all(Array.from({ length: BUDGET }, () => a.client.post(rpc('eth_chainId'), who)));
  if (!spent.every(ok)) return false;
  return (await b.client.post(rpc('eth_chainId'), who)).status === 429;
}

t.test('two replicas, one budget per client', async (t) => {
  // Both connected to redis: a call through each leaves that client's window in redis.
  for (const r of [a, b]) {
    await waitFor('replica charging through redis', async () => {
      const who = newClient();
      const before = await fallbacks(r);
      const reply = await r.client.post(rpc('eth_chainId'), who);
      const key = `switchyard:rl:186:ip:burst:${who['x-forwarded-for']}`;
      return ok(reply) && (await fallbacks(r)) === before && (await probe.exists(key)) === 1;
    });
  }
  const replies = await alternate(15, newClient());
  t.ok(replies.slice(0, BUDGET).every(ok), 'A, B, A, B, ...: the first call admitted (by A)');
  t.ok(
    replies.slice(BUDGET).every((r) => r.status === 429 && isRateLimited(r.json)),
    'the next 29 refused by both: one budget in all, not one each',
  );
  t.ok(await sharing(), 'a client that spent its budget through A is refused by B');
});

t.test('redis hung (SIGSTOP): calls go to local memory at once, not one command timeout per call', async (t) => {
  const before = await fallbacks(a);
  redis.pause();
  t.teardown(() => redis.resume());
  const who = newClient();
  const started = performance.now();
  const first = await a.client.post(
    Array.from({ length: 50 }, (_, i) => rpc('eth_chainId', [], i + 1)),
    who,
  );
  const firstMs = performance.now() - started;
  const second = await a.client.post(
    Array.from({ length: 50 }, (_, i) => rpc('eth_chainId', [], i + 1)),
    who,
  );
  const ms = performance.now() - started;
  t.equal(first.status, 200);
  // One redis command timeout per call would be 50 x 200 ms = 10 s per batch; the bound is generous.
  t.ok(
    firstMs < 5_000,
    `a batch of 50 answered in ${Math.round(firstMs)} ms: at most one redis timeout (200 ms), not 50`,
  );
  t.ok(ms < 5_000, `and the next batch too (${Math.round(ms)} ms for both)`);
  const all = [...first.json, ...second.json];
  t.equal(all.filter((o: any) => o.result === '0xba').length, BUDGET, 'still limited from memory: one of 100 admitted');
  t.ok((await fallbacks(a)) > before, 'counted as a fallback');
  redis.resume();
  await waitFor('replicas share a budget again', sharing, { timeoutMs: 30_000, intervalMs: 100 });
  t.ok(
    a.logs.lines().some((l) => l.level === 'info' && /redis reachable again/.test(l.msg)),
    'A logged that redis is reachable again',
  );
});

t.test('redis SIGKILLed: both keep serving with local limits, counted and logged once', async (t) => {
  const marks = [a.logs.lines().length, b.logs.lines().length];
  const before = [await fallbacks(a), await fallbacks(b)];
  await redis.kill();
  // Until each replica has noticed, its calls still try redis; either way they must be answered.
  const during: Reply[] = [];
  for (const r of [a, b]) {
    await waitFor('replica on local limits', async () => {
      const reply = await r.client.post(rpc('eth_chainId'), newClient());
      during.push(reply);
      return (await fallbacks(r)) > before[[a, b].indexOf(r)]!;
    });
  }
  t.ok(during.every(ok), `every call answered while the replicas noticed (${during.length} calls)`);
  t.ok((await fallbacks(a)) > before[0]!, 'A: switchyard_rate_limit_fallback_total > 0');
  t.ok((await fallbacks(b)) > before[1]!, 'B: switchyard_rate_limit_fallback_total > 0');

  const who = newClient();
  const viaA = await a.client.burst(
    15,
    () => rpc('eth_chainId'),
    () => who,
  );
  const viaB = await b.client.burst(
    15,
    () => rpc('eth_chainId'),
    () => who,
  );
  const all = [...viaA, ...viaB];
  t.ok(
    all.every((r) => r.status === 200 || r.status === 429),
    'no 5xx: every answer is 200 or 429',
  );
  t.notOk(
    all.some((r) => r.json?.error?.code === -32603),
    'no -32603',
  );
  t.equal(viaA.filter(ok).length, BUDGET, 'A still limits the client: one of 15 admitted (never "allow all")');
  t.equal(viaA.filter((r) => r.status === 429 && isRateLimited(r.json)).length, 14, 'A refuses 14 with 429 -32005');
  t.equal(
    viaB.filter(ok).length,
    BUDGET,
    'B limits it too, from its own memory (budgets are per replica while redis is down)',
  );
  t.equal(viaB.filter((r) => r.status === 429 && isRateLimited(r.json)).length, 14, 'B refuses 14');
  for (const [name, r, mark] of [
    ['A', a, marks[0]!],
    ['B', b, marks[1]!],
  ] as const) {
    const warns = r.logs
      .lines()
      .slice(mark)
      .filter((l) => l.level === 'warn' && /redis unreachable/.test(l.msg));
    t.equal(warns.length, 1, `${name}: one warn line "${warns[0]?.msg}"`);
  }
});

t.test('redis back on the same port: sharing resumes', async (t) => {
  const marks = [a.logs.lines().length, b.logs.lines().length];
  await redis.start();
  await waitFor('replicas share a budget again', sharing, { timeoutMs: 30_000, intervalMs: 100 });
  const replies = await alternate(15, newClient());
  t.ok(replies.slice(0, BUDGET).every(ok), 'alternated calls: the first admitted');
  t.ok(
    replies.slice(BUDGET).every((r) => r.status === 429),
    'the next 29 refused: one budget again',
  );
  for (const [name, r, mark] of [
    ['A', a, marks[0]!],
    ['B', b, marks[1]!],
  ] as const) {
    t.ok(
      r.logs
        .lines()
        .slice(mark)
        .some((l) => l.level === 'info' && /redis reachable again/.test(l.msg)),
      `${name}: logged that redis is reachable again`,
    );
  }
});
