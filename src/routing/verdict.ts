/**
 * What one node's verdict means for the call (failover.ts asks after each attempt): an answer to
 * return, or the next attempt, with why recorded in the call's Progress. Deterministic answers
 * (reverts, invalid params, nonce too low) return at once, verbatim. An expensive call
 * (methods/table.ts) that timed out or lost its connection once sent is answered at once with
 * EXPENSIVE_CALL_FAILED: at most one node runs it. An answer that could not be verified is served
 * only when a node of another group returned the same.
 * Refuses: choosing the next node, waiting and sending (failover.ts).
 */
import { keccak_256 } from '@noble/hashes/sha3';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils';
import { RpcError } from '../jsonrpc/errors.js';
import { textOf } from '../jsonrpc/raw.js';
import type { Verdict } from '../upstream/classify.js';
import type { Upstream } from '../upstream/node.js';
import { eligible } from './select.js';
import { sameJson } from './verified.js';
import {
  attemptsOf,
  CANCELLED_WAY,
  type Attempted,
  type DispatchContext,
  type Progress,
  type Sendable,
} from './way.js';

const ALREADY_KNOWN = /already known|already imported/i;

/**
 * Step 3 of failover.ts: what a node's verdict means for the call: an answer to return, or the next attempt
 * (recording why in `p`).
 */
export function interpretVerdict(
  ctx: DispatchContext,
  call: Sendable,
  p: Progress,
  u: Upstream,
  verdict: Verdict,
  ms: number,
): Attempted | null {
  if (verdict.kind === 'result') return resultFrom(ctx, call, p, u, verdict);
  if (verdict.kind === 'node-error') {
    if (call.rawTransaction !== undefined && p.attempt > 0 && ALREADY_KNOWN.test(verdict.message)) {
      return { outcome: { result: JSON.stringify(transactionHash(call.rawTransaction)) }, upstream: u };
    }
    if (p.nullFrom) return { outcome: { result: 'null' }, upstream: p.nullFrom };
    return { outcome: { nodeError: verdict.error }, upstream: u };
  }
  // The other way of a hedged read answered first (hedge.ts): this way ends here, its answer unused.
  if (verdict.reason === 'cancelled') return CANCELLED_WAY;
  // Every node would send the same oversized answer: no failover, the client narrows its request.
  if (verdict.reason === 'response_too_large') return { outcome: { error: new RpcError('RESPONSE_TOO_LARGE') } };
  // Switchyard holds as many large answers as it may: another node's would be refused alike.
  if (verdict.reason === 'answers_busy')
    return { outcome: { error: new RpcError('ANSWERS_BUSY', { data: { retryAfterSeconds: 1 } }) } };
  // The node may still be running it; the next one would only run it again.
  if (verdict.final === true) {
    ctx.log?.debug(
      { method: call.label, upstream: u.name, reason: verdict.reason, ms: Math.round(ms) },
      'expensive call failed: not run elsewhere',
    );
    return {
      outcome: {
        error: new RpcError('EXPENSIVE_CALL_FAILED', { data: { last: verdict.reason, attempts: p.attempt + 1 } }),
      },
    };
  }
  p.lastReason = verdict.reason;
  if (verdict.error !== undefined) p.lastNodeError = { error: verdict.error, upstream: u };
  if (verdict.reason === 'wrong_answer') wrongAnswer(ctx, u, call, verdict.why);
  if (verdict.reason === 'node_method_missing') refused(ctx, u, call);
  ctx.routing.metrics.recordFailover(verdict.reason);
  ctx.log?.debug(
    { method: call.label, upstream: u.name, reason: verdict.reason, attempt: p.attempt + 1, ms: Math.round(ms) },
    'failover',
  );
  return null;
}

/** A result: returned, or (unverified, or a null that may mean the node lags) the next attempt. */
function resultFrom(
  ctx: DispatchContext,
  call: Sendable,
  p: Progress,
  u: Upstream,
  verdict: Extract<Verdict, { kind: 'result' }>,
): Attempted | null {
  if (verdict.unverified === true) return unverified(ctx, call, p, u, textOf(verdict.result));
  if (
    call.nullMayLag &&
    verdict.result === 'null' &&
    p.nullFrom === undefined &&
    p.attempt + 1 < attemptsOf(ctx, call)
  ) {
    p.nullFrom = u;
    ctx.routing.metrics.recordFailover('null_answer');
    ctx.log?.debug({ method: call.label, upstream: u.name, reason: 'null_answer', attempt: p.attempt + 1 }, 'failover');
    return null;
  }
  return { outcome: { result: verdict.result }, upstream: u };
}

/**
 * An answer that could not be verified: served when it is the same (as parsed JSON) as one another
 * node returned before, that node being of another group (upstreams[].group) where one is left to
 * ask; else kept to compare and the call goes on to another node, whose answer wins if it verifies.
 */
function unverified(ctx: DispatchContext, call: Sendable, p: Progress, u: Upstream, result: string): Attempted | null {
  ctx.routing.metrics.recordUnverified(call.label);
  if (p.unverified !== undefined && sameJson(p.unverified, result) && confirms(ctx, call, p, u))
    return { outcome: { result }, upstream: u, unverified: true };
  if (p.unverified === undefined) {
    p.unverified = result;
    p.unverifiedFrom = u;
  }
  p.lastReason = 'unverified';
  ctx.routing.metrics.recordFailover('unverified');
  ctx.log?.debug({ method: call.label, upstream: u.name, reason: 'unverified', attempt: p.attempt + 1 }, 'failover');
  return null;
}

/**
 * `u`, which returned the same unverifiable answer as the first node, confirms it: it is of another
 * group, or no node of another group is left that the call may still go to. Two nodes of one
 * operator may share one fault (or one liar), so the other group is asked first.
 */
function confirms(ctx: DispatchContext, call: Sendable, p: Progress, u: Upstream): boolean {
  const first = p.unverifiedFrom!.group;
  if (u.group !== first || p.attempt + 1 >= attemptsOf(ctx, call) || ctx.useUpstream !== undefined) return true;
  const left = eligible(ctx.routing.fleet, call.requirement, p.tried);
  return typeof left === 'string' || !left.some((x) => x.group !== first);
}

/** `u`'s answer was wrong (verified.ts): counted, logged, and told to the fleet, which may quarantine it. */
export function wrongAnswer(ctx: DispatchContext, u: Upstream, call: Sendable, why: string | undefined): void {
  ctx.routing.metrics.recordWrongAnswer(u.name, call.label);
  ctx.log?.warn(
    { upstream: u.name, method: call.label, why },
    'wrong answer from upstream: not served, tried elsewhere',
  );
  ctx.routing.fleet.wrongAnswer(u);
}

/** `u` answered -32601 for the call's method: it is not sent it again until its next discovery (upstream/serving.ts). */
function refused(ctx: DispatchContext, u: Upstream, call: Sendable): void {
  if (u.serving.refuse(call.method))
    ctx.log?.info(
      { upstream: u.name, method: call.label },
      'upstream refuses the method as unknown: not sent it until its next discovery',
    );
}

/** "Already known": another copy of the transaction reached the node first. */
export function alreadyKnown(message: string): boolean {
  return ALREADY_KNOWN.test(message);
}

/** keccak256 of the raw signed transaction bytes: its hash, as a node would report it. */
export function transactionHash(raw: string): string {
  return `0x${bytesToHex(keccak_256(hexToBytes(raw.startsWith('0x') ? raw.slice(2) : raw)))}`;
}
