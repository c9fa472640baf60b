/**
 * What a node's answer or failure means for routing, as a verdict: an answer to return, or a
 * failure to retry elsewhere (and whether it counts against the node's health).
 * Owns: the verdict and its retry reasons, and the meaning of a node's error (code and message),
 * of a transport error, and of an expensive or a held call's failure.
 * Refuses: reading the answer body (upstream/answers.ts), retry policy itself (routing/verdict.ts, routing/failover.ts)
 * and breaker bookkeeping (upstream/health.ts).
 */
import type { JsonText } from '../jsonrpc/raw.js';
import type { FAILOVER_REASONS } from '../metrics/labels.js';

export type Verdict =
  /**
   * A usable answer: `result` raw text (a large one as the bytes the node sent: jsonrpc/raw.ts). `unverified`: it holds what the verification rules do not
   * know (routing/verified.ts): served only when another node returns the same. `confirm`: block
   * receipts, verified once that block's header holds their root. `value`: an object or array
   * result as JSON.parse read it with the whole answer (answers.ts), so that verification reads it
   * rather than parsing its text again; the text stays what is served and cached.
   */
  | {
      kind: 'result';
      result: JsonText;
      unverified?: true;
      confirm?: { blockHash: string; receiptsRoot: string };
      value?: unknown;
    }
  /** A node error that is the answer (execution reverted, nonce too low, invalid params...). */
  | { kind: 'node-error'; error: string; code: number; message: string }
  /**
   * The node can't serve this call right now: try another; `health` says if the node itself is
   * failing. `unsent`: the request never left (the connection could not be made). `final`: the
   * call must not run on another node, and says nothing about this one (an expensive call's
   * timeout: client.ts). `holdOff`: the node says "too many requests": it is held off
   * (holdoff.ts), which is no health failure.
   */
  | {
      kind: 'retry';
      reason: RetryReason;
      health: boolean;
      error?: string;
      /** A wrong answer's fault (verify/answer.ts), for the log. */
      why?: string;
      unsent?: true;
      final?: true;
      holdOff?: true;
    };

/**
 * Retry reasons: those after which a call moves on to another node (switchyard_failovers_total's
 * `reason`, metrics/labels.ts FAILOVER_REASONS), and two that end the call at once: every node
 * would send the same oversized answer, and another node's large answer would find the pool as full.
 */
export type RetryReason =
  | 'response_too_large'
  /** The process's pool of large answers being received was full (upstream/answer-bytes.ts). */
  | 'answers_busy'
  /** The caller no longer wanted the answer (a hedged read another node answered first: routing/hedge.ts). */
  | 'cancelled'
  | (typeof FAILOVER_REASONS)[number];

/** A -32005 about the size of what the call asked for, not about how often the node is asked. */
const ASKED_TOO_MUCH = /returned more than|exceeds max results|response size|block range/i;

/** Node error messages meaning "I don't have that block (yet)", not "it doesn't exist". */
const MISSING_BLOCK =
  /header not found|unknown block|block not found|BlockOutOfRange|block number out of range|missing trie node/i;

/**
 * An execution revert, as the clients say it: code 3 (geth, erigon, reth, anvil, nethermind and
 * besu today), or an older client's generic code with a message that starts with its revert words
 * (geth's -32000 "execution reverted" with no data, besu's -32000 "Execution reverted",
 * nethermind's -32015 "VM execution error." / "Reverted", hardhat's "VM Exception"). Only the
 * start is read: what follows is the contract's reason, text the caller chose.
 */
const REVERT_START = /^(?:execution reverted|reverted|vm execution error|error: vm exception|vm exception)/i;
const REVERT_CODES: ReadonlySet<number> = new Set([-32000, -32015, -32603]);

export function isRevert(code: number, message: string): boolean {
  return code === 3 || (REVERT_CODES.has(code) && REVERT_START.test(message));
}

export function classifyNodeError(error: string, code: number, message: string): Verdict {
  // A revert is the call's own answer, the same from every node: returned at once, verbatim,
  // never a health signal. Its message holds the contract's reason ("rate limit", "header not
  // found"), so no pattern below may read it.
  if (isRevert(code, message)) return { kind: 'node-error', error, code, message };
  // -32005 is EIP-1474's "limit exceeded": the node is overloaded, not the call wrong, so it is
  // held off. Except where the limit is on what the call asked for (a provider's eth_getLogs
  // "query returned more than 10000 results"): another node may serve it, and one client's wide
  // query must not hold a node off for every other client.
  if (code === -32005 || /rate limit|too many requests/i.test(message)) {
    return ASKED_TOO_MUCH.test(message)
      ? { kind: 'retry', reason: 'node_limit', health: false, error }
      : { kind: 'retry', reason: 'node_limit', health: false, error, holdOff: true };
  }
  if (code === -32601) return { kind: 'retry', reason: 'node_method_missing', health: false, error };
  if (MISSING_BLOCK.test(message)) return { kind: 'retry', reason: 'node_missing_block', health: false, error };
  return { kind: 'node-error', error, code, message };
}

/** Transport errors raised before the request left: the node never saw the call. */
const NOT_SENT: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** HTTP 429: the node (or the provider in front of it) says "too many requests". */
export const TOO_MANY_REQUESTS: Verdict = { kind: 'retry', reason: 'http_429', health: false, holdOff: true };

/**
 * A call its caller cancelled (upstream/cancel.ts): final, since nobody waits for it, and no
 * health signal: the node was not slow by any measure it can be blamed for.
 */
export const CANCELLED: Verdict = { kind: 'retry', reason: 'cancelled', health: false, final: true };

export function classifyTransport(err: unknown): Verdict {
  const name = (err as { name?: string; code?: string } | null)?.name ?? '';
  const code = (err as { code?: string } | null)?.code ?? '';
  const timedOut =
    name === 'TimeoutError' ||
    name === 'AbortError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT';
  // Over upstreams[].maxResponseBytes: the answer, not the node, is the problem (routing/verdict.ts stops).
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') return { kind: 'retry', reason: 'response_too_large', health: false };
  if (code === 'SWITCHYARD_CANCELLED') return CANCELLED;
  // Switchyard's own pool of large answers was full: nothing to say about the node, nor the call.
  if (code === 'SWITCHYARD_ANSWERS_BUSY') return { kind: 'retry', reason: 'answers_busy', health: false };
  // A connection that could not be made in time: the node never saw the call, and is failing.
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return { kind: 'retry', reason: 'timeout', health: true, unsent: true };
  if (timedOut) return { kind: 'retry', reason: 'timeout', health: true };
  return NOT_SENT.has(code)
    ? { kind: 'retry', reason: 'transport', health: true, unsent: true }
    : { kind: 'retry', reason: 'transport', health: true };
}

/**
 * What an expensive call's failure means (methods/table.ts `expensive`): a timeout once the request
 * was sent, or the connection lost then, leaves the node possibly still running it, and the
 * next node would only run it again (or fall over the same way). So the verdict is final and no
 * health signal: the call's own cost, not the node's failing. Anything else is as for any call.
 */
export function expensiveVerdict(v: Verdict): Verdict {
  if (!heldUp(v)) return v;
  return { kind: 'retry', reason: v.reason, health: false, final: true };
}

/**
 * What a held call's failure means (methods/table.ts `held`: eth_sendRawTransactionSync waiting to
 * be mined, a trace): a timeout, or a connection lost once the request was sent, is the node
 * holding the call as it was designed to, so it is no health signal (no failure, no breaker mark:
 * client.ts). What says the node is failing whatever the call still counts: a connection refused
 * or not made in time, an HTTP 5xx, an unreadable answer. Whether the call goes to another node
 * is left as it was (an expensive call's verdict is final already; eth_sendRawTransactionSync has
 * one attempt).
 */
export function heldVerdict(v: Verdict): Verdict {
  return heldUp(v) && v.health ? { ...v, health: false } : v;
}

/** The node had the call and kept it: a timeout, or the connection lost after the request left. */
function heldUp(v: Verdict): v is Extract<Verdict, { kind: 'retry' }> {
  return v.kind === 'retry' && v.unsent !== true && (v.reason === 'timeout' || v.reason === 'transport');
}
