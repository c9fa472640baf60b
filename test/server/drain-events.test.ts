/**
 * What the drain waits on (server/listeners.ts): the last call in flight ending (Concurrency.idle)
 * and a socket's last received frame being answered (Frames.allAnswered). Both resolve on the event
 * itself, not on a poll: they are pending while work remains and resolve once it is done.
 */
import t from 'tap';
import { Concurrency } from '../../src/limits/concurrency.js';
import { Frames, type Started } from '../../src/subscriptions/frames.js';

/** Whether `p` has resolved once the promise callbacks queued so far have run. */
async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

t.test('Concurrency.idle resolves when the last call ends', async (t) => {
  const c = new Concurrency(10, 10);
  t.ok(await settled(c.idle()), 'at once when nothing is in flight');
  t.equal(c.acquire('a', 2), 'ok');
  t.equal(c.acquire('b', 1), 'ok');
  const idle = c.idle();
  c.release('a', 2);
  t.notOk(await settled(idle), 'pending while a call is in flight');
  c.release('b', 1);
  t.ok(await settled(idle), 'resolved when the last one ended');
});

t.test('Frames.allAnswered resolves when every frame received is answered', async (t) => {
  const answers: ((text: string) => void)[] = [];
  const frames = new Frames({
    limits: () => ({ maxFramesInFlight: 8, maxBufferBytes: 1 << 20 }),
    start: (): Started => ({
      answer: new Promise<string>((resolve) => answers.push(resolve)),
      written: () => undefined,
    }),
    write: () => undefined,
    unsent: () => 0,
    overflow: () => undefined,
    pause: () => undefined,
    resume: () => undefined,
  });
  t.ok(await settled(frames.allAnswered()), 'at once with no frame');
  frames.received(Buffer.from('a'));
  frames.received(Buffer.from('b'));
  const answered = frames.allAnswered();
  answers[1]!('answer b');
  t.notOk(await settled(answered), 'pending while the first frame is unanswered (the second waits its turn)');
  answers[0]!('answer a');
  t.ok(await settled(answered), 'resolved once both are written');
  frames.received(Buffer.from('c'));
  const closing = frames.allAnswered();
  frames.close();
  t.ok(await settled(closing), 'a closed socket has nothing left to answer');
});
