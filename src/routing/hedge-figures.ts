/**
 * What hedged reads (hedge.ts) go by, kept for the life of the process (reloads keep them): each
 * node's recent latency per method, the token bucket that bounds hedges to a share of calls, and
 * the hedges each node won (for /status).
 * Latency: per node and method (the call's metric label: unknown methods share `other`), a ring of
 * the last WINDOW answer times; its quantile is worked out again every EVERY new samples (a sort
 * of at most WINDOW numbers in one scratch array), not per call. Only answers teach it (a result
 * or a node's error), from single calls of the methods that may be hedged. Nodes are held weakly:
 * a node removed by a reload takes its figures with it.
 * The hedge delay of a method is the lower median of the healthy nodes' quantiles: one node that is
 * often late sets only its own figure, which the median passes over while most nodes are quick (a
 * fleet-wide pooled quantile would take the late node's share as the norm and hedge too late).
 * Until some node has MIN_SAMPLES answers for a method (after start, for a method seldom called, on
 * a node a reload added), the figure of each node's answers to every hedgeable method together
 * (a window of their own) stands in: reads that may be hedged are of one kind (no expensive call
 * among them), so their common quantile is a fair first guess, and the bucket bounds what a wrong
 * guess costs. Only before any node has MIN_SAMPLES answers at all is nothing hedged.
 * The bucket holds tokens for hedges sent: a hedge that never reached a node (its node had no
 * budget token or lane room, or the first answer came while it waited) gives its token back.
 */
import type { Fleet } from '../upstream/fleet.js';
import type { Upstream } from '../upstream/node.js';

/** Samples kept per node and method. */
const WINDOW = 64;
/** New samples after which a window's quantile is worked out again. */
const EVERY = 8;
/** Fewer samples than this say nothing yet: no figure from that node for that method. */
export const MIN_SAMPLES = 16;
/** The most tokens the bucket holds: hedges that may go out in a row. */
export const HEDGE_BURST = 20;

const SCRATCH = new Float64Array(WINDOW);
const FIGURES: number[] = [];

class Window {
  private readonly samples = new Float64Array(WINDOW);
  private n = 0;
  private next = 0;
  private fresh = 0;
  private q = -1;
  private value = 0;

  add(ms: number): void {
    this.samples[this.next] = ms;
    this.next = (this.next + 1) % WINDOW;
    if (this.n < WINDOW) this.n++;
    this.fresh++;
  }

  /** The `q` quantile of the recent samples, or null while there are too few. */
  at(q: number): number | null {
    const n = this.n;
    if (n < MIN_SAMPLES) return null;
    if (this.fresh >= EVERY || q !== this.q) {
      SCRATCH.set(this.samples.subarray(0, n));
      const sorted = SCRATCH.subarray(0, n).sort();
      this.value = sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!;
      this.q = q;
      this.fresh = 0;
    }
    return this.value;
  }
}

interface NodeFigures {
  methods: Map<string, Window>;
  /** Its answers to every hedgeable method: the stand-in while a method has too few of its own. */
  all: Window;
  won: number;
}

export class HedgeFigures {
  private readonly nodes = new WeakMap<Upstream, NodeFigures>();
  private tokens = HEDGE_BURST;

  private of(u: Upstream): NodeFigures {
    let f = this.nodes.get(u);
    if (f === undefined) {
      f = { methods: new Map(), all: new Window(), won: 0 };
      this.nodes.set(u, f);
    }
    return f;
  }

  /** `u` answered a call of method `label` in `ms`. */
  sample(u: Upstream, label: string, ms: number): void {
    const f = this.of(u);
    f.all.add(ms);
    const methods = f.methods;
    let w = methods.get(label);
    if (w === undefined) {
      w = new Window();
      methods.set(label, w);
    }
    w.add(ms);
  }

  /**
   * How long a call of `label` waits before it is hedged: the lower median of the routable nodes'
   * `q` quantiles for it, at least `minMs`; while no node has figures for it, the same of their
   * figures for every hedgeable method together; null when no node has either yet.
   */
  delay(fleet: Fleet, label: string, q: number, minMs: number): number | null {
    const figure = this.median(fleet, label, q) ?? this.median(fleet, null, q);
    return figure === null ? null : Math.max(minMs, figure);
  }

  /** The lower median of the routable nodes' `q` quantiles of `label` (null: of every method). */
  private median(fleet: Fleet, label: string | null, q: number): number | null {
    FIGURES.length = 0;
    for (const u of fleet.upstreams) {
      if (!u.available || u.shadow) continue;
      const f = this.nodes.get(u);
      const figure = label === null ? f?.all.at(q) : f?.methods.get(label)?.at(q);
      if (figure !== undefined && figure !== null) FIGURES.push(figure);
    }
    if (FIGURES.length === 0) return null;
    FIGURES.sort(byValue);
    return FIGURES[(FIGURES.length - 1) >> 1]!;
  }

  /** A call that may be hedged adds `ratio` tokens (up to the burst): hedges stay at most that share of calls. */
  refill(ratio: number): void {
    this.tokens = Math.min(HEDGE_BURST, this.tokens + ratio);
  }

  /** A token for one hedge, if there is one. */
  take(): boolean {
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** A hedge that took a token never reached a node: the token is its again (up to the burst). */
  giveBack(): void {
    this.tokens = Math.min(HEDGE_BURST, this.tokens + 1);
  }

  /** Tokens in the bucket now (/status): hedges that may go out in a row. */
  get tokensLeft(): number {
    return Math.round(this.tokens * 100) / 100;
  }

  /** `u` answered a hedge before the first node: its answer was served. */
  won(u: Upstream): void {
    this.of(u).won++;
  }

  /** Hedges `u` won (/status). */
  wonBy(u: Upstream): number {
    return this.nodes.get(u)?.won ?? 0;
  }
}

function byValue(a: number, b: number): number {
  return a - b;
}

/** routing.hedge as a request's routing carries it (absent: hedging off), with the process's figures. */
export interface HedgeRoute {
  figures: HedgeFigures;
  quantile: number;
  minDelayMs: number;
  maxRatio: number;
}
