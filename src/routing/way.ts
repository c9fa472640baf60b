/**
 * The shapes of a call's way to a node, shared by every way of sending it (failover.ts, dispatch.ts,
 * hedge.ts, quorum.ts, broadcast.ts): what a call needs of the service (RoutingDeps), what the calls
 * of one request share (DispatchContext), one call as routing sees it (Sendable), what its way has
 * learnt across attempts (Progress), and what it ends with (Attempted); with how many nodes it may
 * be sent to and how long each may take.
 * Refuses: choosing, sending and judging: those are the ways' own.
 */
import type { Logger } from 'pino';
import { RpcError } from '../jsonrpc/errors.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { Metrics } from '../metrics/registry.js';
import type { BytePool } from '../upstream/answer-bytes.js';
import type { Cancel } from '../upstream/cancel.js';
import type { Fleet } from '../upstream/fleet.js';
import type { Upstream } from '../upstream/node.js';
import type { CallTrace, RequestTrace } from '../tracing/index.js';
import type { HedgeRoute } from './hedge-figures.js';
import type { QuorumDeps, QuorumRule } from './quorum-gate.js';
import type { Requirement } from './select.js';
import type { MethodTimeouts } from './timeouts.js';

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

/** What a cancelled way of a hedged read ends with (hedge.ts): never served, the other way's answer is. */
export const CANCELLED_WAY: Attempted = {
  outcome: { error: new RpcError('UPSTREAM_FAILED', { data: { attempts: 0, last: 'cancelled' } }) },
};

/** How many nodes the call may be sent to: one for a call that must not run twice or has one node. */
export function attemptsOf(ctx: DispatchContext, call: Sendable): number {
  return call.waitsForReceipt === true || call.only !== undefined ? 1 : ctx.routing.maxAttempts;
}

/** How long one node may take to answer the call. */
export function timeoutOf(r: RoutingDeps, call: Sendable): number {
  if (call.waitsForReceipt === true) return r.sendSyncTimeoutMs ?? r.upstreamTimeoutMs;
  return r.timeouts?.of(call.method) ?? r.upstreamTimeoutMs;
}
