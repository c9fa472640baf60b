/**
 * One socket's frames, from the bytes read to the answers written. Frames are worked on
 * concurrently and answered in the order they arrived (as requests on one HTTP connection are).
 * What one socket may hold is bounded, so a flood costs only its sender:
 *   - frames in flight (started, answer not yet written): at maxFramesInFlight, or once the frames
 *     being worked on and the answers waiting their turn hold maxBufferBytes, the socket stops
 *     being read until answers are written; TCP then holds the client back (Node's HTTP server
 *     stops reading pipelined requests the same way);
 *   - answers waiting their turn: each a copy of its own (never a view of its frame or of a node's
 *     answer), counted with the unsent bytes against maxBufferBytes; a client past it is closed
 *     (1013), as a slow reader is;
 *   - frames started per event-loop turn: FRAMES_PER_TURN; the rest wait for the next turn, so
 *     other clients are served between one socket's turns.
 * Frames already read when reading stops (what the socket had buffered: a read or two, and at most
 * one frame completed by them) wait as they arrived, not started.
 * Owns: order and bounds of one socket's answers. Refuses: JSON-RPC (server/front.ts), the socket.
 */

/**
 * Frames one socket may start in one event-loop turn. A small frame costs ~10-30 us to work on,
 * so one socket takes about a millisecond of a turn, and a flood reaches ~30,000 frames/s when
 * nobody else is served: the socket is read again as soon as its frames are started.
 */
export const FRAMES_PER_TURN = 32;

const EMPTY = Buffer.alloc(0);

/** The work on one frame: its answer ('' for none) and what to do once it is written. */
export interface Started {
  answer: string | Promise<string>;
  /** Called once the answer has been written, or will never be (the socket closed). */
  written(): void;
}

export interface FramesDeps {
  limits(): { maxFramesInFlight: number; maxBufferBytes: number };
  start(frame: Buffer): Started;
  /** Writes one answer (a string, or the UTF-8 copy of an answer that waited its turn). */
  write(answer: string | Buffer): void;
  /** Bytes written and not yet taken by the client. */
  unsent(): number;
  /** The client holds more than maxBufferBytes of answers: close it (1013). */
  overflow(): void;
  pause(): void;
  resume(): void;
}

interface InFlight {
  /** The frame's bytes while it is worked on; 0 once answered. */
  size: number;
  /** The answer once it is ready: a copy of its own when it waits for its turn. */
  answer: string | Buffer | null;
  written: () => void;
}

export class Frames {
  /** Started and not yet written, in arrival order. */
  private readonly inFlight: InFlight[] = [];
  /** Read while reading was stopped (or other frames waited): not started yet, from waitingAt on. */
  private waiting: Buffer[] = [];
  private waitingAt = 0;
  /** Bytes of frames being worked on plus answers waiting their turn. */
  private held = 0;
  /** Bytes of answers waiting their turn. */
  private answersWaiting = 0;
  private startedThisTurn = 0;
  private paused = false;
  private pumping = false;
  private closed = false;
  private answerWaiters: (() => void)[] = [];

  constructor(private readonly deps: FramesDeps) {}

  /** Frames received and not yet answered (started or waiting to be). */
  get unanswered(): number {
    return this.inFlight.length + this.waiting.length - this.waitingAt;
  }

  /** Resolves once every frame received so far is answered (or the socket closed): shutdown waits on it. */
  async allAnswered(): Promise<void> {
    while (this.unanswered > 0) await new Promise<void>((resolve) => this.answerWaiters.push(resolve));
  }

  /** Wakes answered() waiters once nothing is unanswered; they check again themselves. */
  private wake(): void {
    if (this.answerWaiters.length > 0 && this.unanswered === 0) for (const w of this.answerWaiters.splice(0)) w();
  }

  /** Reading is stopped by this room (its pongs may sit unread). */
  get isPaused(): boolean {
    return this.paused;
  }

  /** Bytes of answers waiting their turn, for the unsent-data cap of notifications. */
  get waitingBytes(): number {
    return this.answersWaiting;
  }

  received(frame: Buffer): void {
    if (this.closed) return;
    if (this.waitingAt < this.waiting.length || !this.mayStart()) {
      this.waiting.push(frame);
      this.stopReading();
      return;
    }
    this.begin(frame);
    if (!this.mayStart()) this.stopReading();
  }

  /** The socket is gone: nothing more is started or written; frames in flight finish unseen. */
  close(): void {
    this.closed = true;
    this.waiting = [];
    this.waitingAt = 0;
    for (const f of this.inFlight.splice(0)) f.written();
    this.wake();
  }

  private mayStart(): boolean {
    const { maxFramesInFlight, maxBufferBytes } = this.deps.limits();
    return (
      this.startedThisTurn < FRAMES_PER_TURN && this.inFlight.length < maxFramesInFlight && this.held < maxBufferBytes
    );
  }

  private begin(frame: Buffer): void {
    if (this.startedThisTurn++ === 0) setImmediate(() => this.nextTurn());
    const { answer, written } = this.deps.start(frame);
    if (typeof answer === 'string' && this.inFlight.length === 0) {
      if (answer !== '') this.deps.write(answer);
      written();
      return;
    }
    const f: InFlight = { size: frame.length, answer: null, written };
    this.inFlight.push(f);
    this.held += f.size;
    if (typeof answer === 'string') this.answered(f, answer);
    else void answer.then((text) => this.answered(f, text));
  }

  private answered(f: InFlight, text: string): void {
    if (this.closed) return;
    this.held -= f.size;
    f.size = 0;
    if (f !== this.inFlight[0]) {
      // Only what already waits counts, not the answer at hand: one answer larger than the cap
      // still reaches a client that keeps up, as with unsent data.
      if (this.answersWaiting + this.deps.unsent() >= this.deps.limits().maxBufferBytes) {
        this.overflow();
        return;
      }
      // A copy of its own: the text may be a view of the frame or of a node's whole answer.
      const copy = Buffer.from(text);
      f.answer = copy;
      this.answersWaiting += copy.length;
      this.held += copy.length;
      if (!this.mayStart()) this.stopReading();
      return;
    }
    f.answer = text;
    this.flush();
    this.pump();
  }

  /** Writes the answers that are ready from the head of the line. */
  private flush(): void {
    while (!this.closed && this.inFlight.length > 0 && this.inFlight[0]!.answer !== null) {
      const f = this.inFlight.shift()!;
      const answer = f.answer!;
      if (typeof answer !== 'string') {
        this.answersWaiting -= answer.length;
        this.held -= answer.length;
      }
      if (answer.length > 0) this.deps.write(answer);
      f.written();
    }
    this.wake();
  }

  private overflow(): void {
    // The socket is closed first: frames closed here release their subscriptions, and what those
    // held must not be written to a client that is being cut.
    this.deps.overflow();
    this.close();
  }

  private nextTurn(): void {
    this.startedThisTurn = 0;
    this.pump();
  }

  /** Starts frames that waited while the bounds allow, and reads again once none waits. */
  private pump(): void {
    if (this.pumping || this.closed) return;
    this.pumping = true;
    try {
      while (this.waitingAt < this.waiting.length && this.mayStart()) {
        const frame = this.waiting[this.waitingAt]!;
        this.waiting[this.waitingAt++] = EMPTY;
        this.begin(frame);
      }
      if (this.waitingAt === this.waiting.length) {
        this.waiting = [];
        this.waitingAt = 0;
      }
    } finally {
      this.pumping = false;
    }
    this.wake();
    if (this.paused && !this.closed && this.waiting.length === 0 && this.mayStart()) {
      this.paused = false;
      this.deps.resume();
    }
  }

  private stopReading(): void {
    if (this.paused) return;
    this.paused = true;
    this.deps.pause();
  }
}
