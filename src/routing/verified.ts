/**
 * Verification on the way back from a node (SPEC 4.9): each node answer to a verified method is
 * checked once, here, before it can become a client's answer or a cache entry (verify/answer.ts;
 * a cache hit is never checked again). A wrong answer becomes a `wrong_answer` verdict (verdict.ts
 * counts it and fails over); an answer with what the rules do not know stays a result marked
 * `unverified`; block receipts are held to the receipts root of their block's header, asked of the
 * same node (the header is itself checked: its hash must be the receipts' block hash, so its root
 * is the block's own, whoever sends it).
 * Refuses: what a wrong answer means for the node (fleet.ts) and for the call (verdict.ts).
 */
import { textOf } from '../jsonrpc/raw.js';
import { checkAnswer, isVerified } from '../verify/answer.js';
import type { Verdict } from '../upstream/classify.js';
import type { Upstream } from '../upstream/node.js';

type Result = Extract<Verdict, { kind: 'result' }>;

/** What verification reads of the routing settings (way.ts RoutingDeps). */
interface VerifySetting {
  verify?: boolean;
}

/** What verification reads of a call (way.ts Sendable). */
interface AskedCall {
  method: string;
  paramsJson: string;
}

/** The verdict on a node's answer to `call`, once what it commits to is checked. */
export function judged(r: VerifySetting, call: AskedCall, verdict: Verdict): Verdict {
  if (verdict.kind !== 'result' || r.verify === false || !isVerified(call.method)) return verdict;
  const check = checkAnswer(call.method, call.paramsJson, textOf(verdict.result), verdict.value);
  switch (check.is) {
    case 'verified':
      // The parsed value has served its one reading: not kept while the answer goes on.
      return verdict.value === undefined ? verdict : { kind: 'result', result: verdict.result };
    case 'wrong':
      return { kind: 'retry', reason: 'wrong_answer', health: false, why: check.why };
    case 'unverified':
      return { kind: 'result', result: verdict.result, unverified: true };
    case 'receipts':
      return {
        kind: 'result',
        result: verdict.result,
        confirm: { blockHash: check.blockHash, receiptsRoot: check.receiptsRoot },
      };
  }
}

/**
 * Receipts whose root the node's header of their block must hold: the verdict once it was asked.
 * A header that does not come (the node fails, or has no such block) leaves the receipts unverified;
 * a header that is not the block's, or holds another root, makes them a wrong answer.
 */
export function confirmed(r: VerifySetting, u: Upstream, v: Result, timeoutMs: number): Promise<Verdict> {
  const { blockHash, receiptsRoot } = v.confirm!;
  const params = `[${JSON.stringify(blockHash)},false]`;
  const header: AskedCall = { method: 'eth_getBlockByHash', paramsJson: params };
  return u.call(header.method, params, timeoutMs).then(({ verdict }) => {
    const h = judged(r, header, verdict);
    if (h.kind === 'retry' && h.reason === 'wrong_answer') return h;
    if (h.kind !== 'result' || h.unverified === true || h.result === 'null')
      return { kind: 'result', result: v.result, unverified: true };
    const root = (JSON.parse(textOf(h.result)) as { receiptsRoot?: unknown }).receiptsRoot;
    return typeof root === 'string' && root.toLowerCase() === receiptsRoot
      ? { kind: 'result', result: v.result }
      : { kind: 'retry', reason: 'wrong_answer', health: false, why: 'receiptsRoot' };
  });
}

/** Two results the same as parsed JSON (members in any order): text equal, or values deeply equal. */
export function sameJson(a: string, b: string): boolean {
  return a === b || equal(JSON.parse(a) as unknown, JSON.parse(b) as unknown);
}

function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka)
    if (!Object.hasOwn(b, k) || !equal((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
      return false;
  return true;
}
