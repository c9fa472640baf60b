/**
 * One HTTP exchange with a node: POST a JSON body, read the whole answer as text, within a time
 * limit. Built on undici's dispatch() with a minimal handler: request() builds a Readable stream,
 * its handler and an abort signal's listeners for every exchange, which measured as a large share
 * of the miss path. Transport failures reject with undici's own errors (classify.ts reads their
 * codes); the time limit rejects with an error named TimeoutError.
 *
 * Bytes are bounded as they arrive (answer-bytes.ts): a large answer takes from the process's pool
 * of large answers while it is received, and an exchange made for a request with a byte budget
 * takes every byte from that budget; either running out cuts the exchange off at once (a declared
 * Content-Length is taken before the first byte). A large answer is decoded and checked piece by
 * piece and kept as its bytes (large-answer.ts), so no single turn of the event loop reads or
 * copies the whole of it.
 */
import type { Dispatcher } from 'undici';
import { LARGE_ANSWER_BYTES, type BytePool } from './answer-bytes.js';
import { cancelledError, type Cancel } from './cancel.js';
import { LargeAnswer, type LargeBody } from './large-answer.js';

export interface Answer {
  status: number;
  text: string;
  /**
   * Set for a large answer, checked as it arrived (large-answer.ts): its bytes and what they hold,
   * or null when it is not JSON. The text is then empty. Absent for an answer below the threshold.
   */
  large?: LargeBody | null;
  /** The answer's Retry-After header, when it has one (a node holding Switchyard off: holdoff.ts). */
  retryAfter?: string;
}

/** What bounds an exchange's bytes: the process's pool of large answers, and a request's budget. */
export interface ExchangeBytes {
  pool?: BytePool;
  budget?: BytePool;
  /** The call's cancel handle (cancel.ts), for an exchange of one cancellable call: cancelling cuts it off. */
  cancel?: Cancel;
}

/** Over a request's budget: read by classify.ts as the answer being too large, like undici's own cap. */
function overBudget(): Error {
  return Object.assign(new Error('answer over the request byte budget'), { code: 'UND_ERR_RES_EXCEEDED_MAX_SIZE' });
}

/** The process's pool of large answers is full. */
function poolFull(): Error {
  return Object.assign(new Error('too many large answers being received'), { code: 'SWITCHYARD_ANSWERS_BUSY' });
}

/** Bytes taken from one pool for one exchange, given back as a whole. */
class Taken {
  n = 0;
  constructor(readonly pool: BytePool | undefined) {}

  /** Holds at least `size` bytes in all; false when the pool has not that many left. */
  reach(size: number): boolean {
    if (this.pool === undefined) return true;
    if (this.pool.closed) return false;
    if (size <= this.n) return true;
    if (!this.pool.take(size - this.n)) return false;
    this.n = size;
    return true;
  }

  release(): void {
    this.pool?.give(this.n);
    this.n = 0;
  }
}

/** A timer this late means the event loop was held (a timer is otherwise late by a few ms). */
const LOOP_HELD_MS = 50;

type Controller = Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestStart']>>[0];

export function timeoutError(): Error {
  const err = new Error('upstream call timed out');
  err.name = 'TimeoutError';
  return err;
}

/**
 * One exchange's state and its undici handler: the answer's bytes as they arrive, the time limit,
 * and the bytes held from the pool and the budget. One object per exchange rather than a closure
 * per step, since every miss makes one.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private settled = false;
  private controller: Controller | null = null;
  /** Why it was cut off (a timeout, a cancel), for a request still queued for a connection. */
  private cutOff: Error | null = null;
  private status = 0;
  private retryAfter: string | undefined = undefined;
  private first: Buffer | undefined = undefined;
  private chunks: Buffer[] | undefined = undefined;
  private size = 0;
  private large: LargeAnswer | null = null;
  private readonly pooled: Taken;
  private readonly budgeted: Taken;
  private timer: NodeJS.Timeout;
  /** When the time limit runs out (performance.now()); moved once when the loop was held (expired). */
  private due: number;
  private extended = false;

  constructor(
    private readonly resolve: (answer: Answer) => void,
    private readonly reject: (err: Error) => void,
    private readonly limit: number,
    bytes: ExchangeBytes,
  ) {
    this.pooled = new Taken(bytes.pool);
    this.budgeted = new Taken(bytes.budget);
    this.due = performance.now() + limit;
    this.timer = setTimeout(Exchange.expire, limit, this);
  }

  /**
   * The time ran out, perhaps while the event loop was held (a large answer being checked, a
   * client's long answer being written): what the node sent meanwhile waits unread in the socket,
   * and a timeout then would blame the node for the loop's stall (a probe marking it late or down,
   * a routed call counting against its breaker). What has arrived is read first, in this turn's
   * I/O. And when the timer fired late, the loop was held for that long, perhaps before the
   * request was even written: the node gets that time again, once (at most the limit again).
   */
  private static expire(x: Exchange): void {
    setImmediate(Exchange.expired, x);
  }

  private static expired(x: Exchange): void {
    if (x.settled) return;
    const late = performance.now() - x.due;
    if (!x.extended && late > LOOP_HELD_MS) {
      x.extended = true;
      const more = Math.min(late, x.limit);
      x.due += more;
      x.timer = setTimeout(Exchange.expire, more, x);
      return;
    }
    x.cut(timeoutError());
  }

  /** Resolves or rejects once; whatever comes after (an abort's own error) is ignored. */
  done(err: Error | null, answer?: Answer): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    // The pool counts answers being received; a request's budget keeps what it was answered.
    this.pooled.release();
    if (err !== null || answer?.large === null) this.budgeted.release();
    this.large?.cancel();
    this.large = null;
    if (err !== null) this.reject(err);
    else this.resolve(answer!);
  }

  cut(err: Error): void {
    if (this.settled) return;
    this.cutOff = err;
    this.controller?.abort(err);
    this.done(err);
  }

  /** Holds `n` bytes of answer in the budget and, for a large answer, the pool; cuts the exchange off when either is out. */
  private hold(n: number): boolean {
    if (!this.budgeted.reach(n)) this.cut(overBudget());
    else if (n > LARGE_ANSWER_BYTES && !this.pooled.reach(n)) this.cut(poolFull());
    else return true;
    return false;
  }

  /** Found not JSON: settled first, as the abort may report an error of its own at once. */
  private notJson(): void {
    this.done(null, { status: this.status, text: '', large: null });
    this.controller?.abort(new Error('answer is not JSON'));
  }

  onRequestStart(c: Controller): void {
    this.controller = c;
    // Still queued for a connection when the time ran out or the call was cancelled: never send it.
    if (this.cutOff !== null) c.abort(this.cutOff);
  }

  onResponseStart(_c: Controller, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    this.status = statusCode;
    const retryAfter = headers['retry-after'];
    if (retryAfter !== undefined) this.retryAfter = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
    // A declared length is taken before the first byte: refused at once rather than half read.
    const declared = Number(headers['content-length']);
    if (Number.isSafeInteger(declared)) this.hold(declared);
  }

  onResponseData(_c: Controller, chunk: Buffer): void {
    if (this.settled) return;
    this.size += chunk.length;
    if (!this.hold(this.size)) return;
    if (this.large !== null) return this.large.push(chunk);
    if (this.first === undefined) this.first = chunk;
    else (this.chunks ??= [this.first]).push(chunk);
    if (this.size <= LARGE_ANSWER_BYTES) return;
    this.large = new LargeAnswer(this.chunks ?? [this.first], this.size, (large) => this.checked(large));
    this.first = this.chunks = undefined;
  }

  onResponseEnd(): void {
    if (this.settled) return;
    const status = this.status;
    if (this.large !== null) {
      // The node has answered in time: checking what it sent is Switchyard's own work, not its.
      clearTimeout(this.timer);
      return this.large.end();
    }
    const { first, chunks } = this;
    const buf = first === undefined ? undefined : chunks === undefined ? first : Buffer.concat(chunks, this.size);
    this.done(null, this.answer({ status, text: buf === undefined ? '' : buf.toString('utf8') }));
  }

  /** A large answer, checked: read, or found not JSON (the moment it is, not after its last byte). */
  private checked(large: LargeBody | null): void {
    if (this.settled) return;
    if (large === null) this.notJson();
    else this.done(null, this.answer({ status: this.status, text: '', large }));
  }

  /** The answer with its Retry-After, when it had one (most answers have none: no key then). */
  private answer(a: Answer): Answer {
    if (this.retryAfter !== undefined) a.retryAfter = this.retryAfter;
    return a;
  }

  onResponseError(_c: Controller, err: Error): void {
    this.done(err);
  }
}

/** Where an exchange goes. */
export interface Target {
  origin: string;
  path: string;
  headers: Record<string, string>;
}

/**
 * `target` with a W3C traceparent (tracing/) when the exchange carries a traced call. One exchange
 * carries one traceparent: a micro-batch of several traced requests' calls, the first traced call's.
 */
export function tracedTarget(target: Target, traceparent: string | undefined): Target {
  return traceparent === undefined ? target : { ...target, headers: { ...target.headers, traceparent } };
}

/** The first traced call's traceparent: the one an exchange of several carries. */
export function firstTraceparent(calls: readonly { traceparent?: string }[]): string | undefined {
  for (const c of calls) if (c.traceparent !== undefined) return c.traceparent;
  return undefined;
}

export function postJson(
  dispatcher: Dispatcher,
  target: Target,
  body: string,
  timeoutMs: number,
  bytes: ExchangeBytes = {},
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const exchange = new Exchange(resolve, reject, timeoutMs, bytes);
    bytes.cancel?.hold(() => exchange.cut(cancelledError()));
    try {
      dispatcher.dispatch(
        { origin: target.origin, path: target.path, method: 'POST', headers: target.headers, body },
        exchange,
      );
    } catch (err) {
      exchange.done(err as Error);
    }
  });
}
