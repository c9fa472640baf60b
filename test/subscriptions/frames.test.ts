/**
 * One socket's frames (src/subscriptions/frames.ts) with the socket and the front replaced by
 * records: answers in arrival order, reading stopped at maxFramesInFlight and at maxBufferBytes
 * held, answers waiting their turn kept as copies and counted (1013 past the cap), and at most
 * FRAMES_PER_TURN frames started per event-loop turn.
 */
import t from 'tap';
import { Frames, FRAMES_PER_TURN, type Started } from '../../src/subscriptions/frames.js';

interface Rig {
  frames: Frames;
  written: (string | Buffer)[];
  events: string[];
  /** Frames started, by their text; resolve(i, text) answers the i-th started frame. */
  started: string[];
  resolve(i: number, text: string): void;
  unsent: number;
}

/** `sync`: frames whose text starts with "sync" are answered at once with their own text. */
function rig(limits: { maxFramesInFlight: number; maxBufferBytes: number }): Rig {
  const answers: ((text: string) => void)[] = [];
  const r: Rig = {
    written: [],
    events: [],
    started: [],
    unsent: 0,
    resolve: (i, text) => answers[i]!(text),
    frames: new Frames({
      limits: () => limits,
      start: (bytes): Started => {
        const text = bytes.toString();
        r.started.push(text);
        const written = (): void => void r.events.push(`written ${text.slice(0, 20)}`);
        if (text.startsWith('sync')) {
          answers.push(() => undefined);
          return { answer: `answer ${text}`, written };
        }
        return { answer: new Promise<string>((resolve) => answers.push(resolve)), written };
      },
      write: (answer) => void r.written.push(answer),
      unsent: () => r.unsent,
      overflow: () => void r.events.push('overflow'),
      pause: () => void r.events.push('pause'),
      resume: () => void r.events.push('resume'),
    }),
  };
  return r;
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
const texts = (xs: (string | Buffer)[]): string[] => xs.map((x) => x.toString());

t.test('answers are written in arrival order; one that waits is a copy of its own', async (t) => {
  const r = rig({ maxFramesInFlight: 8, maxBufferBytes: 1 << 20 });
  r.frames.received(Buffer.from('a'));
  r.frames.received(Buffer.from('sync b'));
  r.frames.received(Buffer.from('c'));
  r.resolve(2, 'answer c');
  t.same(r.written, [], 'nothing before the first answer');
  r.resolve(0, 'answer a');
  await turn();
  t.same(texts(r.written), ['answer a', 'answer sync b', 'answer c'], 'in arrival order');
  t.type(r.written[1], Buffer, 'the answer that waited its turn is a copy (UTF-8 bytes)');
  t.equal(typeof r.written[0], 'string', 'the answer at the head is written as it came');
  t.same(
    r.events.filter((e) => e.startsWith('written')),
    ['written a', 'written sync b', 'written c'],
    'each frame learns its answer was written, in order',
  );
  t.equal(r.frames.unanswered, 0);
});

t.test('at maxFramesInFlight the socket is not read; frames read meanwhile wait and start in order', async (t) => {
  const r = rig({ maxFramesInFlight: 2, maxBufferBytes: 1 << 20 });
  r.frames.received(Buffer.from('slow'));
  r.frames.received(Buffer.from('sync 1'));
  t.same(r.events, ['pause'], 'paused once two frames are in flight');
  // Frames already read when reading stopped still arrive: they wait, not started.
  r.frames.received(Buffer.from('sync 2'));
  r.frames.received(Buffer.from('sync 3'));
  t.same(r.started, ['slow', 'sync 1'], 'only two started');
  t.equal(r.frames.unanswered, 4);
  t.ok(r.frames.isPaused);
  r.resolve(0, 'answer slow');
  await turn();
  t.same(texts(r.written), ['answer slow', 'answer sync 1', 'answer sync 2', 'answer sync 3'], 'all answered in order');
  t.same(r.started, ['slow', 'sync 1', 'sync 2', 'sync 3']);
  t.equal(r.events.filter((e) => e === 'resume').length, 1, 'read again once nothing waits');
  t.notOk(r.frames.isPaused);
});

t.test('frames worked on and answers waiting hold maxBufferBytes: the socket is not read', async (t) => {
  const r = rig({ maxFramesInFlight: 100, maxBufferBytes: 1_000 });
  r.frames.received(Buffer.from('slow'));
  r.frames.received(Buffer.from(`big ${'x'.repeat(1_000)}`));
  t.same(r.events, ['pause'], 'a frame that fills the bytes stops reading');
  r.frames.received(Buffer.from('sync next'));
  t.equal(r.started.length, 2, 'the next frame waits');
  r.resolve(1, 'answer big');
  await turn();
  t.equal(r.started.length, 3, 'its answer is small: the next frame starts');
  t.equal(r.events.at(-1), 'resume');
  r.resolve(0, 'answer slow');
  await turn();
  t.same(texts(r.written), ['answer slow', 'answer big', 'answer sync next']);
});

t.test(
  'answers waiting their turn past maxBufferBytes (with unsent data): overflow, nothing more written',
  async (t) => {
    const r = rig({ maxFramesInFlight: 100, maxBufferBytes: 1_000 });
    r.frames.received(Buffer.from('slow'));
    for (const name of ['a', 'b', 'c']) r.frames.received(Buffer.from(name));
    t.equal(r.started.length, 4, 'small frames: all started');
    // Each answer is ~600 bytes; only what already waits counts against the cap, not the answer at hand.
    r.resolve(1, `answer a ${'a'.repeat(590)}`);
    r.resolve(2, `answer b ${'b'.repeat(590)}`);
    await turn();
    t.notOk(r.events.includes('overflow'), 'two answers wait (600 bytes waited when the second came)');
    t.equal(r.events.at(-1), 'pause', 'and hold the bytes: the socket is not read');
    r.resolve(3, `answer c ${'c'.repeat(590)}`);
    await turn();
    t.ok(r.events.includes('overflow'), 'the third finds 1,200 bytes waiting: overflow');
    r.resolve(0, 'answer slow');
    r.frames.received(Buffer.from('sync late'));
    await turn();
    t.same(r.written, [], 'nothing is written after the overflow');
    t.equal(r.frames.unanswered, 0);

    const u = rig({ maxFramesInFlight: 100, maxBufferBytes: 1_000 });
    u.unsent = 1_000;
    u.frames.received(Buffer.from('slow'));
    u.frames.received(Buffer.from('sync small'));
    t.ok(u.events.includes('overflow'), 'unsent data counts with the answers waiting');
  },
);

t.test(`at most ${FRAMES_PER_TURN} frames start per event-loop turn; the rest start in later turns`, async (t) => {
  const r = rig({ maxFramesInFlight: 1_000, maxBufferBytes: 1 << 20 });
  const n = FRAMES_PER_TURN * 3 + 5;
  for (let i = 0; i < n; i++) r.frames.received(Buffer.from(`sync ${i}`));
  t.equal(r.started.length, FRAMES_PER_TURN, 'one turn');
  t.same(
    r.events.filter((e) => e === 'pause'),
    ['pause'],
    'the socket is not read meanwhile',
  );
  let turns = 1;
  while (r.started.length < n && turns < 10) {
    await turn();
    turns++;
  }
  t.equal(turns, 4, 'four turns for three and a bit turns of frames');
  await turn();
  t.same(
    texts(r.written),
    Array.from({ length: n }, (_, i) => `answer sync ${i}`),
    'every frame answered, in order',
  );
  t.equal(r.events.at(-1), 'resume', 'read again');
});
