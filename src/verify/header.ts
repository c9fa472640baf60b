/**
 * A block header's hash from the members of a block answer: the keccak-256 of the RLP list of its
 * fields in the order of the forks that added them (the 15 fields up to the nonce, then London's
 * base fee, Shanghai's withdrawals root, Cancun's blob gas used, excess blob gas and parent beacon
 * root, Prague's requests hash), each fork's fields where the answer carries them. A member these
 * rules do not know (a later fork's field, or a liar's padding) may be a header field: such a
 * header cannot be hashed (`unknown`), which is not the same as a wrong one.
 */
import { Malformed } from './fields.js';
import { keccakHex } from './keccak.js';

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
 * The header hash of a block answer whose members are all known (unknownMember is null), as
 * lowercase "0x…" text. A fork's field is left out where the answer has none (or null): an older
 * block. Throws Malformed. The RLP is written straight from the members' hex digits: a header is
 * verified on every miss of a block, and this is most of what that costs besides the hash.
 */
export function headerHash(block: Record<string, unknown>): string {
  const digits: string[] = [];
  for (let i = 0; i < HEADER.length; i++) {
    const [member, kind, size] = HEADER[i]!;
    const v = block[member];
    if (i >= ALWAYS && (v === undefined || v === null)) continue;
    if (typeof v !== 'string' || v.charCodeAt(0) !== 0x30 || v.charCodeAt(1) !== 0x78) throw new Malformed(member);
    const d = v.slice(2);
    if (kind === 'data') {
      if (!EVEN_HEX.test(d) || (size !== undefined && d.length !== 2 * size)) throw new Malformed(member);
      digits.push(d);
    } else {
      if (!QUANTITY.test(d)) throw new Malformed(member);
      const q = d.replace(LEADING_ZEROS, '');
      digits.push(q.length % 2 === 1 ? `0${q}` : q);
    }
  }
  return keccakHex(rlpListOfHex(digits));
}

const EVEN_HEX = /^(?:[0-9a-fA-F]{2})*$/;
const QUANTITY = /^[0-9a-fA-F]{1,64}$/;
const LEADING_ZEROS = /^0+/;

/** The RLP encoding of a list of byte strings, each given as its hex digits (an even count, no 0x). */
export function rlpListOfHex(items: readonly string[]): Uint8Array {
  let payload = 0;
  for (const d of items) {
    const n = d.length >> 1;
    payload += n === 1 && Number.parseInt(d, 16) < 0x80 ? 1 : n <= 55 ? 1 + n : 1 + byteLength(n) + n;
  }
  const out = Buffer.allocUnsafe((payload <= 55 ? 1 : 1 + byteLength(payload)) + payload);
  let at = writeLength(out, 0, payload, 0xc0);
  for (const d of items) {
    const n = d.length >> 1;
    if (n === 1 && Number.parseInt(d, 16) < 0x80) out[at++] = Number.parseInt(d, 16);
    else {
      at = writeLength(out, at, n, 0x80);
      at += out.write(d, at, 'hex');
    }
  }
  return out;
}

function byteLength(n: number): number {
  let k = 0;
  for (let m = n; m > 0; m = Math.floor(m / 256)) k++;
  return k;
}

/** RLP's length prefix for `n` bytes of payload, `base` 0x80 for a string and 0xc0 for a list. */
function writeLength(out: Buffer, at: number, n: number, base: number): number {
  if (n <= 55) {
    out[at] = base + n;
    return at + 1;
  }
  const k = byteLength(n);
  out[at++] = base + 55 + k;
  for (let i = k - 1; i >= 0; i--) out[at++] = Math.floor(n / 256 ** i) % 256;
  return at;
}

/** keccak-256 of RLP([]): the sha3Uncles of a block without uncles. */
export const EMPTY_UNCLES = '0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347';
