/**
 * Coalescing: identical calls in flight at once share one upstream call. Each caller still gets
 * its own response object (ids are added by the writer), so sharing is invisible to clients.
 */

/**
 * A call in flight that others may join, settled by the one caller that sends it (claim/settle).
 * Its promise is made only when someone joins: most calls are never joined, and a promise per call
 * is a measurable share of a batch's cost.
 */
export class Shared<T> {
  private promise: Promise<T> | undefined;
  private resolve: ((v: T) => void) | undefined;
  private settled = false;
  private value: T | undefined;

  joined(): Promise<T> {
    if (this.settled) return Promise.resolve(this.value as T);
    return (this.promise ??= new Promise<T>((resolve) => {
      this.resolve = resolve;
    }));
  }

  constructor(
    /** The table it was claimed in: once forget() replaced that table, settling leaves the new one alone. */
    readonly claimedIn: Map<string, unknown>,
  ) {}

  settle(value: T): void {
    if (this.settled) return;
    this.settled = true;
    this.value = value;
    this.resolve?.(value);
  }
}

export class Coalescer<T> {
  private inFlight = new Map<string, Shared<T>>();
  joined = 0;

  /**
   * Sharing for a caller that sends the call itself: the promise of the call in flight under `key`
   * (joined), or a Shared the caller now owns and must end with `settle`.
   */
  claim(key: string, onJoin?: () => void): Promise<T> | Shared<T> {
    const existing = this.inFlight.get(key);
    if (existing !== undefined) {
      this.joined++;
      onJoin?.();
      return existing.joined();
    }
    const shared = new Shared<T>(this.inFlight);
    this.inFlight.set(key, shared);
    return shared;
  }

  /** Ends a claim: no call joins it from now on, and those that did get `value`. */
  settle(key: string, shared: Shared<T>, value: T): void {
    // Within one table the key is the claim's until it is settled (identical calls join it, never
    // replace it); after a reorg (forget) it may belong to a newer call in the new table, or to nothing.
    if (shared.claimedIn === this.inFlight) this.inFlight.delete(key);
    shared.settle(value);
  }

  /** Calls in flight keep their callers, but no call made from now on joins them (a reorg). */
  forget(): void {
    this.inFlight = new Map();
  }

  get size(): number {
    return this.inFlight.size;
  }
}
