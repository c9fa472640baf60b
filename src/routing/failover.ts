/**
 * Failover, the steps of a call's way to a node (dispatch.ts starts it): the best eligible upstream
 * and, when the answer means "this node can't" (classify.ts), the next one, up to `maxAttempts`,
 * inside the call's deadline. A node whose budget has no token for the call is passed over
 * (budget.ts): the call goes to another, or gets UPSTREAM_BUDGET when no node was asked yet; so is
 * a node whose held lane is full for a held call (lane.ts), which gets HELD_LANE_FULL then.
 * Deterministic answers (reverts, invalid params, nonce too low) return at once, verbatim.
 * An expensive call (methods/table.ts) that timed out or lost its connection once sent is
 * answered at once with EXPENSIVE_CALL_FAILED: at most one node runs it.
 * When every attempt failed and some node did answer with an error, that last answer is returned
 * verbatim; when none answered, -32002 says why.
 */
import { keccak_256 } from '@noble/hashes/sha3';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils';
import { RpcError, rpcErrors } from '../jsonrpc/errors.js';
import type { Outcome } from '../jsonrpc/response.js';
import { textOf } from '../jsonrpc/raw.js';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/registry.js';
import type { Fleet } from '../upstream/fleet.js';
import type { Verdict } from '../upstream/classify.js';
import type { BytePool } from '../upstream/answer-bytes.js';
import type { CallOptions } from '../upstream/client.js';
import type { Cancel } from '../upstream/cancel.js';
import type { Upstream } from '../upstream/node.js';
import type { CallTrace, RequestTrace } from '../tracing/index.js';
import { overBudget } from './budget.js';
import type { HedgeRoute } from './hedge-figures.js';
import { heldLaneFull, laneFull } from './lane.js';
import { pinnedNode } from './pinned.js';
import { choose, eligible, willing, type Ineligible, type Requirement } from './select.js';
import type { QuorumDeps, QuorumRule } from './quorum-gate.js';
import type { MethodTimeouts } from './timeouts.js';
import { confirmed, judged, sameJson } from './verified.js';

/** What a call needs of the service to reach a node: the fleet, the metrics, and the routing settings. */
export interface RoutingDeps {
  fleet: Fleet;
  metrics: Metrics;
  maxAttempts: number;
  upstreamTimeoutMs: number;
  /** Per-method attempt timeouts (routing.methodTimeoutsMs); absent = upstreamTimeoutMs for every method. */
  timeouts?: MethodTimeouts;
  /** eth_sendRawTransactionSync's per-attempt timeout; absent = upstreamTimeoutMs. */
  sendSyncTimeoutMs?: number;
  /** routing.verify.enabled: node answers are verified (verified.ts); absent = on. */
  verify?: boolean;
  /** routing.quorum (quorum.ts); absent when no rule is configured. */
  quorum?: QuorumDeps;
  /** routing.hedge (hedge.ts); absent = hedging off. */
  hedge?: HedgeRoute;
}

/** What the calls of one request share on their way: the settings they started with, the deadline, the head. */
export interface DispatchContext {
  routing: RoutingDeps;
  deadline: number;
  /** The request's head snapshot (what eth_blockNumber told the client). */
  head?: number;
  /** Names of the upstreams tried, for the request log line. */
  trail: string[];
  /** The request's logger: failovers and breaker transitions are written at debug. */
  log?: Logger;
  /** The request's trace (tracing/); absent when it is not traced. */
  trace?: RequestTrace | null;
  /** X-Switchyard-Use-Upstream (server/directives.ts): the one node this request's calls may go to (pinned.ts). */
  useUpstream?: string;
  /**
   * For the diagnostic headers: calls sent to nodes (an exchange of n calls counts n), when the
   * first left and the last answer came (performance.now()), and the nodes whose answers were returned.
   */
  attempts?: number;
  upstreamFrom?: number;
  upstreamTo?: number;
  answered?: string[];
  /** X-Switchyard-Quorum: `k/n` of each quorum call of the request (quorum.ts), in the order they were decided. */
  quorum?: string[];
  /** The request's id (HTTP x-request-id), for lines logged after its answer. */
  reqId?: string;
}

/** `n` calls leave for a node now (the diagnostic headers' attempts and upstream time). */
export function noteSent(ctx: DispatchContext, n: number): void {
  ctx.attempts = (ctx.attempts ?? 0) + n;
  if (!ctx.upstreamFrom) ctx.upstreamFrom = performance.now();
}

export function noteAnswered(ctx: DispatchContext): void {
  ctx.upstreamTo = performance.now();
}

export interface Attempted {
  outcome: Outcome;
  /** The upstream whose answer was returned, if any. */
  upstream?: Upstream;
  /** The answer could not be verified, and another node returned the same: served, never cached. */
  unverified?: true;
}

/** One call as routing sees it: what to send, where it may go, and how it must be sent. */
export interface Sendable {
  method: string;
  label: string;
  paramsJson: string;
  requirement: Requirement;
  /** A plain read: it may leave in one exchange with other calls of its request (dispatch.ts). */
  batchable?: boolean;
  /**
   * A null answer may mean the node lags: ask once more, of a node at least as far ahead as that
   * one and as the request's head, before believing it.
   */
  nullMayLag?: boolean;
  /** eth_sendRawTransaction: the raw transaction, so "already known" on a retry can answer its hash. */
  rawTransaction?: string;
  /** routing.broadcastTransactions: the raw transaction goes to every routable node at once (broadcast.ts). */
  broadcast?: boolean;
  /**
   * eth_sendRawTransactionSync: the node may have taken the transaction before a timeout or a
   * dropped connection, so sending it again elsewhere would be blind. One attempt, with
   * routing.sendRawTransactionSyncTimeoutMs; the client looks the hash up if it fails.
   */
  waitsForReceipt?: boolean;
  /** methods/table.ts `expensive`: sent alone, and a timeout is final (upstream/classify.ts expensiveVerdict). */
  expensive?: boolean;
  /**
   * methods/table.ts `held`: sent on the node's held lane (upstreams[].heldConnections); a node
   * whose lane is full is passed over, and the call gets HELD_LANE_FULL when every one was (lane.ts).
   */
  held?: boolean;
  /** Only this upstream, one attempt (filter calls go to the one node that holds the filter). */
  only?: Upstream;
  /** The bytes the call's request may still hold (a split eth_getLogs); past it, RESPONSE_TOO_LARGE. */
  budget?: BytePool;
  /** The call's span when its request is traced: each attempt is a CLIENT span under it. */
  trace?: CallTrace;
  /** routing.quorum: asked of several nodes and answered once enough agree (quorum.ts). */
  quorum?: QuorumRule;
  /**
   * A read of the method table's that may be asked of a second node when the first is late
   * (hedge.ts): no write, filter, expensive, held or sticky (`pending`) call, no split chunk.
   */
  hedgeable?: boolean;
}

/** How long, and how many times, a call waits for a node to reach the block it needs. */
const BLOCK_WAIT_MS = 2_000;
export const MAX_BLOCK_WAITS = 3;

const ALREADY_KNOWN = /already known|already imported/i;

/** What a cancelled way of a hedged read ends with (hedge.ts): never served, the other way's answer is. */
const CANCELLED_WAY: Attempted = {
  outcome: { error: new RpcError('UPSTREAM_FAILED', { data: { attempts: 0, last: 'cancelled' } }) },
};

const EXPENSIVE = { expensive: true } as const;
const HELD = { held: true } as const;
const HELD_EXPENSIVE = { expensive: true, held: true } as const;

/** What one call's way to a node has learnt so far, across its attempts. */
export interface Progress {
  tried: Upstream[];
  attempt: number;
  waited: number;
  lastNodeError?: { error: string; upstream: Upstream };
  lastReason: string;
  /** The first node that answered null where null may mean it lags. */
  nullFrom?: Upstream;
  /** Nodes passed over because their budget had no token for the call (budget.ts); not attempts. */
  overBudget?: Upstream[];
  /** Nodes passed over because their held lane was full (lane.ts); not attempts. */
  laneFull?: Upstream[];
  /** The first answer that could not be verified (verified.ts): served only if another node's is the same. */
  unverified?: string;
  /** The node that gave it: the node that confirms it is of another group where there is one. */
  unverifiedFrom?: Upstream;
  /** A hedged read's way (hedge.ts): cancelled once the other way answered; its calls may be cut off. */
  cancel?: Cancel;
  /** This way is the hedge itself (hedge.ts): its attempt's span says so. */
  hedge?: true;
}

/** A call's way before its first attempt. */
export function fresh(): Progress {
  return { tried: [], attempt: 0, waited: 0, lastReason: '' };
}

type Candidate = { upstream: Upstream } | { wait: true } | { done: Attempted } | { stop: true };

/** How many nodes the call may be sent to: one for a call that must not run twice or has one node. */
export function attemptsOf(ctx: DispatchContext, call: Sendable): number {
  return call.waitsForReceipt === true || call.only !== undefined ? 1 : ctx.routing.maxAttempts;
}

/** How long one node may take to answer the call. */
export function timeoutOf(r: RoutingDeps, call: Sendable): number {
  if (call.waitsForReceipt === true) return r.sendSyncTimeoutMs ?? r.upstreamTimeoutMs;
  return r.timeouts?.of(call.method) ?? r.upstreamTimeoutMs;
}

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
 * Step 3: what a node's verdict means for the call: an answer to return, or the next attempt
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
  const { metrics } = ctx.routing;
  if (verdict.kind === 'result') {
    if (verdict.unverified === true) return unverified(ctx, call, p, u, textOf(verdict.result));
    if (
      call.nullMayLag &&
      verdict.result === 'null' &&
      p.nullFrom === undefined &&
      p.attempt + 1 < attemptsOf(ctx, call)
    ) {
      p.nullFrom = u;
      metrics.recordFailover('null_answer');
      ctx.log?.debug(
        { method: call.label, upstream: u.name, reason: 'null_answer', attempt: p.attempt + 1 },
        'failover',
      );
      return null;
    }
    return { outcome: { result: verdict.result }, upstream: u };
  }
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
  metrics.recordFailover(verdict.reason);
  ctx.log?.debug(
    { method: call.label, upstream: u.name, reason: verdict.reason, attempt: p.attempt + 1, ms: Math.round(ms) },
    'failover',
  );
  return null;
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

/** "Already known": another copy of the transaction reached the node first. */
export function alreadyKnown(message: string): boolean {
  return ALREADY_KNOWN.test(message);
}

/** keccak256 of the raw signed transaction bytes: its hash, as a node would report it. */
export function transactionHash(raw: string): string {
  return `0x${bytesToHex(keccak_256(hexToBytes(raw.startsWith('0x') ? raw.slice(2) : raw)))}`;
}
