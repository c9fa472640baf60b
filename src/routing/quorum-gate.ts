/**
 * What quorum reads (quorum.ts) read of the settings, and the one count they share across
 * reloads: how many quorum calls are in flight. A leaf below way.ts (RoutingDeps holds it)
 * and quorum.ts, so neither imports the other's types back.
 */

/** One routing.quorum rule as routing reads it (config/quorum-schema.ts checks it). */
export interface QuorumRule {
  /** Answers that must agree. */
  readonly min: number;
  /** Nodes asked (fewer when fewer are eligible). */
  readonly of: number;
  /** Distinct upstreams[].group the agreeing nodes must span. */
  readonly minGroups: number;
}

/** The request path's quorum settings (RoutingDeps.quorum), over the long-lived gate. */
export interface QuorumDeps {
  readonly gate: QuorumGate;
  /** Each listed method's rule (pipeline/ marks its plans with it). */
  readonly rules: ReadonlyMap<string, QuorumRule>;
  /** routing.quorumMaxInFlight. */
  readonly maxInFlight: number;
}

/** Dissent lines written per second, all quorum calls together; the rest are counted only. */
export const DISSENT_LOG_LINES_PER_SECOND = 10;

/**
 * Quorum calls in flight, from their first node call until their last asked node answered or timed
 * out: a reload keeps the count, so the bound holds across it. Also the dissent log's pace.
 */
export class QuorumGate {
  private calls = 0;
  private logSecond = 0;
  private logLines = 0;

  get inFlight(): number {
    return this.calls;
  }

  /** A place for one more quorum call, or false when `max` are in flight. */
  enter(max: number): boolean {
    if (this.calls >= max) return false;
    this.calls++;
    return true;
  }

  leave(): void {
    this.calls--;
  }

  /** A dissent may be logged now (at most DISSENT_LOG_LINES_PER_SECOND): a liar cannot flood the log. */
  mayLog(nowMs: number): boolean {
    const second = Math.floor(nowMs / 1000);
    if (second !== this.logSecond) {
      this.logSecond = second;
      this.logLines = 0;
    }
    return this.logLines++ < DISSENT_LOG_LINES_PER_SECOND;
  }
}
