/**
 * Failover: sends one call to the best eligible upstream and, when the answer means "this node
 * can't" (classify.ts), to the next one, up to `maxAttempts`, inside the call's deadline.
 * Deterministic answers (reverts, invalid params, nonce too low) return at once, verbatim.
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
  /** A null answer may mean the node lags: ask one node at least as far ahead before believing it. */
  nullMayLag?: boolean;
  /** eth_sendRawTransaction: the raw transaction, so "already known" on a retry can answer its hash. */
  rawTransaction?: string;
  /** Only these upstreams (filter calls go to the one node that holds the filter). */
  only?: Upstream;
  /** Names of the upstreams tried, for the request log line. */
  trail: string[];
  /** The request's logger: failovers and breaker transitions are written at debug. */
  log?: Logger;
}

/** How long, and how many times, a call waits for a node to reach the block it needs. */
const BLOCK_WAIT_MS = 2_000;
const MAX_BLOCK_WAITS = 3;

const ALREADY_KNOWN = /already known|already imported/i;

export async function forward(deps: ForwardDeps, call: ForwardCall): Promise<Attempted> {
  const tried = new Set<Upstream>();
  let lastNodeError: { error: string; upstream: Upstream } | undefined;
  let lastReason = '';
  let nullFrom: Upstream | undefined;
  let waited = 0;
  for (let attempt = 0; attempt < deps.maxAttempts; attempt++) {
    const remaining = call.deadline - Date.now();
    if (remaining <= 0) {
      lastReason = 'timeout';
      break;
    }
    const requirement = nullFrom ? { ...call.requirement, minHead: Math.max(call.requirement.minHead ?? 0, nullFrom.head) } : call.requirement;
    const candidates = call.only ? (call.only.available && !tried.has(call.only) ? [call.only] : 'none healthy') : eligible(deps.fleet, requirement, tried);
    if (typeof candidates === 'string') {
      if (nullFrom) return { outcome: { result: 'null' }, upstream: nullFrom };
      // The block exists on a node that just failed or was chosen before the others caught up:
      // wait (bounded) for another node to reach it rather than answer from an older block.
      if (waited < MAX_BLOCK_WAITS && !call.only && couldCatchUp(deps.fleet, requirement.minHead, tried)) {
        waited++;
        await deps.fleet.nextHeadChange(Math.min(remaining, BLOCK_WAIT_MS));
        attempt--;
        continue;
      }
      if (attempt === 0) return { outcome: { error: rpcErrors.noUpstream(candidates) } };
      break;
    }
    const u = choose(candidates, call.requirement.stickyKey);
    tried.add(u);
    call.trail.push(u.name);
    const before = u.breaker.state;
    const { verdict, ms } = await u.call(call.method, call.paramsJson, Math.min(deps.upstreamTimeoutMs, remaining));
    deps.metrics.recordUpstreamCall(u.name, call.label, verdict.kind === 'retry' ? verdict.reason : verdict.kind, ms / 1000);
    const after = u.breaker.state;
    if (after !== before) call.log?.debug({ upstream: u.name, from: before, to: after }, 'breaker state changed');
    if (verdict.kind === 'result') {
      if (call.nullMayLag && verdict.result === 'null' && nullFrom === undefined && attempt + 1 < deps.maxAttempts) {
        nullFrom = u;
        deps.metrics.recordFailover('null_answer');
        call.log?.debug({ method: call.label, upstream: u.name, reason: 'null_answer', attempt: attempt + 1 }, 'failover');
        continue;
      }
      return { outcome: { result: verdict.result }, upstream: u };
    }
    if (verdict.kind === 'node-error') {
      if (call.rawTransaction !== undefined && attempt > 0 && ALREADY_KNOWN.test(verdict.message)) {
        return { outcome: { result: JSON.stringify(transactionHash(call.rawTransaction)) }, upstream: u };
      }
      if (nullFrom) return { outcome: { result: 'null' }, upstream: nullFrom };
      return { outcome: { nodeError: verdict.error }, upstream: u };
    }
    // Every node would send the same oversized answer: no failover, the client narrows its request.
    if (verdict.reason === 'response_too_large') return { outcome: { error: new RpcError('RESPONSE_TOO_LARGE') } };
    lastReason = verdict.reason;
    if (verdict.error !== undefined) lastNodeError = { error: verdict.error, upstream: u };
    deps.metrics.recordFailover(verdict.reason);
    call.log?.debug({ method: call.label, upstream: u.name, reason: verdict.reason, attempt: attempt + 1, ms: Math.round(ms) }, 'failover');
  }
  if (nullFrom) return { outcome: { result: 'null' }, upstream: nullFrom };
  if (lastNodeError) return { outcome: { nodeError: lastNodeError.error }, upstream: lastNodeError.upstream };
  return {
    outcome: { error: new RpcError('UPSTREAM_FAILED', { data: { attempts: tried.size, last: lastReason } }) },
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
    const { verdict, ms } = await u.call(call.method, call.paramsJson, Math.min(deps.upstreamTimeoutMs, Math.max(1, call.deadline - Date.now())));
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
function couldCatchUp(fleet: Fleet, minHead: number | undefined, tried: ReadonlySet<Upstream>): boolean {
  if (minHead === undefined) return false;
  return fleet.upstreams.some((u) => u.available && !tried.has(u) && u.head < minHead);
}

/** keccak256 of the raw signed transaction bytes: its hash, as a node would report it. */
export function transactionHash(raw: string): string {
  return `0x${bytesToHex(keccak_256(hexToBytes(raw.startsWith('0x') ? raw.slice(2) : raw)))}`;
}
