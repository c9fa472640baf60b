/**
 * Concurrency guards: calls being worked on, globally and per client IP. Beyond either bound a
 * request is shed at once (never queued), so overload costs a client a fast error, not memory.
 */

/** 'ok': the slots are taken; otherwise the bound that refused them. */
export type SlotGrant = 'ok' | 'overloaded' | 'ip';

export class Concurrency {
  private total = 0;
  private readonly perIp = new Map<string, number>();
  /** Calls shed since start, by the bound that refused them. */
  private readonly shed = { overloaded: 0, ip: 0 };
  /** Waiting for the last call to end (idle()). */
  private idleWaiters: (() => void)[] = [];

  constructor(
    private maxTotal: number,
    private maxPerIp: number,
  ) {}

  /** A reloaded configuration's bounds (server.maxInFlight, server.maxInFlightPerIp): the next acquire uses them. */
  apply(server: { maxInFlight: number; maxInFlightPerIp: number }): void {
    this.maxTotal = server.maxInFlight;
    this.maxPerIp = server.maxInFlightPerIp;
  }

  get inFlight(): number {
    return this.total;
  }

  /** Resolves once no call is in flight (shutdown waits on it). */
  async idle(): Promise<void> {
    while (this.total > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** Figures for /status: calls in flight against both bounds, clients holding slots, calls shed. */
  stats(): {
    inFlight: number;
    maxInFlight: number;
    maxPerIp: number;
    clients: number;
    shed: { overloaded: number; ip: number };
  } {
    return {
      inFlight: this.total,
      maxInFlight: this.maxTotal,
      maxPerIp: this.maxPerIp,
      clients: this.perIp.size,
      shed: { ...this.shed },
    };
  }

  /** Takes `n` slots for `ip`, or says which bound refused them (and takes nothing). */
  acquire(ip: string, n: number): SlotGrant {
    if (this.total + n > this.maxTotal) {
      this.shed.overloaded += n;
      return 'overloaded';
    }
    const mine = this.perIp.get(ip) ?? 0;
    if (mine + n > this.maxPerIp) {
      this.shed.ip += n;
      return 'ip';
    }
    this.total += n;
    this.perIp.set(ip, mine + n);
    return 'ok';
  }

  release(ip: string, n: number): void {
    this.total -= n;
    if (this.total === 0 && this.idleWaiters.length > 0) for (const wake of this.idleWaiters.splice(0)) wake();
    const left = (this.perIp.get(ip) ?? n) - n;
    if (left <= 0) this.perIp.delete(ip);
    else this.perIp.set(ip, left);
  }
}
