/**
 * Byte pools for node answers as they arrive. One pool is the process's: the bytes of large answers
 * (past LARGE_ANSWER_BYTES each) being received at once, across every node and call
 * (routing.maxLargeAnswerBytes); another is made per request where a request bounds what it may hold
 * (a split eth_getLogs: routing.maxLogsResponseBytes). An exchange takes bytes as they come off the
 * socket and is cut off the moment a pool has none left, so neither bound is ever passed by more
 * than the piece being read.
 * Refuses: deciding what a refusal means for the call (classify.ts, routing/verdict.ts).
 */

/**
 * An answer is large from this many bytes on: it counts against the process's pool, and it is
 * checked piece by piece as it arrives and classified from spans rather than JSON.parse
 * (jsonrpc/check.ts). Below it, answers are what nearly every call gets and take the fast path.
 */
export const LARGE_ANSWER_BYTES = 1024 * 1024;

export class BytePool {
  private used = 0;
  private shut = false;

  constructor(private max: number) {
    if (!Number.isInteger(max) || max < 0) throw new Error(`expected a byte count, got ${max}`);
  }

  get held(): number {
    return this.used;
  }

  get limit(): number {
    return this.max;
  }

  /** A reload's new bound; bytes already held stay held and count against it. */
  resize(max: number): void {
    this.max = max;
  }

  /** No more bytes for anyone: exchanges taking from it are cut off at their next bytes. */
  close(): void {
    this.shut = true;
  }

  get closed(): boolean {
    return this.shut;
  }

  /** Takes n bytes when they fit; false (and nothing taken) when they do not. */
  take(n: number): boolean {
    if (this.shut || this.used + n > this.max) return false;
    this.used += n;
    return true;
  }

  give(n: number): void {
    this.used = Math.max(0, this.used - n);
  }
}

/** The process's pool of large answers being received (resized from routing.maxLargeAnswerBytes). */
export const largeAnswers = new BytePool(128 * 1024 * 1024);
