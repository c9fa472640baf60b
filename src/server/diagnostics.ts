/**
 * The diagnostic response headers (SPEC 13, server.diagnosticHeaders): what a browser's devtools
 * or a curl -i shows about one answer without a trace: the nodes whose answers were returned,
 * whether the cache answered, how many calls were sent to nodes, and the time spent in all and
 * waiting for nodes (Server-Timing). Upstreams by name only; nothing a client sent is echoed.
 */
import type { Slot } from '../jsonrpc/parse.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { DispatchContext } from '../routing/dispatch.js';

/** `partial`: some calls were answered from the cache and some went to a node. */
export type CacheSummary = 'hit' | 'miss' | 'partial' | 'none';

export interface Diagnostics {
  answered: readonly string[];
  cache: CacheSummary;
  attempts: number;
  /** From the first call sent to a node to the last answer; null when none was sent. */
  upstreamMs: number | null;
  /** `k/n` of each quorum read (routing/quorum.ts): k answers agreed of n nodes asked. */
  quorum: readonly string[];
}

/** X-Switchyard-Upstream lists at most this many names. */
const MAX_UPSTREAMS = 8;

const NONE: Diagnostics = Object.freeze({ answered: [], cache: 'none', attempts: 0, upstreamMs: null, quorum: [] });

/** What the request's context and outcomes say; `cacheable[i]`: slot i went to a node under a cache plan. */
export function summarize(
  ctx: DispatchContext,
  slots: readonly Slot[],
  outcomes: readonly (Outcome | undefined)[],
  cacheable: readonly boolean[] | undefined,
): Diagnostics {
  let hits = 0;
  let misses = 0;
  for (let i = 0; i < slots.length; i++) {
    const o = outcomes[i];
    if (o?.result !== undefined && o.cached === true) hits++;
    else if (cacheable?.[i] === true) misses++;
  }
  const attempts = ctx.attempts ?? 0;
  if (hits === 0 && misses === 0 && attempts === 0 && ctx.quorum === undefined) return NONE;
  return {
    answered: ctx.answered ?? NONE.answered,
    cache: hits > 0 ? (misses > 0 ? 'partial' : 'hit') : misses > 0 ? 'miss' : 'none',
    attempts,
    upstreamMs: ctx.upstreamFrom && ctx.upstreamTo ? ctx.upstreamTo - ctx.upstreamFrom : null,
    quorum: ctx.quorum ?? NONE.quorum,
  };
}

/**
 * The headers for an answer that took `totalMs`, as flat name, value pairs (http-answer.ts);
 * `d` absent: a request no call of which was worked on. Written on every answer, so built from
 * constants where it can (`toFixed` and a Set per answer were a measurable share of a cache hit).
 */
export function diagnosticHeaders(d: Diagnostics | undefined, totalMs: number): string[] {
  const s = d ?? NONE;
  const total = `total;dur=${tenths(totalMs)}`;
  const timing = s.upstreamMs === null ? total : `${total}, upstream;dur=${tenths(s.upstreamMs)}`;
  const attempts = s.attempts < SMALL.length ? SMALL[s.attempts]! : String(s.attempts);
  // Timing-Allow-Origin: a page on another origin sees Server-Timing in its Resource Timing entries.
  const h = [
    'x-switchyard-cache',
    s.cache,
    'x-switchyard-attempts',
    attempts,
    'server-timing',
    timing,
    'timing-allow-origin',
    '*',
  ];
  if (s.answered.length > 0) h.push('x-switchyard-upstream', upstreamList(s.answered));
  // One `k/n` per quorum read, in the order they were decided (at most MAX_UPSTREAMS).
  if (s.quorum.length > 0) h.push('x-switchyard-quorum', s.quorum.slice(0, MAX_UPSTREAMS).join(','));
  return h;
}

const SMALL = Array.from({ length: 32 }, (_, i) => String(i));

/** Milliseconds to one decimal place. */
function tenths(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** The distinct names, in the order they answered, at most MAX_UPSTREAMS. */
function upstreamList(names: readonly string[]): string {
  if (names.length === 1) return names[0]!;
  return [...new Set(names)].slice(0, MAX_UPSTREAMS).join(',');
}
