/**
 * Which upstreams may serve a call, and which one does.
 * Eligibility: routable (healthy, right chain, breaker allows), not cordoned, not held off (it said
 * "too many requests": upstream/holdoff.ts), has the capability, has the block, and for a read of
 * state has the state at that block (its earliest block: upstream/serving.ts). A node that refused
 * the call's method as unknown is passed over while another can take it (`willing`).
 * Selection: power of two choices on cost = (inFlight + 1) x EWMA latency / weight: two eligible
 * nodes drawn at random, the cheaper one wins. It spreads load like least-outstanding-requests
 * without herding every call onto the one node that looked best a moment ago.
 */
import type { Fleet } from '../upstream/fleet.js';
import type { Upstream } from '../upstream/node.js';

export interface Requirement {
  /** The node's head must be at least this block. */
  minHead?: number;
  /** The node may be at most this many blocks behind the fleet head. */
  maxLag?: number;
  capability?: 'debug' | 'archive';
  /** The call reads the state at this block: a node whose earliest block with state is above it cannot serve it. */
  stateAt?: number;
  /** Same key -> same node while that node is eligible (pending state, nonces). */
  stickyKey?: string;
}

export type Ineligible =
  | 'none healthy'
  | 'all cordoned'
  | 'none in sync'
  | 'none has the block'
  | 'none has the capability'
  /** Every routable node said "too many requests" and is held off (upstream/holdoff.ts). */
  | 'all held off'
  | 'all tried';

export function eligible(fleet: Fleet, req: Requirement, exclude: readonly Upstream[]): Upstream[] | Ineligible {
  // The common case in one pass and one array: no capability, some node qualifies. The same
  // nodes in the same order as the filters below; they only run to say why none qualifies.
  if (req.capability === undefined) {
    const out: Upstream[] = [];
    for (const u of fleet.upstreams) {
      if (!u.available || u.heldOff || fleet.cordons.has(u.name) || exclude.includes(u)) continue;
      if (req.minHead !== undefined && u.head < req.minHead) continue;
      if (req.stateAt !== undefined && !u.hasStateAt(req.stateAt)) continue;
      if (req.maxLag !== undefined && fleet.lag(u) > req.maxLag) continue;
      out.push(u);
    }
    if (out.length > 0) return out;
  }
  let pool = fleet.upstreams.filter((u) => u.available);
  if (pool.length === 0) return 'none healthy';
  pool = pool.filter((u) => !fleet.cordons.has(u.name));
  if (pool.length === 0) return 'all cordoned';
  pool = pool.filter((u) => !u.heldOff);
  if (pool.length === 0) return 'all held off';
  if (req.capability === 'debug') {
    pool = pool.filter((u) => u.can('debug'));
    if (pool.length === 0) return 'none has the capability';
  }
  if (req.capability === 'archive' && pool.some((u) => u.can('archive'))) {
    pool = pool.filter((u) => u.can('archive'));
  }
  if (req.minHead !== undefined) {
    const min = req.minHead;
    pool = pool.filter((u) => u.head >= min);
    if (pool.length === 0) return 'none has the block';
  }
  if (req.stateAt !== undefined) {
    const at = req.stateAt;
    pool = pool.filter((u) => u.hasStateAt(at));
    if (pool.length === 0) return 'none has the block';
  }
  if (req.maxLag !== undefined) {
    const max = req.maxLag;
    pool = pool.filter((u) => fleet.lag(u) <= max);
    if (pool.length === 0) return 'none in sync';
  }
  pool = pool.filter((u) => !exclude.includes(u));
  return pool.length === 0 ? 'all tried' : pool;
}

/**
 * The candidates that have not refused `method` as unknown (upstream/serving.ts), or null when
 * every one has: then what they said stands (routing/failover.ts).
 */
export function willing(candidates: Upstream[], method: string): Upstream[] | null {
  let out: Upstream[] | null = null;
  for (let i = 0; i < candidates.length; i++) {
    const refuses = candidates[i]!.serving.refuses(method);
    if (refuses && out === null) out = candidates.slice(0, i);
    else if (!refuses && out !== null) out.push(candidates[i]!);
  }
  if (out === null) return candidates;
  return out.length > 0 ? out : null;
}

export function cost(u: Upstream): number {
  return ((u.inFlight + 1) * Math.max(u.latencyMs, 0.1)) / u.weight;
}

export function choose(
  candidates: readonly Upstream[],
  stickyKey?: string,
  random: () => number = Math.random,
): Upstream {
  if (candidates.length === 1) return candidates[0]!;
  if (stickyKey !== undefined) return rendezvous(candidates, hash(stickyKey));
  const i = Math.floor(random() * candidates.length);
  let j = Math.floor(random() * (candidates.length - 1));
  if (j >= i) j++;
  const a = candidates[i]!;
  const b = candidates[j]!;
  return cost(a) <= cost(b) ? a : b;
}

/**
 * Rendezvous (highest random weight) choice: every candidate gets a score from the key and its
 * name, the highest wins. A key keeps its node while that node stays eligible, whichever others
 * come and go (a node a block behind at a head change, a node restarting); when its node leaves,
 * only its keys move, and they come back when it returns. Depends on names only, so replicas agree.
 */
function rendezvous(candidates: readonly Upstream[], keyHash: number): Upstream {
  let best = candidates[0]!;
  let bestScore = -1;
  for (const u of candidates) {
    const score = mix(keyHash ^ hash(u.name));
    if (score > bestScore || (score === bestScore && u.name < best.name)) {
      best = u;
      bestScore = score;
    }
  }
  return best;
}

/** MurmurHash3's 32-bit finaliser: a bijection in which every input bit moves every output bit. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a, 32 bits: stable across processes, so replicas agree on sticky choices and filter ids. */
export function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}
