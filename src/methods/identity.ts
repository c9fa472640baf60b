/**
 * What an answer must say about the thing it was asked for: a block asked by number carries that
 * number, a block asked by hash that hash, a transaction or receipt asked by hash that hash. An
 * answer that says otherwise is a node's wrong answer (a bug, a bad proxy in front of it, a lie):
 * never served, never cached, the call tried elsewhere (upstream/client.ts), and a cached value
 * read back from a shared Redis is held to the same rule (cache/index.ts).
 * Refuses: judging anything else in an answer (a node can always lie about state).
 */
import type { JsonText } from '../jsonrpc/raw.js';
import { objectAt } from '../jsonrpc/scan.js';
import { blockNumberOf, heightOf, isHash } from '../jsonrpc/hex.js';

/** A top-level member the answer object must hold, as a quantity or as a hash (any case). */
export interface Identity {
  member: string;
  quantity?: number;
  hash?: string;
}

/** The methods whose answers carry what they were asked for, and which param is it. */
const BY_METHOD = new Map<string, { member: string; kind: 'number' | 'hash' }>([
  ['eth_getBlockByNumber', { member: 'number', kind: 'number' }],
  ['eth_getBlockByHash', { member: 'hash', kind: 'hash' }],
  ['eth_getTransactionByHash', { member: 'hash', kind: 'hash' }],
  ['eth_getTransactionReceipt', { member: 'transactionHash', kind: 'hash' }],
]);

/** What the answer to `method(params)` must carry; null when nothing is checked (other methods, tags). */
export function identityOf(method: string, params: readonly unknown[]): Identity | null {
  const rule = BY_METHOD.get(method);
  if (rule === undefined) return null;
  const v = params[0];
  if (rule.kind === 'hash') return isHash(v) ? { member: rule.member, hash: (v as string).toLowerCase() } : null;
  if (v === 'earliest') return { member: rule.member, quantity: 0 };
  const n = blockNumberOf(v);
  return n === null || n > Number.MAX_SAFE_INTEGER ? null : { member: rule.member, quantity: n };
}

/** identityOf from the params as JSON text, parsed only for the methods it checks. */
export function identityOfText(method: string, paramsJson: string): Identity | null {
  if (!BY_METHOD.has(method)) return null;
  let params: unknown;
  try {
    params = JSON.parse(paramsJson);
  } catch {
    return null;
  }
  return Array.isArray(params) ? identityOf(method, params) : null;
}

/**
 * Whether a result (raw JSON text, already valid JSON) carries `id`: null (not found) always
 * does; anything else must be an object whose member holds exactly that value.
 */
export function answerCarries(id: Identity, result: JsonText): boolean {
  if (typeof result !== 'string') return result.startsWith(0x7b) && carries(id, result.members.get(id.member));
  if (result === 'null') return true;
  if (result.charCodeAt(0) !== 0x7b) return false;
  const span = objectAt(result, 0, [id.member]).members.get(id.member);
  return span !== undefined && carries(id, result.slice(span.start, span.end));
}

/**
 * Whether a member's text (a large result's, recorded as it was checked: jsonrpc/check.ts) holds
 * exactly the value asked for.
 */
function carries(id: Identity, text: string | undefined): boolean {
  if (text === undefined) return false;
  if (text.length < 2 || text.charCodeAt(0) !== 0x22 || text.charCodeAt(text.length - 1) !== 0x22) return false;
  const value = text.slice(1, -1);
  if (id.hash !== undefined) return value.toLowerCase() === id.hash;
  return heightOf(value) === id.quantity;
}
