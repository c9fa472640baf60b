/**
 * The root of an ordered trie: the Merkle Patricia trie whose keys are RLP(index) and whose values
 * are the items' encodings, which is what a block's transactionsRoot, receiptsRoot and
 * withdrawalsRoot commit to. Built in one pass over the items, synchronously, hashing each node
 * once: @ethereumjs/mpt computes the same roots (a test holds this to it) but through its node
 * database, one awaited put per item, about ten times the cost on a block of 200 transactions.
 */
import { RLP, type Input } from '@ethereumjs/rlp';
import { keccak } from './keccak.js';

type Node = Input[];

/** The root of the trie of `values` keyed by RLP(index). */
export function orderedTrieRoot(values: readonly Uint8Array[]): Uint8Array {
  if (values.length === 0) return keccak(RLP.encode(new Uint8Array(0)));
  const keys = values.map((_, i) => nibbles(RLP.encode(i)));
  // Ordered by key so the items under one branch slot lie side by side.
  const order = keys.map((_, i) => i).sort((a, b) => compare(keys[a]!, keys[b]!));
  const root = build(
    order.map((i) => keys[i]!),
    order.map((i) => values[i]!),
    0,
  );
  return keccak(RLP.encode(root));
}

function build(keys: readonly Uint8Array[], values: readonly Uint8Array[], depth: number): Node {
  if (keys.length === 1) return [hexPrefix(keys[0]!.subarray(depth), true), values[0]!];
  const shared = sharedLength(keys, depth);
  if (shared > 0) {
    const below = build(keys, values, depth + shared);
    return [hexPrefix(keys[0]!.subarray(depth, depth + shared), false), reference(below)];
  }
  const branch: Input[] = new Array(17).fill(new Uint8Array(0));
  let from = 0;
  // A key that ends here holds the branch's value (no RLP(index) key is a prefix of another, but
  // the trie's rule is kept).
  if (keys[0]!.length === depth) {
    branch[16] = values[0]!;
    from = 1;
  }
  while (from < keys.length) {
    const slot = keys[from]!.at(depth)!;
    let to = from + 1;
    while (to < keys.length && keys[to]![depth] === slot) to++;
    branch[slot] = reference(build(keys.slice(from, to), values.slice(from, to), depth + 1));
    from = to;
  }
  return branch;
}

/** A child as its parent holds it: inline when its encoding is under 32 bytes, else its hash. */
function reference(node: Node): Input {
  const encoded = RLP.encode(node);
  return encoded.length < 32 ? node : keccak(encoded);
}

/** How many nibbles from `depth` every key shares. */
function sharedLength(keys: readonly Uint8Array[], depth: number): number {
  // Sorted keys: what the first and the last share, all share.
  const a = keys[0]!;
  const b = keys[keys.length - 1]!;
  let n = 0;
  while (depth + n < a.length && depth + n < b.length && a[depth + n] === b[depth + n]) n++;
  return n;
}

function nibbles(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length * 2);
  for (let i = 0; i < bytes.length; i++) {
    out[2 * i] = bytes[i]! >> 4;
    out[2 * i + 1] = bytes[i]! & 15;
  }
  return out;
}

/** The yellow paper's hex-prefix encoding of a path, with the leaf flag. */
function hexPrefix(path: Uint8Array, leaf: boolean): Uint8Array {
  const odd = path.length % 2;
  const out = new Uint8Array(1 + (path.length >> 1));
  const flag = (leaf ? 2 : 0) + odd;
  out[0] = (flag << 4) | (odd === 1 ? path[0]! : 0);
  for (let i = odd, j = 1; i < path.length; i += 2, j++) out[j] = (path[i]! << 4) | path[i + 1]!;
  return out;
}

function compare(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
