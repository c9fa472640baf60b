/**
 * A call's cancel handle (routing/hedge.ts): the caller that no longer needs an answer cancels,
 * and whoever holds the call now (the micro-batcher's queue, an exchange of its own, or a batch
 * exchange carrying other calls too: client.ts) does what that means: drop it from the queue, cut
 * the exchange off (undici's abort, so the connection is not left busy), or answer it at once while
 * the batch goes on for the others. One small object per call that may be cancelled, no listener list.
 */
export class Cancel {
  cancelled = false;
  /** A call was handed this handle: some request to a node was made with it. */
  used = false;
  private hook: (() => void) | null = null;

  /** What cancelling does from now on: the last holder's step replaces the one before. */
  hold(hook: () => void): void {
    this.used = true;
    if (this.cancelled) hook();
    else this.hook = hook;
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    const hook = this.hook;
    this.hook = null;
    hook?.();
  }
}

/** The error an exchange is cut off with when its call was cancelled (classify.ts reads its code). */
export function cancelledError(): Error {
  return Object.assign(new Error('call cancelled'), { code: 'SWITCHYARD_CANCELLED' });
}
