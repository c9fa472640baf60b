/**
 * Failover: sends one call to the best eligible upstream and, when the answer means "this node
 * can't" (classify.ts), to the next one, up to `maxAttempts`, inside the call's deadline.
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
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/registry.js';
import type { Fleet } from '../upstream/fleet.js';
import type { Verdict } from '../upstream/classify.js';
import type { BytePool } from '../upstream/answer-bytes.js';
import type { CallOptions } from '../upstream/client.js';
import type { Upstream } from '../upstream/node.js';
import { choose, eligible, type Requirement } from './select.js';

export interface ForwardDeps {
  fleet: Fleet;
  metrics: Metrics;
  maxAttempts: number;
  upstreamTimeoutMs: number;
}

export interface Attempted {
  outcome: Outcome;
  /** The upstream whose answer was returned, if any. */
  upstream?: Upstream;
}

export interface ForwardCall {
  method: string;
  label: string;
  paramsJson: string;
  requirement: Requirement;
  deadline: number;
  /**
   * A null answer may mean the node lags: ask once more, of a node at least as far ahead as that
   * one and as `head`, before believing it.
   */
  nullMayLag?: boolean;
  /** The request's head snapshot (what eth_blockNumber told the client). */
  head?: number;
  /** eth_sendRawTransaction: the raw transaction, so "already known" on a retry can answer its hash. */
  rawTransaction?: string;
  /** Per-attempt time limit for this call (routing.methodTimeoutsMs); absent = deps.upstreamTimeoutMs. */
  timeoutMs?: number;
  /** methods/table.ts `expensive`: sent alone, and a timeout is final (upstream/classify.ts expensiveVerdict). */
  expensive?: boolean;
  /** Only these upstreams (filter calls go to the one node that holds the filter). */
  only?: Upstream;
  /** Names of the upstreams tried, for the request log line. */
  trail: string[];
  /** The request's logger: failovers and breaker transitions are written at debug. */
  log?: Logger;
  /** The bytes the call's request may still hold (a split eth_getLogs); past it, RESPONSE_TOO_LARGE. */
  budget?: BytePool;
}

/** How long, and how many times, a call waits for a node to reach the block it needs. */
const BLOCK_WAIT_MS = 2_000;
const MAX_BLOCK_WAITS = 3;

const ALREADY_KNOWN = /already known|already imported/i;

const EXPENSIVE = { expensive: true } as const;

/** What one forward() has learnt so far, across its attempts. */
export interface Progress {
  tried: Upstream[];
  attempt: number;
  waited: number;
  lastNodeError?: { error: string; upstream: Upstream };
  lastReason: string;
  /** The first node that answered null where null may mean it lags. */
  nullFrom?: Upstream;
}

type Candidate = { upstream: Upstream } | { wait: true } | { done: Attempted } | { stop: true };

/**
 * Step 1: the next node to ask, or why there is none: wait for a head (the block exists on a node
 * that failed, others may reach it soon), an answer already decided, or stop.
 */
export function nextCandidate(deps: ForwardDeps, call: ForwardCall, p: Progress): Candidate {
  // The second opinion on a null comes from a node that has every block the client may have seen:
  // one as far behind as the first (a lookup by hash may go to a node a few blocks behind) would
  // turn a receipt the client already got into null.
  const requirement = p.nullFrom ? { ...call.requirement, minHead: Math.max(call.requirement.minHead ?? 0, p.nullFrom.head, call.head ?? 0) } : call.requirement;
  const candidates = call.only ? (call.only.available && !p.tried.includes(call.only) ? [call.only] : 'none healthy') : eligible(deps.fleet, requirement, p.tried);
  if (typeof candidates !== 'string') return { upstream: choose(candidates, call.requirement.stickyKey) };
  if (p.nullFrom) return { done: { outcome: { result: 'null' }, upstream: p.nullFrom } };
  if (p.waited < MAX_BLOCK_WAITS && !call.only && couldCatchUp(deps.fleet, requirement.minHead, p.tried)) return { wait: true };
  if (p.attempt === 0) return { done: { outcome: { error: rpcErrors.noUpstream(candidates) } } };
  return { stop: true };
}

/** Step 2: waits (bounded) until some node reports a new head, rather than answer from an older block. */
export async function waitForHead(deps: ForwardDeps, p: Progress, remainingMs: number): Promise<void> {
  p.waited++;
  await deps.fleet.nextHeadChange(Math.min(remainingMs, BLOCK_WAIT_MS));
}

/**
 * Step 3: what a node's verdict means for the call: an answer to return, or the next attempt
 * (recording why in `p`).
 */
export function interpretVerdict(deps: ForwardDeps, call: ForwardCall, p: Progress, u: Upstream, verdict: Verdict, ms: number): Attempted | null {
  if (verdict.kind === 'result') {
    if (call.nullMayLag && verdict.result === 'null' && p.nullFrom === undefined && p.attempt + 1 < deps.maxAttempts) {
      p.nullFrom = u;
      deps.metrics.recordFailover('null_answer');
      call.log?.debug({ method: call.label, upstream: u.name, reason: 'null_answer', attempt: p.attempt + 1 }, 'failover');
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
  // Every node would send the same oversized answer: no failover, the client narrows its request.
  if (verdict.reason === 'response_too_large') return { outcome: { error: new RpcError('RESPONSE_TOO_LARGE') } };
  // Switchyard holds as many large answers as it may: another node's would be refused alike.
  if (verdict.reason === 'answers_busy') return { outcome: { error: new RpcError('ANSWERS_BUSY', { data: { retryAfterSeconds: 1 } }) } };
  // The node may still be running it; the next one would only run it again.
  if (verdict.final === true) {
    call.log?.debug({ method: call.label, upstream: u.name, reason: verdict.reason, ms: Math.round(ms) }, 'expensive call failed: not run elsewhere');
    return { outcome: { error: new RpcError('EXPENSIVE_CALL_FAILED', { data: { last: verdict.reason, attempts: p.attempt + 1 } }) } };
  }
  p.lastReason = verdict.reason;
  if (verdict.error !== undefined) p.lastNodeError = { error: verdict.error, upstream: u };
  deps.metrics.recordFailover(verdict.reason);
  call.log?.debug({ method: call.label, upstream: u.name, reason: verdict.reason, attempt: p.attempt + 1, ms: Math.round(ms) }, 'failover');
  return null;
}

export function forward(deps: ForwardDeps, call: ForwardCall): Promise<Attempted> {
  return attempt(deps, call, { tried: [], attempt: 0, waited: 0, lastReason: '' });
}

/**
 * The attempts from `p.attempt` on. Written with then() rather than async/await: on the miss path
 * every call of a batch passes here, and each async frame is a promise and a microtask hop more.
 * Also how a call sent together with others (pipeline/outbound.ts) goes on after its first attempt.
 */
export function attempt(deps: ForwardDeps, call: ForwardCall, p: Progress): Promise<Attempted> {
  if (p.attempt >= deps.maxAttempts) return Promise.resolve(exhausted(p));
  const remaining = call.deadline - deps.fleet.now();
  if (remaining <= 0) {
    p.lastReason = 'timeout';
    return Promise.resolve(exhausted(p));
  }
  const next = nextCandidate(deps, call, p);
  if ('done' in next) return Promise.resolve(next.done);
  if ('stop' in next) return Promise.resolve(exhausted(p));
  // Waiting for a head is not an attempt: the same attempt number goes on after it.
  if ('wait' in next) return waitForHead(deps, p, remaining).then(() => attempt(deps, call, p));
  const u = next.upstream;
  p.tried.push(u);
  call.trail.push(u.name);
  const before = u.breaker.state;
  const limit = Math.min(call.timeoutMs ?? deps.upstreamTimeoutMs, remaining);
  return u.call(call.method, call.paramsJson, limit, callOptions(call)).then(({ verdict, ms }) => {
    deps.metrics.recordUpstreamCall(u.name, call.label, verdict.kind === 'retry' ? verdict.reason : verdict.kind, ms / 1000);
    const after = u.breaker.state;
    if (after !== before) call.log?.debug({ upstream: u.name, from: before, to: after }, 'breaker state changed');
    const answer = interpretVerdict(deps, call, p, u, verdict, ms);
    if (answer !== null) return answer;
    p.attempt++;
    return attempt(deps, call, p);
  });
}

/** The upstream client's options for a call: none for most, a shared object for a plain expensive one. */
function callOptions(call: ForwardCall): CallOptions | undefined {
  if (call.budget !== undefined) return { expensive: call.expensive === true, budget: call.budget };
  return call.expensive === true ? EXPENSIVE : undefined;
}

/** Every attempt failed or none was possible: null or a node's error when one answered, else -32002. */
function exhausted(p: Progress): Attempted {
  if (p.nullFrom) return { outcome: { result: 'null' }, upstream: p.nullFrom };
  if (p.lastNodeError) return { outcome: { nodeError: p.lastNodeError.error }, upstream: p.lastNodeError.upstream };
  return {
    outcome: { error: new RpcError('UPSTREAM_FAILED', { data: { attempts: p.tried.length, last: p.lastReason } }) },
  };
}

/**
 * routing.broadcastTransactions: the transaction goes to every routable upstream at once; the first
 * success (or "already known", which means another copy got there) answers. If none succeeds, the
 * last node error is returned verbatim, or -32002 when no node answered.
 */
export async function broadcast(deps: ForwardDeps, call: ForwardCall): Promise<Outcome> {
  const targets = deps.fleet.upstreams.filter((u) => u.available);
  if (targets.length === 0) return { error: rpcErrors.noUpstream('none healthy') };
  const hash = JSON.stringify(transactionHash(call.rawTransaction ?? '0x'));
  let nodeError: string | undefined;
  const attempts = targets.map(async (u): Promise<Outcome> => {
    call.trail.push(u.name);
    const { verdict, ms } = await u.call(call.method, call.paramsJson, Math.min(deps.upstreamTimeoutMs, Math.max(1, call.deadline - deps.fleet.now())));
    deps.metrics.recordUpstreamCall(u.name, call.label, verdict.kind === 'retry' ? verdict.reason : verdict.kind, ms / 1000);
    if (verdict.kind === 'result') return { result: verdict.result };
    if (verdict.kind === 'node-error' && ALREADY_KNOWN.test(verdict.message)) return { result: hash };
    if (verdict.kind === 'node-error') nodeError = verdict.error;
    throw new Error('no success');
  });
  try {
    return await Promise.any(attempts);
  } catch {
    if (nodeError !== undefined) return { nodeError };
    return { error: new RpcError('UPSTREAM_FAILED', { data: { attempts: targets.length, last: 'broadcast' } }) };
  }
}

/** Some untried routable node is below the block the call needs, so it may reach it soon. */
function couldCatchUp(fleet: Fleet, minHead: number | undefined, tried: readonly Upstream[]): boolean {
  if (minHead === undefined) return false;
  return fleet.upstreams.some((u) => u.available && !tried.includes(u) && u.head < minHead);
}

/** keccak256 of the raw signed transaction bytes: its hash, as a node would report it. */
export function transactionHash(raw: string): string {
  return `0x${bytesToHex(keccak_256(hexToBytes(raw.startsWith('0x') ? raw.slice(2) : raw)))}`;
}
