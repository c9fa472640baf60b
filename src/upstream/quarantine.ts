/**
 * A node's quarantine, as the fleet (fleet.ts) marks its status (node.ts NodeStatus) for its two
 * reasons: it answers another chain id, or it gave wrong answers (SPEC 4.9: `quarantineAfter` of
 * them within `windowMs` quarantine it for `quarantineMs`; the probe that finds it right after that
 * time lifts it). The fleet sets the state, logs and counts.
 */
import type { NodeStatus } from './node.js';

/** routing.verify's wrong-answer quarantine: so many within windowMs quarantine a node for quarantineMs. */
export interface WrongAnswerLimits {
  quarantineAfter: number;
  windowMs: number;
  quarantineMs: number;
}

/** routing.verify's defaults (3, 10 min, 10 min), for a fleet built without them. */
export const WRONG_ANSWERS: WrongAnswerLimits = { quarantineAfter: 3, windowMs: 600_000, quarantineMs: 600_000 };

/** Marks why `s` is quarantined: it answers chain `got` (null: unreadable), not `expected`. */
export function markAnotherChain(s: NodeStatus, got: number | null, expected: number): void {
  s.quarantineWhy = 'another chain id';
  s.stateWhy = `wrong chain ${got === null ? 'id (unreadable)' : `0x${got.toString(16)}`} (expected 0x${expected.toString(16)})`;
}

/**
 * Counts a wrong answer of `s` at `now`. True when it is the `quarantineAfter`th within `windowMs`
 * of a node not quarantined already: `s` is then marked quarantined until `quarantineMs` from now.
 */
export function countWrongAnswer(s: NodeStatus, now: number, limits: WrongAnswerLimits): boolean {
  const { quarantineAfter, windowMs, quarantineMs } = limits;
  s.wrongAnswers++;
  s.wrongAt.push(now);
  while (s.wrongAt.length > 0 && (s.wrongAt.length > quarantineAfter || s.wrongAt[0]! <= now - windowMs))
    s.wrongAt.shift();
  if (s.wrongAt.length < quarantineAfter || s.state === 'quarantined') return false;
  s.wrongAt = [];
  s.quarantineWhy = 'wrong answers';
  s.stateWhy = `${quarantineAfter} wrong answers within ${Math.round(windowMs / 1000)} s`;
  s.quarantinedUntil = now + quarantineMs;
  return true;
}
