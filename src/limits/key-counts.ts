/**
 * Counts held per key against a cap: what every per-IP bound needs (keys are limitKey()s, an IPv4
 * address or an IPv6 /64). Used for subscriptions per IP (subscriptions.maxPerIp: without it one
 * address holds maxPerConnection x maxConnectionsPerIp subscriptions, and every `logs` one
 * multiplies the work of each block).
 * Owns: the counts. Refuses: what a refusal looks like (its users').
 */
export class KeyCounts {
  private readonly held = new Map<string, number>();

  /** One more for `key`, unless it already holds `max`. */
  take(key: string, max: number): boolean {
    const n = this.held.get(key) ?? 0;
    if (n >= max) return false;
    this.held.set(key, n + 1);
    return true;
  }

  give(key: string): void {
    const n = (this.held.get(key) ?? 1) - 1;
    if (n <= 0) this.held.delete(key);
    else this.held.set(key, n);
  }

  /** Keys holding at least one. */
  get size(): number {
    return this.held.size;
  }
}
