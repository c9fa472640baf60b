/**
 * Incidents from probe results: `unreachable` opens when no node confirms the chain id and closes
 * when one does; `stalled` opens when nodes answer but the fleet head has not risen for
 * stallAfterSeconds and closes when it rises. A stall is only opened once nodes have answered
 * for stallAfterSeconds without a break: while they do not, nothing can be said about blocks (and
 * right after an outage the fleet is still hearing their heads). One already open stays open
 * until the head rises.
 * Owns: the open/close decisions. Refuses: storage (store.ts) and checks (checks.ts).
 */
import { toQuantity } from '../jsonrpc/hex.js';
import type { IncidentKind } from './store/store.js';
import type { OverallState } from './store/impact.js';

export type { OverallState };

export interface ProbeResult {
  t: number;
  reachable: boolean;
  /** How long nodes have answered without a break, up to this probe (0 when not reachable). */
  reachableForMs: number;
  /** null: not judged yet (start-up); leaves the stall state as it is. */
  advancing: boolean | null;
  head: number | null;
  stallAfterSeconds: number;
  chainId: number;
}

export type Change = { open: IncidentKind; summary: string } | { close: IncidentKind };

/** What should open or close given the kinds open now and one probe's result. */
export function incidentChanges(open: ReadonlySet<IncidentKind>, r: ProbeResult): Change[] {
  const out: Change[] = [];
  if (!r.reachable && !open.has('unreachable')) {
    out.push({ open: 'unreachable', summary: `No node answered eth_chainId with ${toQuantity(r.chainId)}` });
  } else if (r.reachable && open.has('unreachable')) {
    out.push({ close: 'unreachable' });
  }
  if (r.advancing === false && r.reachable && r.reachableForMs >= r.stallAfterSeconds * 1000 && !open.has('stalled')) {
    const at = r.head === null ? 'no block seen' : `block ${r.head}`;
    out.push({
      open: 'stalled',
      summary: `The chain did not advance for more than ${r.stallAfterSeconds} s (fleet head at ${at})`,
    });
  } else if (r.advancing === true && open.has('stalled')) {
    out.push({ close: 'stalled' });
  }
  return out;
}

/** SPEC 12: operational when both checks hold, degraded when only advancing fails, down when reachable fails. */
export function overallState(reachable: boolean, advancing: boolean): OverallState {
  if (!reachable) return 'down';
  return advancing ? 'operational' : 'degraded';
}
