/**
 * Hedged reads (SPEC 4.9, routing.hedge): a read still unanswered after its method's recent
 * quantile latency (hedge-figures.ts, at least minDelayMs) is asked once more of another eligible
 * node. Both ways are failover's own (failover.ts attempt): the first keeps its failover steps, the
 * hedge is one attempt at a node the first way has not tried, with no wait for a head; each counts
 * against its node's budget, in-flight and lane like any attempt, in X-Switchyard-Attempts, and is
 * a CLIENT span of its own. The first good answer wins: a result (verified, verified.ts, as every
 * answer is) or a node's own error; a hedge's null for a call whose null may mean a lagging node
 * is no good answer (the first way asks its second opinion). The other way is cancelled: its call
 * is cut off (upstream/cancel.ts), and it makes no further attempt. When neither way has a good
 * answer, the first way's answer is the answer.
 * Hedges are at most maxRatio of the calls that may be hedged (a token bucket each such call adds
 * maxRatio to, burst 20); a hedge not sent for want of a token or of another node is `skipped`, and
 * so is one that took a token but never reached a node (no budget token or lane room there, or the
 * first way answered while it waited): its token is given back, so the bucket counts hedges sent.
 * Which calls may be hedged is the pipeline's word (Sendable.hedgeable); a request pinned to one
 * node (X-Switchyard-Use-Upstream) is never hedged, and a method no node has figures for yet goes
 * by the figures of every hedgeable method (hedge-figures.ts).
 * Owns: the race of the two ways, its timer, the hedge outcome counts.
 * Refuses: the latency figures and the bucket (hedge-figures.ts), how a way reaches a node (failover.ts).
 */
import { Cancel } from '../upstream/cancel.js';
import { attempt, MAX_BLOCK_WAITS } from './failover.js';
import type { HedgeRoute } from './hedge-figures.js';
import { eligible, willing } from './select.js';
import { attemptsOf, fresh, type Attempted, type DispatchContext, type Progress, type Sendable } from './way.js';

/** The call may be hedged in this request: a hedgeable read, hedging on, not pinned to one node. */
export function mayHedge(ctx: DispatchContext, call: Sendable): boolean {
  return call.hedgeable === true && ctx.routing.hedge !== undefined && ctx.useUpstream === undefined;
}

/** The call's way to a node, hedged when it is late (mayHedge said it may be). */
export function hedged(ctx: DispatchContext, call: Sendable): Promise<Attempted> {
  const h = ctx.routing.hedge!;
  h.figures.refill(h.maxRatio);
  const delay = h.figures.delay(ctx.routing.fleet, call.label, h.quantile, h.minDelayMs);
  if (delay === null) return attempt(ctx, call, fresh());
  return new Promise<Attempted>((resolve) => new Race(ctx, call, h, delay, resolve));
}

/** One hedged read: the first way from the start, the hedge from its timer on. */
class Race {
  private readonly first: Progress;
  private hedge: Progress | null = null;
  private timer: NodeJS.Timeout | undefined;
  private settled = false;
  /** A way's answer that was no good answer, kept while the other way may still bring one. */
  private firstBad: Attempted | null = null;
  private hedgeBad: Attempted | null = null;
  /** The hedge's token went back to the bucket (it reached no node). */
  private returned = false;

  constructor(
    private readonly ctx: DispatchContext,
    private readonly call: Sendable,
    private readonly h: HedgeRoute,
    delay: number,
    private readonly resolve: (a: Attempted) => void,
  ) {
    this.first = fresh();
    this.first.cancel = new Cancel();
    this.timer = setTimeout(Race.fire, delay, this);
    void attempt(ctx, call, this.first).then((a) => this.firstAnswered(a));
  }

  private static fire(r: Race): void {
    r.timer = undefined;
    if (!r.settled) r.launch();
  }

  /** The first way is late: a hedge goes to another node when there is one and a token for it. */
  private launch(): void {
    const { ctx, call, h } = this;
    const others = eligible(ctx.routing.fleet, call.requirement, this.first.tried);
    if (typeof others === 'string' || willing(others, call.method) === null || !h.figures.take()) {
      ctx.routing.metrics.recordHedge('skipped');
      return;
    }
    // One attempt (attempt counts from attemptsOf - 1), no wait for a head; the nodes the two ways
    // tried are one list, so neither way asks the node the other is waiting on.
    const hedge: Progress = {
      tried: this.first.tried,
      attempt: attemptsOf(ctx, call) - 1,
      waited: MAX_BLOCK_WAITS,
      lastReason: '',
      cancel: new Cancel(),
      hedge: true,
    };
    this.hedge = hedge;
    void attempt(ctx, call, hedge).then((a) => this.hedgeAnswered(a));
  }

  private firstAnswered(a: Attempted): void {
    if (this.settled) return;
    if (good(a) || this.hedge === null || this.hedgeBad !== null) return this.settle(a, false);
    this.firstBad = a;
  }

  private hedgeAnswered(a: Attempted): void {
    this.unsent();
    if (this.settled) return;
    if (good(a) && !(this.call.nullMayLag === true && a.outcome.result === 'null')) return this.settle(a, true);
    if (this.firstBad !== null) return this.settle(this.firstBad, false);
    this.hedgeBad = a;
  }

  /**
   * The hedge's way ended, or was cancelled (then it sends nothing more), without reaching a node:
   * its token goes back.
   */
  private unsent(): void {
    const hedge = this.hedge;
    if (hedge === null || this.returned || hedge.cancel!.used) return;
    this.returned = true;
    this.h.figures.giveBack();
  }

  private settle(a: Attempted, byHedge: boolean): void {
    this.settled = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const hedge = this.hedge;
    if (hedge !== null) {
      (byHedge ? this.first : hedge).cancel!.cancel();
      const metrics = this.ctx.routing.metrics;
      // A hedge that never reached a node (its budget had no token, a lane was full) was not sent;
      // cancelled now, it never will be (failover.ts checks before sending).
      this.unsent();
      if (!hedge.cancel!.used) metrics.recordHedge('skipped');
      else if (byHedge) {
        metrics.recordHedge('won');
        if (a.upstream !== undefined) this.h.figures.won(a.upstream);
      } else metrics.recordHedge('lost');
    }
    this.resolve(a);
  }
}

/** An answer to serve: a result or a node's own error (Switchyard's errors say no node answered well). */
function good(a: Attempted): boolean {
  return a.outcome.error === undefined;
}
