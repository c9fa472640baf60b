/**
 * A request pinned to one node by its caller (X-Switchyard-Use-Upstream, server/directives.ts):
 * each of its node calls may go to that node only, when that node is eligible for the call by
 * the rules of select.ts, and never to another; else -32002 says why (about that node). The name
 * is the client's: it is looked up among the configured upstreams, never written anywhere.
 */
import type { Fleet } from '../upstream/fleet.js';
import type { Upstream } from '../upstream/node.js';
import type { Requirement } from './select.js';

/** Why the node a request is pinned to cannot take a call (NO_UPSTREAM's `data.why`). */
export type PinnedIneligible =
  | 'the requested upstream is unknown'
  | 'the requested upstream is not healthy'
  | 'the requested upstream is a shadow'
  | 'the requested upstream is cordoned'
  | 'the requested upstream is held off'
  | 'the requested upstream lacks the capability'
  | 'the requested upstream lacks the block'
  | 'the requested upstream is not in sync'
  | 'the requested upstream does not hold the filter'
  | 'the requested upstream was tried';

/**
 * The pinned node as the one candidate for a call with `req` (and `only`, the node a filter call
 * must go to), or why it is not one.
 */
export function pinnedNode(
  fleet: Fleet,
  name: string,
  req: Requirement,
  exclude: readonly Upstream[],
  only?: Upstream,
): Upstream[] | PinnedIneligible {
  const u = fleet.upstreams.find((x) => x.name === name);
  if (u === undefined) return 'the requested upstream is unknown';
  if (!u.available) return 'the requested upstream is not healthy';
  if (u.shadow) return 'the requested upstream is a shadow';
  if (fleet.cordons.has(u.name)) return 'the requested upstream is cordoned';
  if (u.heldOff) return 'the requested upstream is held off';
  if (only !== undefined && only !== u) return 'the requested upstream does not hold the filter';
  if (req.capability === 'debug' && !u.can('debug')) return 'the requested upstream lacks the capability';
  if (req.minHead !== undefined && u.head < req.minHead) return 'the requested upstream lacks the block';
  if (req.stateAt !== undefined && !u.hasStateAt(req.stateAt)) return 'the requested upstream lacks the block';
  if (req.maxLag !== undefined && fleet.lag(u) > req.maxLag) return 'the requested upstream is not in sync';
  if (exclude.includes(u)) return 'the requested upstream was tried';
  return [u];
}
