/**
 * Shadow upstreams (SPEC 4.8, upstreams[].shadow): nodes that get copies of a sample of answered
 * reads and never answer a client (routing/select.ts never makes one eligible). The one way a call
 * reaches a node other than dispatch.ts: a copy answers no one, so it has no failover, no retry
 * and no deadline but its own timeout.
 * Copies leave in the event-loop turn after the request's answer is complete (over HTTP, after it
 * was written): a client never waits for a shadow. At most routing.shadowMaxInFlight copies are in
 * flight at once, all shadows together; past it a copy is skipped and counted, so a shadow that
 * hangs holds at most that many calls, each until its method's timeout.
 * Owns: sending copies, comparing answers (parsed JSON, key order ignored), counting and logging
 * mismatches (method, request id, block: never params nor results).
 * Refuses: which reads are copied (pipeline/shadow.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/registry.js';
import type { ShadowOutcome } from '../metrics/shadow.js';
import type { Fleet } from '../upstream/fleet.js';
import type { CallOptions } from '../upstream/client.js';
import type { Upstream } from '../upstream/node.js';
import { laneFull } from './lane.js';
import type { Requirement } from './select.js';

/** Mismatch lines written per second, all shadows together; the rest are counted only. */
export const SHADOW_LOG_LINES_PER_SECOND = 10;

/** One read to copy (pipeline/shadow.ts chooses them), with the result the client got. */
export interface ShadowCopy {
  readonly method: string;
  /** The method's metric label. */
  readonly label: string;
  /** The params as the regular node got them (`latest` pinned to a number). */
  readonly paramsJson: string;
  readonly result: string;
  /** The block the read is pinned to (a shadow below it gets no copy), or null when only its hash is known. */
  readonly block: number | null;
  /** What a regular node needed for the read (a state older than a pruned shadow keeps, debug): a shadow without it gets no copy. */
  readonly needs: Pick<Requirement, 'stateAt' | 'capability'>;
  readonly expensive: boolean;
  /** methods/table.ts `held`: the copy goes on the shadow's held lane, or is skipped when that is full. */
  readonly held: boolean;
  readonly timeoutMs: number;
}

export class ShadowReads {
  private inFlight = 0;
  private stopped = false;
  private logSecond = 0;
  private logLines = 0;

  constructor(
    private readonly fleet: Fleet,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {}

  /** Copies in flight now. */
  get busy(): number {
    return this.inFlight;
  }

  /**
   * Sends `copies` to every shadow in the next event-loop turn, after the answer that holds them
   * was handed to the client. `reqId`: the request's id, for a mismatch's log line.
   */
  later(copies: readonly ShadowCopy[], maxInFlight: number, maxLagBlocks: number, reqId?: string): void {
    if (this.stopped) return;
    setImmediate(() => {
      if (this.stopped) return;
      for (const c of copies)
        for (const u of this.fleet.upstreams) if (u.shadow) this.copy(u, c, maxInFlight, maxLagBlocks, reqId);
    });
  }

  /** No copy leaves after this (the process is closing). */
  stop(): void {
    this.stopped = true;
  }

  private copy(u: Upstream, c: ShadowCopy, maxInFlight: number, maxLagBlocks: number, reqId?: string): void {
    if (this.inFlight >= maxInFlight || !this.takes(u, c, maxLagBlocks)) {
      this.metrics.recordShadowCall(u.name, c.label, 'skipped');
      return;
    }
    this.inFlight++;
    void this.send(u, c, reqId).then((outcome) => {
      this.inFlight--;
      this.metrics.recordShadowCall(u.name, c.label, outcome);
    });
  }

  /**
   * Whether `u` may take the copy now: routable, not cordoned nor held off, room on its held lane
   * for a held call (lane.ts), it has the block and
   * what a regular node needed for the read (the state at its block, debug; routing/select.ts). A
   * pruned shadow asked for a state it no longer keeps answers an error, counted as its failure.
   */
  private takes(u: Upstream, c: ShadowCopy, maxLagBlocks: number): boolean {
    if (!u.available || u.heldOff || this.fleet.cordons.has(u.name) || laneFull(c.held, u)) return false;
    if (c.needs.stateAt !== undefined && !u.hasStateAt(c.needs.stateAt)) return false;
    if (c.needs.capability === 'debug' && !u.can('debug')) return false;
    return c.block === null ? this.fleet.lag(u) <= maxLagBlocks : u.head >= c.block;
  }

  private async send(u: Upstream, c: ShadowCopy, reqId?: string): Promise<ShadowOutcome> {
    if (u.budget !== null && !(await u.budget.take(1))) return 'skipped';
    const { verdict } = await u.call(c.method, c.paramsJson, c.timeoutMs, optionsOf(c));
    if (verdict.kind === 'retry') return 'error';
    if (verdict.kind === 'result' && typeof verdict.result === 'string' && sameJson(verdict.result, c.result))
      return 'match';
    this.mismatch(u, c, verdict.kind === 'result' ? 'result' : 'error', reqId);
    return 'mismatch';
  }

  private mismatch(u: Upstream, c: ShadowCopy, shadowGave: 'result' | 'error', reqId?: string): void {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.logSecond) {
      this.logSecond = second;
      this.logLines = 0;
    }
    if (++this.logLines > SHADOW_LOG_LINES_PER_SECOND) return;
    this.log.warn(
      { upstream: u.name, method: c.label, req: reqId ?? null, block: c.block, shadowGave },
      'shadow upstream answered a read differently from the answer the client got',
    );
  }
}

const EXPENSIVE = Object.freeze({ expensive: true });
const HELD = Object.freeze({ expensive: true, held: true });

/** The upstream client's options for a copy: a held read is an expensive one too (methods/table.ts). */
function optionsOf(c: ShadowCopy): CallOptions | undefined {
  if (c.held) return HELD;
  return c.expensive ? EXPENSIVE : undefined;
}

/** The two answers' JSON values are equal (object key order aside); text that is not JSON equals nothing. */
export function sameJson(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return isDeepStrictEqual(JSON.parse(a), JSON.parse(b));
  } catch {
    return false;
  }
}
