/**
 * Coalescing: identical calls in flight at once share one upstream call. Each caller still gets
 * its own response object (ids are added by the writer), so sharing is invisible to clients.
 */
export class Coalescer<T> {
  private inFlight = new Map<string, Promise<T>>();
  joined = 0;

  /**
   * `work` runs once per key in flight; `then` turns its value into what every caller gets (it runs
   * once, in the same step that ends the sharing: one promise per call fewer on the miss path).
   */
  run<A>(key: string, work: () => Promise<A>, then: (value: A) => T, onJoin?: () => void): Promise<T> {
    const inFlight = this.inFlight;
    const existing = inFlight.get(key);
    if (existing !== undefined) {
      this.joined++;
      onJoin?.();
      return existing;
    }
    const p = work().then(
      (v) => {
        inFlight.delete(key);
        return then(v);
      },
      (err: unknown) => {
        inFlight.delete(key);
        throw err;
      },
    );
    inFlight.set(key, p);
    return p;
  }

  /** Calls in flight keep their callers, but no call made from now on joins them (a reorg). */
  forget(): void {
    this.inFlight = new Map();
  }

  get size(): number {
    return this.inFlight.size;
  }
}
