/**
 * Failover, the steps of a call's way to a node (dispatch.ts starts it): the best eligible upstream
 * and, when the answer means "this node can't" (verdict.ts), the next one, up to `maxAttempts`,
 * inside the call's deadline. A node whose budget has no token for the call is passed over
 * (budget.ts): the call goes to another, or gets UPSTREAM_BUDGET when no node was asked yet; so is
 * a node whose held lane is full for a held call (lane.ts), which gets HELD_LANE_FULL then.
 * When every attempt failed and some node did answer with an error, that last answer is returned
 * verbatim; when none answered, -32002 says why.
 * Refuses: what one node's verdict means for the call (verdict.ts), and the shapes a call's way is
 * made of (way.ts).
 */
import { RpcError, rpcErrors } from '../jsonrpc/errors.js';
import type { Fleet } from '../upstream/fleet.js';
import type { Verdict } from '../upstream/classify.js';
import type { CallOptions } from '../upstream/client.js';
import type { Cancel } from '../upstream/cancel.js';
import type { Upstream } from '../upstream/node.js';
import { overBudget } from './budget.js';
import { heldLaneFull, laneFull } from './lane.js';
import { pinnedNode } from './pinned.js';
import { choose, eligible, willing, type Ineligible } from './select.js';
import { confirmed, judged } from './verified.js';
import { interpretVerdict } from './verdict.js';
import {
  attemptsOf,
  CANCELLED_WAY,
  noteAnswered,
  noteSent,
  timeoutOf,
  type Attempted,
  type DispatchContext,
  type Progress,
  type Sendable,
} from './way.js';

/** How long, and how many times, a call waits for a node to reach the block it needs. */
const BLOCK_WAIT_MS = 2_000;
export const MAX_BLOCK_WAITS = 3;

const EXPENSIVE = { expensive: true } as const;
const HELD = { held: true } as const;
const HELD_EXPENSIVE = { expensive: true, held: true } as const;

type Candidate = { upstream: Upstream } | { wait: true } | { done: Attempted } | { stop: true };

/**
 * Step 1: the next node to ask, or why there is none: wait for a head (the block exists on a node
 * that failed, others may reach it soon), an answer already decided, or stop.
 */
export function nextCandidate(ctx: DispatchContext, call: Sendable, p: Progress): Candidate {
  const fleet = ctx.routing.fleet;
  // The second opinion on a null comes from a node that has every block the client may have seen:
  // one as far behind as the first (a lookup by hash may go to a node a few blocks behind) would
  // turn a receipt the client already got into null.
  const requirement = p.nullFrom
    ? { ...call.requirement, minHead: Math.max(call.requirement.minHead ?? 0, p.nullFrom.head, ctx.head ?? 0) }
    : call.requirement;
  const passed =
    p.overBudget === undefined && p.laneFull === undefined
      ? p.tried
      : [...p.tried, ...(p.overBudget ?? []), ...(p.laneFull ?? [])];
  const pin = ctx.useUpstream;
  const candidates =
    pin !== undefined
      ? pinnedNode(fleet, pin, requirement, passed, call.only)
      : call.only
        ? onlyNode(call.only, passed)
        : eligible(fleet, requirement, passed);
  if (typeof candidates !== 'string') {
    // Nodes that refused the method as unknown are passed over; when every one left has, the
    // answer already had is the answer (the node's -32601, verbatim), else one is asked again.
    const some = willing(candidates, call.method);
    if (some === null && p.attempt > 0) return { stop: true };
    return { upstream: choose(some ?? candidates, call.requirement.stickyKey) };
  }
  if (p.nullFrom) return { done: { outcome: { result: 'null' }, upstream: p.nullFrom } };
  // Only full held lanes or budgets stood in the way before any node was asked: say so at once rather than wait.
  if (p.laneFull !== undefined && p.attempt === 0) return { done: { outcome: { error: heldLaneFull() } } };
  if (p.overBudget !== undefined && p.attempt === 0) return { done: { outcome: { error: overBudget(p.overBudget) } } };
  // A pinned call waits only for its own node to reach the block.
  const mayWait = pin === undefined || candidates === 'the requested upstream lacks the block';
  if (p.waited < MAX_BLOCK_WAITS && !call.only && mayWait && couldCatchUp(fleet, requirement.minHead, passed))
    return { wait: true };
  // Every node held off is said as such even after a failed attempt (the node that just said "too
  // many requests"), unless a node's own error answer is there to return.
  if (p.attempt === 0 || (candidates === 'all held off' && p.lastNodeError === undefined))
    return { done: { outcome: { error: rpcErrors.noUpstream(candidates) } } };
  return { stop: true };
}

/** A call only one node can serve (the node holding its filter): that node, or why not. */
function onlyNode(u: Upstream, tried: readonly Upstream[]): Upstream[] | Ineligible {
  if (!u.available || tried.includes(u)) return 'none healthy';
  return u.heldOff ? 'all held off' : [u];
}

/** Step 2: waits (bounded) until some node reports a new head, rather than answer from an older block. */
export async function waitForHead(ctx: DispatchContext, p: Progress, remainingMs: number): Promise<void> {
  p.waited++;
  await ctx.routing.fleet.nextHeadChange(Math.min(remainingMs, BLOCK_WAIT_MS));
}

/**
 * The attempts from `p.attempt` on: how a call sent alone goes, and how a call sent in an
 * exchange with others goes on after its first attempt (dispatch.ts). Written with then() rather
 * than async/await: on the miss path every call of a batch may pass here, and each async frame is
 * a promise and a microtask hop more.
 */
export function attempt(ctx: DispatchContext, call: Sendable, p: Progress): Promise<Attempted> {
  const r = ctx.routing;
  if (p.cancel?.cancelled === true) return Promise.resolve(CANCELLED_WAY);
  if (p.attempt >= attemptsOf(ctx, call)) return Promise.resolve(exhausted(p));
  const remaining = ctx.deadline - r.fleet.now();
  if (remaining <= 0) {
    p.lastReason = 'timeout';
    return Promise.resolve(exhausted(p));
  }
  const next = nextCandidate(ctx, call, p);
  if ('done' in next) return Promise.resolve(next.done);
  if ('stop' in next) return Promise.resolve(exhausted(p));
  // Waiting for a head is not an attempt: the same attempt number goes on after it.
  if ('wait' in next) return waitForHead(ctx, p, remaining).then(() => attempt(ctx, call, p));
  const u = next.upstream;
  if (laneFull(call.held, u)) return passOver(ctx, call, p, u);
  if (u.budget === null) return send(ctx, call, p, u, remaining);
  return u.budget.take(1).then((granted) => {
    if (!granted) {
      r.metrics.recordBudgetExhausted(u.name);
      (p.overBudget ??= []).push(u);
      return attempt(ctx, call, p);
    }
    // A hedged read's way cancelled while the token was taken sends nothing (hedge.ts counts it
    // unsent) and gives the token back.
    if (p.cancel?.cancelled === true) {
      u.budget!.giveBack(1);
      return CANCELLED_WAY;
    }
    const left = ctx.deadline - r.fleet.now();
    if (left <= 0) return attempt(ctx, call, p);
    // The lane may have filled while the token was taken; checked in the same turn as the call is counted.
    return laneFull(call.held, u) ? passOver(ctx, call, p, u) : send(ctx, call, p, u, left);
  });
}

/** `u`'s held lane is full: the held call goes on to another node (lane.ts), not an attempt. */
function passOver(ctx: DispatchContext, call: Sendable, p: Progress, u: Upstream): Promise<Attempted> {
  ctx.routing.metrics.recordHeldLaneFull(u.name);
  (p.laneFull ??= []).push(u);
  return attempt(ctx, call, p);
}

/** Step 4: the call goes to `u`, and its verdict decides what comes next. */
function send(ctx: DispatchContext, call: Sendable, p: Progress, u: Upstream, remaining: number): Promise<Attempted> {
  const r = ctx.routing;
  p.tried.push(u);
  ctx.trail.push(u.name);
  const before = u.breaker.state;
  const limit = Math.min(timeoutOf(r, call), remaining);
  const span = call.trace?.attempt(u.name);
  if (p.hedge === true) span?.hedge();
  const opts =
    p.cancel !== undefined
      ? cancellableOptions(call, p.cancel, span?.traceparent)
      : span === undefined
        ? callOptions(call)
        : tracedOptions(call, span.traceparent);
  noteSent(ctx, 1);
  return u.call(call.method, call.paramsJson, limit, opts).then(({ verdict: read, ms }) => {
    const verdict = judged(r, call, read);
    span?.end(verdict);
    // Hedge delays are learnt from answers (a result or the node's own error) to calls that may be hedged.
    if (verdict.kind !== 'retry' && call.hedgeable === true) r.hedge?.figures.sample(u, call.label, ms);
    noteAnswered(ctx);
    r.metrics.recordUpstreamCall(
      u.name,
      call.label,
      verdict.kind === 'retry' ? verdict.reason : verdict.kind,
      ms / 1000,
    );
    const after = u.breaker.state;
    if (after !== before) ctx.log?.debug({ upstream: u.name, from: before, to: after }, 'breaker state changed');
    if (verdict.kind === 'result' && verdict.confirm !== undefined)
      return confirmed(r, u, verdict, Math.max(1, ctx.deadline - r.fleet.now())).then((v) =>
        goOn(ctx, call, p, u, v, ms),
      );
    return goOn(ctx, call, p, u, verdict, ms);
  });
}

/** After `u`'s verdict (verified): the answer, or the next attempt. */
export function goOn(
  ctx: DispatchContext,
  call: Sendable,
  p: Progress,
  u: Upstream,
  verdict: Verdict,
  ms: number,
): Attempted | Promise<Attempted> {
  const answer = interpretVerdict(ctx, call, p, u, verdict, ms);
  if (answer !== null) return answer;
  p.attempt++;
  return attempt(ctx, call, p);
}

/** The upstream client's options for a call: none for most, a shared object for a plain expensive or held one. */
export function callOptions(call: Sendable): CallOptions | undefined {
  if (call.budget !== undefined)
    return { expensive: call.expensive === true, held: call.held === true, budget: call.budget };
  if (call.held === true) return call.expensive === true ? HELD_EXPENSIVE : HELD;
  return call.expensive === true ? EXPENSIVE : undefined;
}

/** A traced call's options: one object literal, so the client's reads of them keep one shape. */
export function tracedOptions(call: Sendable, traceparent: string): CallOptions {
  return { expensive: call.expensive === true, held: call.held === true, budget: call.budget, traceparent };
}

/** A hedged read's options (hedge.ts): the way's cancel handle with them. */
function cancellableOptions(call: Sendable, cancel: Cancel, traceparent: string | undefined): CallOptions {
  return { expensive: call.expensive === true, held: call.held === true, budget: call.budget, traceparent, cancel };
}

/** Every attempt failed or none was possible: null or a node's error when one answered, else -32002. */
function exhausted(p: Progress): Attempted {
  if (p.nullFrom) return { outcome: { result: 'null' }, upstream: p.nullFrom };
  if (p.lastNodeError) return { outcome: { nodeError: p.lastNodeError.error }, upstream: p.lastNodeError.upstream };
  // An answer no other node confirmed and none verified is not served (SPEC 4.9).
  if (p.unverified !== undefined) p.lastReason = 'unverified';
  return {
    outcome: { error: new RpcError('UPSTREAM_FAILED', { data: { attempts: p.tried.length, last: p.lastReason } }) },
  };
}

/** Some untried routable node is below the block the call needs, so it may reach it soon. */
export function couldCatchUp(fleet: Fleet, minHead: number | undefined, tried: readonly Upstream[]): boolean {
  if (minHead === undefined) return false;
  return fleet.upstreams.some(
    (u) =>
      u.available && !u.shadow && !u.heldOff && !fleet.cordons.has(u.name) && !tried.includes(u) && u.head < minHead,
  );
}
