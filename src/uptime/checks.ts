/**
 * The two checks a user of the chain used to run by hand, as Switchyard runs them itself:
 *   reachable: a node (not Switchyard's local answer) says eth_chainId is the configured chain;
 *   advancing: the fleet head rose within the last stallAfterSeconds.
 * Owns: asking the nodes, and remembering when the head last rose. Refuses: incidents (tracker.ts).
 */
import type { CallTiming, UpstreamState } from '../upstream/node.js';
import { parseQuantity } from '../jsonrpc/hex.js';

/** What the uptime room reads of one upstream (upstream/node.ts Upstream has it). */
export interface UpstreamView {
  readonly name: string;
  readonly state: UpstreamState;
  readonly head: number;
  readonly latencyMs: number;
  readonly retiring: boolean;
  /** A shadow upstream (upstreams[].shadow) never answers clients: not part of what the page reports; absent = false. */
  readonly shadow?: boolean;
  call(method: string, paramsJson: string, timeoutMs: number, opts: { probe?: boolean }): Promise<CallTiming>;
}

/** What the uptime room reads of the fleet (upstream/fleet.ts Fleet has it). */
export interface FleetView {
  readonly head: number;
  readonly upstreams: readonly UpstreamView[];
  /** Cordoned names (upstream/cordons.ts): the page shows them as such. */
  readonly cordons?: { get(name: string): { reason: string | null; at: number } | undefined };
}

/**
 * Asks every upstream for its chain id at once. Resolves as soon as one answers `chainId`, with
 * how long that node took (ms: the probe's latency, history-store.ts), or null once all have
 * answered otherwise or failed. Probe calls: they never touch a node's breaker.
 */
export function confirmChain(
  upstreams: readonly UpstreamView[],
  chainId: number,
  timeoutMs: number,
): Promise<number | null> {
  const asked = upstreams.filter((u) => !u.retiring);
  if (asked.length === 0) return Promise.resolve(null);
  return new Promise((resolve) => {
    let left = asked.length;
    for (const u of asked) {
      u.call('eth_chainId', '[]', timeoutMs, { probe: true }).then(
        ({ verdict, ms }) => {
          if (
            verdict.kind === 'result' &&
            typeof verdict.result === 'string' &&
            parseQuantity(verdict.result) === chainId
          )
            resolve(ms);
          else if (--left === 0) resolve(null);
        },
        () => {
          if (--left === 0) resolve(null);
        },
      );
    }
  });
}

export interface HeadJudgement {
  /** null: no head seen since start and still within stallAfterSeconds of it: not judged yet. */
  advancing: boolean | null;
  /** The highest fleet head seen; null while none is known. */
  head: number | null;
  /** ms since the head last rose; null while no head is known. */
  ageMs: number | null;
}

/**
 * When the fleet head last rose. It starts from what the store remembers, so a chain that halted
 * before a restart is still judged stalled after it; a head lower than the remembered one on the
 * first sight after start means another chain (a devnet started afresh): the watch starts over.
 * Within one process a lower head is ignored (a node with the highest head went away; that is not
 * the chain going back), so only a head above every head seen counts as a rise.
 */
export class HeadWatch {
  private highest: number;
  private roseAt: number;
  private seenThisRun = false;

  constructor(
    private stallAfterMs: number,
    private readonly startedAt: number,
    remembered: { head: number; roseAt: number } | null,
  ) {
    this.highest = remembered?.head ?? -1;
    this.roseAt = remembered?.roseAt ?? startedAt;
  }

  setStallAfter(ms: number): void {
    this.stallAfterMs = ms;
  }

  /** A fleet head observed at time t (from the fleet's head event or a probe). */
  saw(head: number, t: number): void {
    if (head < 0) return;
    if (!this.seenThisRun) {
      this.seenThisRun = true;
      if (head < this.highest) {
        this.highest = head;
        this.roseAt = t;
        return;
      }
    }
    if (head > this.highest) {
      this.highest = head;
      this.roseAt = t;
    }
  }

  judge(t: number): HeadJudgement {
    // No head yet in this run (the first polls are still out): not judged for stallAfterSeconds
    // from the start, then not advancing.
    if (!this.seenThisRun) {
      const known = this.highest >= 0;
      return {
        advancing: t - this.startedAt <= this.stallAfterMs ? null : false,
        head: known ? this.highest : null,
        ageMs: known ? Math.max(0, t - this.roseAt) : null,
      };
    }
    const ageMs = Math.max(0, t - this.roseAt);
    return { advancing: ageMs <= this.stallAfterMs, head: this.highest, ageMs };
  }

  /** What the store keeps so a restart carries on: the highest head and when it rose. */
  remember(): { head: number; roseAt: number } | null {
    return this.highest >= 0 ? { head: this.highest, roseAt: this.roseAt } : null;
  }
}
