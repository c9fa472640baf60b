/**
 * Notifications held for a subscription whose answer is not written yet are unsent data: they
 * count against maxBufferBytes (the fanout sees the client full at half of it, and one more held
 * past the cap closes the client), they are released in order once the answer is written, and
 * the per-IP slot a subscription takes is given back when it goes.
 */
import { EventEmitter } from 'node:events';
import t from 'tap';
import type { Call } from '../../src/jsonrpc/parse.js';
import { Metrics } from '../../src/metrics/registry.js';
import type { ChainFeed, FeedBlock } from '../../src/subscriptions/chain.js';
import type { PendingFeed } from '../../src/subscriptions/pending.js';
import { Session } from '../../src/subscriptions/session.js';

const CAP = 10_000;

function harness(): {
  session: Session;
  feed: EventEmitter;
  sent: string[];
  closes: number[];
  slots: { held: number };
} {
  const feed = Object.assign(new EventEmitter(), {
    current: 0,
    logs: { add: () => undefined, remove: () => undefined },
  });
  const sent: string[] = [];
  const closes: number[] = [];
  const slots = { held: 0 };
  const session = new Session({
    feed: feed as unknown as ChainFeed,
    pending: {} as PendingFeed,
    metrics: new Metrics({ processMetrics: false }),
    maxPerConnection: () => 100,
    takeIpSlot: () => (slots.held < 2 ? (slots.held++, true) : false),
    giveIpSlot: () => void slots.held--,
    send: (text) => void sent.push(text),
    unsent: () => (closes.length > 0 ? null : 0),
    maxBufferBytes: () => CAP,
    overflow: () => {
      closes.push(session.heldBytes);
      session.close();
    },
  });
  return { session, feed, sent, closes, slots };
}

const subscribe = (index: number): Call => ({
  index,
  id: String(index),
  method: 'eth_subscribe',
  params: ['newHeads'],
});
const head = (n: number): FeedBlock => ({
  number: n,
  hash: '0x',
  parentHash: '0x',
  header: `{"number":${n},"pad":"${'x'.repeat(900)}"}`,
  seq: n,
});

t.test('held notifications are released in order once the answer is written', async (t) => {
  const { session, feed, sent } = harness();
  const frame = session.frame();
  t.ok((await frame.call(subscribe(1))).result, 'subscribed');
  for (let n = 1; n <= 3; n++) feed.emit('head', head(n));
  t.equal(sent.length, 0, 'nothing is sent before the answer');
  t.ok(session.heldBytes > 2_700, `held: ${session.heldBytes} bytes`);
  frame.written();
  t.same(
    sent.map((s) => JSON.parse(s).params.result.number),
    [1, 2, 3],
    'released in order',
  );
  t.equal(session.heldBytes, 0, 'nothing held any more');
});

t.test('held notifications count against maxBufferBytes', async (t) => {
  const { session, feed, closes, slots } = harness();
  const frame = session.frame();
  await frame.call(subscribe(1));
  t.equal(session.room(), 'ready', 'room for the logs fanout while nothing is held');
  let n = 0;
  while (session.room() === 'ready' && n < 100) feed.emit('head', head(++n));
  t.ok(
    session.heldBytes * 2 >= CAP && session.heldBytes < CAP,
    `full for the logs fanout at half the cap (${session.heldBytes} bytes held after ${n} heads)`,
  );
  while (closes.length === 0 && n < 100) feed.emit('head', head(++n));
  t.equal(closes.length, 1, 'closed as a slow reader');
  t.ok(
    closes[0]! >= CAP && closes[0]! < CAP + 1_000,
    `closed once it held the cap (${closes[0]} bytes held, cap ${CAP})`,
  );
  t.equal(session.heldBytes, 0, 'closing frees what was held');
  t.equal(session.room(), 'closed', 'closed for the logs fanout');
  t.equal(slots.held, 0, 'its per-IP slot is given back');
});

t.test('the per-IP slot: refused past it, given back on unsubscribe', async (t) => {
  const { session, slots } = harness();
  const frame = session.frame();
  const a = await frame.call(subscribe(1));
  await frame.call(subscribe(2));
  const refused = await frame.call(subscribe(3));
  t.equal(refused.error?.reason, 'TOO_MANY_IP_SUBSCRIPTIONS', 'the third is refused: the IP holds two');
  t.equal(refused.error?.code, -32005, 'with -32005');
  const id = JSON.parse(String(a.result!)) as string;
  t.same(
    await frame.call({ index: 4, id: '4', method: 'eth_unsubscribe', params: [id] }),
    { result: 'true' },
    'unsubscribed',
  );
  t.equal(slots.held, 1, 'its slot is given back');
  t.ok((await frame.call(subscribe(5))).result, 'another subscription takes it');
});
