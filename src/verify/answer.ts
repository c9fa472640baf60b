/**
 * What a node's answer commits to, checked (SPEC 4.9): a block's header hash recomputed from its
 * fields, and with full transactions each transaction's hash and the transactions root (and the
 * withdrawals root where it has withdrawals); a transaction's hash from its signed fields; a
 * block's receipts against each other and the root they make, which the block's header must then
 * hold (routing/verified.ts asks the node for it). That the answer is about what was asked (the
 * hash or number) is methods/identity.ts's check, made on every answer by the upstream client.
 * Refuses: anything a block does not commit to (a node can still lie about state, total
 * difficulty, a transaction's `from` or where it was included).
 */
import { keccakIs } from './keccak.js';
import { RLP } from '@ethereumjs/rlp';
import { blockNumberOf, isHash } from '../jsonrpc/hex.js';
import { data, hexOf, list, Malformed, quantity, quantityValue, record } from './fields.js';
import { EMPTY_UNCLES, headerEncoding, unknownMember } from './header.js';
import { receiptEncoding } from './receipt.js';
import { transactionEncoding } from './transaction.js';
import { orderedTrieRoot } from './trie.js';

export type Check =
  | { is: 'verified' }
  /** The answer contradicts itself or what was asked: the node's wrong answer. */
  | { is: 'wrong'; why: string }
  /** It holds what these rules do not know (a header member, a transaction type): cannot be checked. */
  | { is: 'unverified'; why: string }
  /** Receipts that agree with each other: verified once block `blockHash`'s header holds `receiptsRoot`. */
  | { is: 'receipts'; blockHash: string; receiptsRoot: string };

const VERIFIED: Check = { is: 'verified' };

/** The root of an empty trie, keccak-256 of RLP(""): a block without transactions (or withdrawals) has it. */
export const EMPTY_TRIE = '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421';

/** The methods whose answers are checked here, and how. */
const CHECKS: ReadonlyMap<string, (result: unknown, paramsJson: string) => Check> = new Map([
  ['eth_getBlockByNumber', (r: unknown) => checkBlock(record(r, 'block'))],
  ['eth_getBlockByHash', (r: unknown) => checkBlock(record(r, 'block'))],
  ['eth_getTransactionByHash', (r: unknown) => checkTransaction(record(r, 'transaction'))],
  ['eth_getBlockReceipts', (r: unknown, paramsJson: string) => checkReceipts(list({ r }, 'r'), paramsJson)],
]);

/** Whether answers to `method` are checked here at all (a cheap test before any parsing). */
export function isVerified(method: string): boolean {
  return CHECKS.has(method);
}

/**
 * The check of `result` (raw JSON text of a node's result) to `method(params)`. `value`: that text
 * as JSON.parse reads it, where the answer was already parsed (upstream/answers.ts): a header check
 * is then a third cheaper, its parse being a third of what it cost (test/bench/verify.ts).
 */
export function checkAnswer(method: string, paramsJson: string, result: string, value?: unknown): Check {
  const check = CHECKS.get(method);
  if (check === undefined || result === 'null') return VERIFIED;
  try {
    return check(value === undefined ? (JSON.parse(result) as unknown) : value, paramsJson);
  } catch (err) {
    return { is: 'wrong', why: err instanceof Malformed ? err.message : 'unreadable' };
  }
}

function checkBlock(b: Record<string, unknown>): Check {
  const unknown = unknownMember(b);
  if (unknown !== null) return { is: 'unverified', why: `unknown header member ${unknown.slice(0, 64)}` };
  if (!keccakIs(headerEncoding(b), b.hash)) return { is: 'wrong', why: 'header hash' };
  const hash = lower(b.hash);
  if (Array.isArray(b.uncles) && b.uncles.length === 0 && lower(b.sha3Uncles) !== EMPTY_UNCLES)
    return { is: 'wrong', why: 'sha3Uncles' };
  const txs = list(b, 'transactions');
  if (txs.length === 0) {
    if (lower(b.transactionsRoot) !== EMPTY_TRIE) return { is: 'wrong', why: 'transactionsRoot' };
  } else if (typeof txs[0] === 'object') {
    const checked = checkBody(txs, hash, b);
    if (checked !== VERIFIED) return checked;
  } else if (!txs.every(isHash)) return { is: 'wrong', why: 'transactions' };
  if (Array.isArray(b.withdrawals) && b.withdrawalsRoot !== undefined && b.withdrawalsRoot !== null) {
    // No withdrawals (every block of a chain without a beacon chain, as anvil's) is the empty root, known.
    const root =
      b.withdrawals.length === 0 ? EMPTY_TRIE : hexOf(orderedTrieRoot(b.withdrawals.map(withdrawalEncoding)));
    if (root !== lower(b.withdrawalsRoot)) return { is: 'wrong', why: 'withdrawalsRoot' };
  }
  return VERIFIED;
}

/** A block's full transactions: each one's hash and place, and the root they make. */
function checkBody(txs: readonly unknown[], hash: string, b: Record<string, unknown>): Check {
  const number = quantityValue(b, 'number');
  const encodings: Uint8Array[] = [];
  for (let i = 0; i < txs.length; i++) {
    const tx = record(txs[i], 'transactions');
    const encoded = transactionEncoding(tx);
    if (encoded === null) return { is: 'unverified', why: 'transaction type' };
    if (!keccakIs(encoded, tx.hash)) return { is: 'wrong', why: 'transaction hash' };
    if (
      lower(tx.blockHash) !== hash ||
      quantityValue(tx, 'blockNumber') !== number ||
      quantityValue(tx, 'transactionIndex') !== BigInt(i)
    )
      return { is: 'wrong', why: 'transaction place' };
    encodings.push(encoded);
  }
  if (hexOf(orderedTrieRoot(encodings)) !== lower(b.transactionsRoot)) return { is: 'wrong', why: 'transactionsRoot' };
  return VERIFIED;
}

function checkTransaction(tx: Record<string, unknown>): Check {
  const encoded = transactionEncoding(tx);
  if (encoded === null) return { is: 'unverified', why: 'transaction type' };
  return keccakIs(encoded, tx.hash) ? VERIFIED : { is: 'wrong', why: 'transaction hash' };
}

/**
 * A block's receipts: one block (the one asked, by hash or number), each in its place, and the
 * root of their encodings. An empty list asked by number names no block to confirm it against.
 */
function checkReceipts(receipts: readonly unknown[], paramsJson: string): Check {
  const asked = askedBlock(paramsJson);
  if (receipts.length === 0)
    return asked.hash === undefined ? VERIFIED : { is: 'receipts', blockHash: asked.hash, receiptsRoot: EMPTY_TRIE };
  const first = record(receipts[0], 'receipts');
  const blockHash = hexOf(data(first, 'blockHash', 32));
  const number = quantityValue(first, 'blockNumber');
  if (asked.hash !== undefined && asked.hash !== blockHash) return { is: 'wrong', why: 'blockHash' };
  if (asked.number !== undefined && number !== BigInt(asked.number)) return { is: 'wrong', why: 'blockNumber' };
  const encodings: Uint8Array[] = [];
  for (let i = 0; i < receipts.length; i++) {
    const r = record(receipts[i], 'receipts');
    if (lower(r.blockHash) !== blockHash || quantityValue(r, 'blockNumber') !== number)
      return { is: 'wrong', why: 'receipt block' };
    if (quantityValue(r, 'transactionIndex') !== BigInt(i)) return { is: 'wrong', why: 'receipt place' };
    const encoded = receiptEncoding(r);
    if (encoded === null) return { is: 'unverified', why: 'receipt type' };
    encodings.push(encoded);
  }
  return { is: 'receipts', blockHash, receiptsRoot: hexOf(orderedTrieRoot(encodings)) };
}

/** The block an eth_getBlockReceipts names: a hash, a number, or neither (a tag). */
function askedBlock(paramsJson: string): { hash?: string; number?: number } {
  const params = JSON.parse(paramsJson) as unknown;
  const v = Array.isArray(params) ? params[0] : undefined;
  const named = typeof v === 'object' && v !== null ? (v as { blockHash?: unknown }).blockHash : v;
  if (isHash(named)) return { hash: (named as string).toLowerCase() };
  if (v === 'earliest') return { number: 0 };
  const n = blockNumberOf(v);
  return n === null ? {} : { number: n };
}

function withdrawalEncoding(entry: unknown): Uint8Array {
  const w = record(entry, 'withdrawals');
  return RLP.encode([
    quantity(w, 'index'),
    quantity(w, 'validatorIndex'),
    data(w, 'address', 20),
    quantity(w, 'amount'),
  ]);
}

function lower(v: unknown): string {
  return typeof v === 'string' ? v.toLowerCase() : '';
}
