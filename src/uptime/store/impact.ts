/**
 * How bad an incident is (SPEC 12.3), in Statuspage's words: `none`, `minor`, `major`,
 * `critical`. An operator sets it (default `minor`); a probe's incident has the impact of what
 * its check means: no node confirms the chain (`unreachable`) is `critical`, nodes answer but no
 * block comes (`stalled`) is `minor`, so the page's state agrees with SPEC 12's (down, degraded).
 * The page's state is the worst of the probes and the open incidents. A leaf: imports nothing.
 */

export const IMPACTS = ['none', 'minor', 'major', 'critical'] as const;
export type Impact = (typeof IMPACTS)[number];
export const DEFAULT_IMPACT: Impact = 'minor';

export type OverallState = 'operational' | 'degraded' | 'down';

export function isImpact(v: unknown): v is Impact {
  return (IMPACTS as readonly unknown[]).includes(v);
}

/** A stored impact (input like any row) or, for a probe's incident, the one its kind means. */
export function impactOf(kind: string, stored: string | null): Impact {
  if (isImpact(stored)) return stored;
  if (kind === 'unreachable') return 'critical';
  return 'minor';
}

/** The state an open incident of this impact puts the page in at least. */
export function stateOfImpact(impact: Impact): OverallState {
  return impact === 'none' ? 'operational' : impact === 'minor' ? 'degraded' : 'down';
}

const RANK: Record<OverallState, number> = { operational: 0, degraded: 1, down: 2 };

export function worse(a: OverallState, b: OverallState): OverallState {
  return RANK[b] > RANK[a] ? b : a;
}

/** The worst impact of these (none without any). */
export function worstImpact(impacts: Iterable<Impact>): Impact {
  let worst = 0;
  for (const i of impacts) worst = Math.max(worst, IMPACTS.indexOf(i));
  return IMPACTS[worst]!;
}
