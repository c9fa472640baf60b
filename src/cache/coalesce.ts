/**
 * Coalescing: identical calls in flight at once share one upstream call. Each caller still gets
 * its own response object (ids are added by the writer), so sharing is invisible to clients.
 */
export class Coalescer<T> {
  private readonly inFlight = new Map<string, Promise<T>>();
  joined = 0;

  run(key: string, work: () => Promise<T>, onJoin?: () => void): Promise<T> {
    const existing = this.inFlight.get(key);
    if (existing !== undefined) {
      this.joined++;
      onJoin?.();
      return existing;
    }
    // then(ok, fail) rather than finally(): one promise less per call on the miss path.
    const p = work().then(
      (v) => {
        this.inFlight.delete(key);
        return v;
      },
      (err: unknown) => {
        this.inFlight.delete(key);
        throw err;
      },
    );
    this.inFlight.set(key, p);
    return p;
  }

  get size(): number {
    return this.inFlight.size;
  }
}
