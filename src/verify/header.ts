/**
 * A block header's hash from the members of a block answer: the keccak-256 of the RLP list of its
 * fields in the order of the forks that added them (the 15 fields up to the nonce, then London's
 * base fee, Shanghai's withdrawals root, Cancun's blob gas used, excess blob gas and parent beacon
 * root, Prague's requests hash), each fork's fields where the answer carries them. A member these
 * rules do not know (a later fork's field, or a liar's padding) may be a header field: such a
 * header cannot be hashed (`unknown`), which is not the same as a wrong one.
 */
import { RLP, type Input } from '@ethereumjs/rlp';
import { keccak_256 } from '@noble/hashes/sha3';
import { data, quantity } from './fields.js';

type Field = readonly [member: string, kind: 'data' | 'quantity', size?: number];

/** Every header field, in encoding order. */
const HEADER: readonly Field[] = [
  ['parentHash', 'data', 32],
  ['sha3Uncles', 'data', 32],
  ['miner', 'data', 20],
  ['stateRoot', 'data', 32],
  ['transactionsRoot', 'data', 32],
  ['receiptsRoot', 'data', 32],
  ['logsBloom', 'data', 256],
  ['difficulty', 'quantity'],
  ['number', 'quantity'],
  ['gasLimit', 'quantity'],
  ['gasUsed', 'quantity'],
  ['timestamp', 'quantity'],
  ['extraData', 'data'],
  ['mixHash', 'data', 32],
  ['nonce', 'data', 8],
  ['baseFeePerGas', 'quantity'],
  ['withdrawalsRoot', 'data', 32],
  ['blobGasUsed', 'quantity'],
  ['excessBlobGas', 'quantity'],
  ['parentBeaconBlockRoot', 'data', 32],
  ['requestsHash', 'data', 32],
];

/** The fields up to the nonce are in every header; the forks' fields only where the block has them. */
const ALWAYS = 15;

/**
 * A block answer's members that are not header fields, as the clients write them: the hash, the
 * body (transactions, uncles, withdrawals) and figures derived from the block (size, total
 * difficulty), and `author` (nethermind's name for the miner).
 */
const NOT_HEADER: ReadonlySet<string> = new Set([
  'hash',
  'size',
  'totalDifficulty',
  'transactions',
  'uncles',
  'withdrawals',
  'author',
]);

const KNOWN: ReadonlySet<string> = new Set([...HEADER.map((f) => f[0]), ...NOT_HEADER]);

/** The first member of `block` that is neither a header field nor a known block member, or null. */
export function unknownMember(block: Record<string, unknown>): string | null {
  for (const k in block) if (!KNOWN.has(k)) return k;
  return null;
}

/**
 * The header hash of a block answer whose members are all known (unknownMember is null). A fork's
 * field is left out where the answer has none (or null): an older block. Throws Malformed.
 */
export function headerHash(block: Record<string, unknown>): Uint8Array {
  const fields: Input[] = [];
  for (let i = 0; i < HEADER.length; i++) {
    const [member, kind, size] = HEADER[i]!;
    if (i >= ALWAYS && (block[member] === undefined || block[member] === null)) continue;
    fields.push(kind === 'data' ? data(block, member, size) : quantity(block, member));
  }
  return keccak_256(RLP.encode(fields));
}

/** keccak-256 of RLP([]): the sha3Uncles of a block without uncles. */
export const EMPTY_UNCLES = '0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347';
