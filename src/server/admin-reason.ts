/**
 * /status's `reason`: one line saying why an upstream is not simply serving (`lagging 7 blocks`,
 * `breaker open after 5 failures in a row`, `wrong chain 0x1 (expected 0xba)`), or null when it is.
 * What is most in the way comes first: an operator's cordon, then the node's state, then what keeps
 * a healthy node from calls. Owns: the wording. Refuses: deciding any of it (upstream/, routing/).
 */
import type { Cordon } from '../upstream/cordons.js';
import type { Upstream } from '../upstream/node.js';

export interface ReasonInput {
  cordon: Cordon | undefined;
  /** Blocks behind the fleet head (Infinity: no head yet). */
  lag: number;
  maxLagBlocks: number;
}

export function stateReason(u: Upstream, { cordon, lag, maxLagBlocks }: ReasonInput): string | null {
  if (cordon !== undefined)
    return cordon.reason === null ? 'cordoned by operator' : `cordoned by operator: ${cordon.reason}`;
  switch (u.state) {
    case 'quarantined':
      return `quarantined: ${u.stateWhy ?? u.quarantineWhy ?? 'unknown'}`;
    case 'down':
      return u.stateWhy === null ? 'down' : `down: ${u.stateWhy}`;
    case 'connecting':
      return 'connecting: no head poll has answered yet';
    case 'healthy':
      break;
  }
  if (u.retiring) return 'being removed by a reload: no new calls';
  if (u.late) return 'late: its last head poll timed out, no calls until one answers';
  if (u.implausible) return 'head implausibly far ahead of the fleet (routing.maxHeadJumpBlocks): not routed';
  const breaker = u.breaker.state;
  if (breaker === 'open') return `breaker open after ${u.breaker.failuresInARow} failures in a row`;
  if (breaker === 'half-open')
    return `breaker half-open after ${u.breaker.failuresInARow} failures in a row: one trial call decides`;
  const until = u.heldOffUntil;
  if (u.heldOff && until !== null) return `held off: it answered 429, no calls until ${new Date(until).toISOString()}`;
  if (Number.isFinite(lag) && lag > maxLagBlocks)
    return `lagging ${lag} blocks (routing.maxLagBlocks: ${maxLagBlocks})`;
  if (u.shadow) return 'shadow: gets copies of reads to compare, never a client call';
  return null;
}
