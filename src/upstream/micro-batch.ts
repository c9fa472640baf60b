/**
 * The micro-batcher: the calls to one node made in the same event-loop turn, queued and sent
 * together as one JSON-RPC batch (up to maxBatchSize calls an exchange), and the exchange of a call
 * that leaves alone. Owns the queue, the exchange of each batch, and the deadline sweep.
 *
 * Deadlines: in a batch whose members' deadlines differ, one timer per exchange fires at the
 * earliest deadline still pending: a call batched with slower or longer-deadline calls is answered
 * with a `timeout` verdict when its own deadline passes, and the exchange carries on for the others
 * until the last member's deadline. A call sent alone is timed by its exchange (exchange.ts).
 *
 * Refuses: which calls may join a batch, the counting of calls and what an answer teaches about the
 * node (figures, breaker, hold-off judgement of expensive and held calls): those are the client's
 * (client.ts), which hands in `finish`. Calls sent together by their caller (callMany) are not queued here.
 */
import type { Dispatcher } from 'undici';
import type { BytePool } from './answer-bytes.js';
import { classifyBatch, classifyHttp, tooLarge } from './answers.js';
import type { Cancel } from './cancel.js';
import { classifyTransport, type Verdict } from './classify.js';
import { firstTraceparent, postJson, tracedTarget } from './exchange.js';
import type { HoldOff } from './holdoff.js';
import { batchText, requestText } from './request-text.js';
import type { Identity } from '../methods/identity.js';

export interface CallTiming {
  verdict: Verdict;
  ms: number;
}

/** A call made and counted by the client, waiting for its answer. */
export interface Pending {
  id: number;
  method: string;
  paramsJson: string;
  passive: boolean;
  expensive: boolean;
  held: boolean;
  started: number;
  /** performance.now() by which this call is answered, whatever its batch does. */
  deadline: number;
  /** What its answer must carry (methods/identity.ts); null: nothing checked. */
  identity: Identity | null;
  done: boolean;
  resolve: (t: CallTiming) => void;
  budget?: BytePool;
  traceparent?: string;
  cancel?: Cancel;
}

/** A batch answer that left a call out. */
export const MISSING: Verdict = { kind: 'retry', reason: 'bad_body', health: true };
const TIMED_OUT: Verdict = { kind: 'retry', reason: 'timeout', health: true };

/** What the batcher sends with, and to whom it gives each call's verdict: the client's. */
export interface BatcherDeps {
  dispatcher: Dispatcher;
  /** The held lane (heldConnections connections): held calls only. */
  heldDispatcher: Dispatcher;
  target: { origin: string; path: string; headers: Record<string, string> };
  pool: BytePool;
  holdOff: HoldOff;
  maxBatchSize: number;
  /** Answers a call (once: a call already done is left alone). */
  finish: (p: Pending, answer: Verdict) => void;
}

export class MicroBatcher {
  private queue: Pending[] = [];

  constructor(private readonly deps: BatcherDeps) {}

  /** Queues a call to leave with the others made in this event-loop turn. */
  add(p: Pending): void {
    this.queue.push(p);
    if (this.queue.length === 1) setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    let queue = this.queue;
    this.queue = [];
    // Calls cancelled while queued were answered already: they do not leave.
    if (queue.some(isDone)) queue = queue.filter((p) => !p.done);
    const size = this.deps.maxBatchSize;
    for (let i = 0; i < queue.length; i += size) void this.send(queue.slice(i, i + size));
  };

  /** Sends `batch` now in one exchange (a batch of one is a plain call) and answers each member. */
  async send(batch: Pending[]): Promise<void> {
    const d = this.deps;
    const single = batch.length === 1;
    const body = single ? requestText(batch[0]!.id, batch[0]!) : batchText(batch, (k) => batch[k]!.id);
    // The exchange lasts until the last member's deadline; earlier ones are answered by the sweep.
    const now = performance.now();
    let last = 0;
    for (const p of batch) if (!p.done) last = Math.max(last, p.deadline);
    const sweep = single ? null : this.sweepDeadlines(batch, last);
    let verdicts: Map<number, Verdict> | Verdict | null;
    try {
      const bytes = {
        pool: d.pool,
        budget: single ? batch[0]!.budget : undefined,
        cancel: single ? batch[0]!.cancel : undefined,
      };
      const { status, text, large, retryAfter } = await postJson(
        single && batch[0]!.held ? d.heldDispatcher : d.dispatcher,
        tracedTarget(d.target, firstTraceparent(batch)),
        body,
        Math.max(1, last - now),
        bytes,
      );
      // A single call's answer must carry the id it was sent with: another's is not its answer.
      const read = single ? classifyHttp(status, text, batch[0]!.id, large) : classifyBatch(status, text, large);
      verdicts = d.holdOff.read(read, retryAfter);
    } catch (err) {
      verdicts = classifyTransport(err);
    }
    if (sweep !== null) clearTimeout(sweep.timer);
    if (verdicts === null || (!single && tooLarge(verdicts))) {
      // The node does not take batches (or not this one), or the batch's answer together is over
      // maxResponseBytes or the pool of large answers: the calls still waiting go one by one, each
      // judged by its own answer.
      for (const p of batch) if (!p.done) void this.send([p]);
      return;
    }
    for (const p of batch) {
      const v = verdicts instanceof Map ? (verdicts.get(p.id) ?? MISSING) : verdicts;
      d.finish(p, v);
    }
  }

  /**
   * Answers each member of a batch with `timeout` at its own deadline, when that comes before the
   * last member's (which the exchange's own time limit covers): one timer, re-armed for the next
   * earliest deadline still pending.
   */
  private sweepDeadlines(batch: Pending[], last: number): { timer: NodeJS.Timeout | undefined } {
    const sweep: { timer: NodeJS.Timeout | undefined } = { timer: undefined };
    const finish = this.deps.finish;
    const arm = (): void => {
      const now = performance.now();
      let next = last;
      for (const p of batch) {
        if (p.done) continue;
        if (p.deadline <= now) finish(p, TIMED_OUT);
        else if (p.deadline < next) next = p.deadline;
      }
      // As an exchange's own time limit (exchange.ts): an answer that arrived while the event loop
      // was held is read before a member is called timed out.
      sweep.timer = next < last ? setTimeout(setImmediate, Math.max(1, next - now), arm) : undefined;
    };
    arm();
    return sweep;
  }
}

function isDone(p: Pending): boolean {
  return p.done;
}
