/**
 * The one way shared state reaches Redis (replicas/shared-state.ts), against a real redis-server:
 * keys and channel under `switchyard:<chainId>:`, one exchange at a time however often asked (one
 * more after it), a message on the channel handed to the state (or an exchange when it reads none),
 * an exchange every `everyMs`, and nothing after close.
 */
import { Redis } from 'ioredis';
import t from 'tap';
import { createLogger } from '../../src/log/logger.js';
import { Metrics } from '../../src/metrics/registry.js';
import { RedisConnections } from '../../src/redis/connections.js';
import { SharedRedis, type SharedState } from '../../src/replicas/shared-state.js';
import { startRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

/** A state whose exchanges wait until let go, counting how many ran. */
class Gate implements SharedState {
  ran = 0;
  heardMessages: string[] = [];
  private open: (() => void)[] = [];
  async exchange(): Promise<boolean> {
    this.ran++;
    await new Promise<void>((r) => this.open.push(r));
    return true;
  }
  letGo(): void {
    for (const r of this.open.splice(0)) r();
  }
}

t.test('keys, coalescing, messages, the timer and close', async (t) => {
  const redis = await startRedis(t);
  const connections = new RedisConnections(new Metrics(), createLogger('silent'));
  t.teardown(() => connections.close());
  const shared = new SharedRedis(connections, redis.url, 186);

  const gate = new Gate();
  const ch = shared.open({ key: 'test', channel: ':said', use: 'test', whileDown: 'nothing', everyMs: 60_000 }, gate);
  t.equal(ch.key(), 'switchyard:186:test');
  t.equal(ch.key(':x'), 'switchyard:186:test:x');
  t.equal(ch.channel, 'switchyard:186:test:said');

  const first = ch.sync();
  const joined = [ch.sync(), ch.sync(), ch.sync()];
  t.equal(gate.ran, 1, 'asked four times while one runs: one runs');
  gate.letGo();
  t.same(await Promise.all([first, ...joined]), [true, true, true, true], 'those asked meanwhile get its outcome');
  await waitFor('one more after it', async () => gate.ran === 2);
  gate.letGo();

  // A state that reads no message: an announcement is an exchange.
  ch.start();
  await waitFor('usable', async () => ch.usable);
  const writer = new Redis(redis.url);
  t.teardown(() => writer.disconnect());
  await waitFor('subscribed', async () => (await writer.publish('switchyard:186:test:said', 'changed')) > 0);
  await waitFor('the announcement led to an exchange', async () => {
    gate.letGo();
    return gate.ran >= 3;
  });
  gate.letGo();

  // A state that reads its messages gets them as they came.
  const reader: SharedState & { got: string[] } = {
    got: [],
    exchange: async () => true,
    heard(m) {
      this.got.push(m);
    },
  };
  const ch2 = shared.open(
    { key: 'other', channel: ':said', use: 'test', whileDown: 'nothing', everyMs: 60_000 },
    reader,
  );
  ch2.start();
  await waitFor('subscribed', async () => (await writer.publish('switchyard:186:other:said', 'hello')) > 0);
  await waitFor('heard', async () => reader.got.includes('hello'));

  ch.close();
  ch2.close();
  t.equal(await ch.sync(), false, 'closed: no exchange');
});

t.test('every everyMs an exchange runs', async (t) => {
  const redis = await startRedis(t);
  const connections = new RedisConnections(new Metrics(), createLogger('silent'));
  t.teardown(() => connections.close());
  let ran = 0;
  const ch = new SharedRedis(connections, redis.url, 186).open(
    { key: 'tick', use: 'test', whileDown: 'nothing', everyMs: 50 },
    { exchange: async () => (ran++, true) },
  );
  t.equal(ch.channel, null, 'no channel asked: none');
  // A witness ticking at the same pace: once it has ticked four times after close(), the closed
  // channel would have ticked too (an absence is shown by another timer's progress, not a sleep).
  let witnessed = 0;
  const witness = new SharedRedis(connections, redis.url, 186).open(
    { key: 'witness', use: 'test', whileDown: 'nothing', everyMs: 50 },
    { exchange: async () => (witnessed++, true) },
  );
  ch.start();
  witness.start();
  t.teardown(() => witness.close());
  await waitFor('three ticks', async () => ran >= 3);
  ch.close();
  const after = ran;
  const seen = witnessed;
  await waitFor('four ticks of the witness after close', async () => witnessed >= seen + 4);
  t.equal(ran, after, 'none after close');
});
