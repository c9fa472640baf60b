/**
 * Per-method attempt timeouts (routing.methodTimeoutsMs): how long one node may take to answer one
 * call of a method, by exact name or `prefix*` (an exact name wins, then the longest prefix), else
 * routing.upstreamTimeoutMs. A trace may be given longer than a balance read; an expensive call
 * that runs out of it is answered as failed, never sent to another node (failover.ts).
 * Refuses: the call's whole deadline (server.requestTimeoutMs, failover.ts caps each attempt by it).
 */
export class MethodTimeouts {
  private readonly exact = new Map<string, number>();
  /** Longest prefix first. */
  private readonly prefixes: [prefix: string, ms: number][] = [];

  constructor(
    readonly fallbackMs: number,
    byMethod: Readonly<Record<string, number>>,
  ) {
    for (const [m, ms] of Object.entries(byMethod)) {
      if (m.endsWith('*')) this.prefixes.push([m.slice(0, -1), ms]);
      else this.exact.set(m, ms);
    }
    this.prefixes.sort((a, b) => b[0].length - a[0].length);
  }

  /** The attempt timeout for `method`, in ms. */
  of(method: string): number {
    const ms = this.exact.get(method);
    if (ms !== undefined) return ms;
    for (const [prefix, v] of this.prefixes) if (method.startsWith(prefix)) return v;
    return this.fallbackMs;
  }
}
