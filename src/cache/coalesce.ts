/**
 * Coalescing: identical calls in flight at once share one upstream call. Each caller still gets
 * its own response object (ids are added by the writer), so sharing is invisible to clients.
 */
export class Coalescer<T> {
  private inFlight = new Map<string, Promise<T>>();
  joined = 0;

  run(key: string, work: () => Promise<T>, onJoin?: () => void): Promise<T> {
    const inFlight = this.inFlight;
    const existing = inFlight.get(key);
    if (existing !== undefined) {
      this.joined++;
      onJoin?.();
      return existing;
    }
    // then(ok, fail) rather than finally(): one promise less per call on the miss path.
    const p = work().then(
      (v) => {
        inFlight.delete(key);
        return v;
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
