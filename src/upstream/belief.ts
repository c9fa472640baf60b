/**
 * Which head the fleet believes (SPEC 4.1). A node's head is its claim, not a fact: one broken or
 * hostile node must not move the head every `latest` read is pinned to.
 * Owns: the last confirmed head (the highest two nodes have reached, or the only node's in a fleet
 * of one), the chain's pace, and the verdict on a head no other node has reached yet.
 * Refuses: node state and events (fleet.ts), eth_blockNumber's never-backwards rule (fleet.ts).
 *
 * A head is believed when a second node has reached it, or when the chain can have reached it
 * since the last confirmed head: within `slack` blocks plus twice the chain's average pace for the
 * time since (and one poll interval, as two nodes' heads are read up to a poll apart). A node
 * claiming more is not believed until another node confirms it or time makes it possible.
 */

export interface BeliefSettings {
  slackBlocks: number;
  headPollMs: number;
}

/** A height the fleet head rose to, when, and the largest single rise among those it stands for. */
interface Rise {
  head: number;
  at: number;
  leap: number;
}

/** Rises kept between the last confirmed head and the believed one; older ones are thinned past it. */
const MAX_RISES = 1024;

export class HeadBelief {
  /** The highest head two nodes have reached, and when the chain reached it (routing clock). */
  private confirmed = { head: -1, at: 0 };
  /** The first confirmed head: with `confirmed`, the chain's average pace. */
  private first = { head: -1, at: 0 };
  /** The fleet head's rises above `confirmed`, oldest first: when the chain reached a height a second node confirms later. */
  private rises: Rise[] = [];

  constructor(
    private readonly settings: () => BeliefSettings,
    private readonly now: () => number,
  ) {}

  /** The highest head two nodes have reached (-1 before any). */
  get confirmedHead(): number {
    return this.confirmed.head;
  }

  /**
   * The believed head among `heads` (the counting nodes' heads, highest first); `alone`: the fleet
   * has one node configured, whose head is the chain's. `current`: the head believed until now,
   * kept when the only node left claims a head beyond reach. -1: none.
   */
  judge(heads: readonly number[], alone: boolean, current: number): number {
    if (heads.length === 0) return -1;
    if (alone) {
      this.confirm(heads[0]!);
      return heads[0]!;
    }
    if (heads.length >= 2) this.confirm(heads[1]!);
    const bound = Math.max(heads[1] ?? -1, this.reach());
    for (const h of heads) if (h <= bound) return h;
    // One node, beyond reach: believed only when no head was ever confirmed (the first head seen,
    // no node can say otherwise); otherwise the head believed until now stays.
    return this.confirmed.head < 0 ? heads[0]! : current;
  }

  /** The highest head the chain can have reached by now, as far as confirmed heads tell; -1 before any. */
  reach(): number {
    const t = this.confirmed;
    if (t.head < 0) return -1;
    const { slackBlocks, headPollMs } = this.settings();
    return t.head + slackBlocks + 2 * this.pace() * ((this.now() - t.at + headPollMs) / 1000);
  }

  /** Blocks per second, averaged since the first confirmed head; a block a second until 10 s of it are known. */
  private pace(): number {
    const span = (this.confirmed.at - this.first.at) / 1000;
    return span >= 10 ? Math.max(0, this.confirmed.head - this.first.head) / span : 1;
  }

  /** The fleet head rose from `from` to `to`. */
  rose(from: number, to: number): void {
    this.rises.push({ head: to, at: this.now(), leap: from < 0 ? Number.POSITIVE_INFINITY : to - from });
    if (this.rises.length > MAX_RISES) this.thin();
  }

  /** The fleet head fell to `to` (a reorg, a lie given up): rises above it were never the chain's. */
  fell(to: number): void {
    while (this.rises.length > 0 && this.rises[this.rises.length - 1]!.head > to) this.rises.pop();
  }

  private confirm(c: number): void {
    if (c <= this.confirmed.head) return;
    this.confirmed = { head: c, at: this.reachedAt(c) };
    if (this.first.head < 0) this.first = this.confirmed;
    let k = 0;
    while (k < this.rises.length && this.rises[k]!.head < c) k++;
    if (k > 0) this.rises.splice(0, k);
  }

  /**
   * When the chain reached height c, as the fleet head's rises tell it: a second node reaching c
   * now confirms a block the fleet head may have stood on for a while (a node back from an outage
   * catching up with the one that kept going). Only small steps count: a leap past c is a claim,
   * not evidence of when c was reached.
   */
  private reachedAt(c: number): number {
    const slack = this.settings().slackBlocks;
    // The confirmed head is where the rises start from.
    let prev: { head: number; at: number } | undefined = this.confirmed.head >= 0 ? this.confirmed : undefined;
    for (const r of this.rises) {
      if (r.head >= c) {
        if (r.leap > slack) return r.head - c <= slack ? r.at : this.now();
        if (prev === undefined || r.head <= prev.head) return r.at;
        // Small steps all the way from prev to r: the chain passed c in between.
        return prev.at + ((r.at - prev.at) * (c - prev.head)) / (r.head - prev.head);
      }
      prev = r;
    }
    return this.now();
  }

  /** Halves the older rises (each kept one stands for its dropped neighbour, its largest step kept). */
  private thin(): void {
    const kept: Rise[] = [];
    const half = this.rises.length >> 1;
    for (let i = 0; i < this.rises.length; i++) {
      const r = this.rises[i]!;
      if (i < half && i % 2 === 0 && i + 1 < half) {
        const next = this.rises[i + 1]!;
        next.leap = Math.max(next.leap, r.leap);
        continue;
      }
      kept.push(r);
    }
    this.rises = kept;
  }
}
