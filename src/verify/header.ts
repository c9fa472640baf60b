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
 * lowercase "0x…" text. Throws Malformed.
 */
export function headerHash(block: Record<string, unknown>): string {
  return keccakHex(headerEncoding(block));
}

/**
 * The RLP encoding of a block answer's header (its members all known), the bytes its hash is the
 * keccak-256 of: a view into a buffer reused by the next call. A fork's field is left out where the
 * answer has none (or null): an older block. Throws Malformed. The payload is put together as hex
 * text (each member's digits behind its length prefix) and decoded by one Buffer write, the list's
 * prefix in front: a header is verified on every miss of a block, and this is most of what that
 * costs besides the hash. The write stops at the first pair that is not two hex digits, and the
 * text it read must be ASCII (Buffer's hex decoding reads a character past Latin-1 by its low
 * byte, "\u0130" as "0"): both are told after the write, cheaper than a pattern over the text
 * before it. Text that fails either is written member by member instead, which names the
 * malformed one.
 */
export function headerEncoding(block: Record<string, unknown>): Uint8Array {
  const hex = payloadHex(block);
  if (hex === null) return encodingByMember(block);
  const payload = hex.length >> 1;
  room(LIST_PREFIX_ROOM, payload);
  if (scratch.write(hex, LIST_PREFIX_ROOM, 'hex') !== payload || Buffer.byteLength(hex, 'utf8') !== hex.length)
    return encodingByMember(block);
  const prefix = payload <= 55 ? 1 : 1 + byteLength(payload);
  const start = LIST_PREFIX_ROOM - prefix;
  writeLength(scratch, start, payload, 0xc0);
  return scratch.subarray(start, LIST_PREFIX_ROOM + payload);
}

/** Each byte's two hex digits. */
const HEX_BYTE: readonly string[] = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/**
 * The RLP payload of the header's fields as hex text, or null where a member's digits are not hex
 * (read again member by member to name it). Throws Malformed for a member missing or of the wrong length.
 */
function payloadHex(block: Record<string, unknown>): string | null {
  let hex = '';
  for (let i = 0; i < HEADER.length; i++) {
    const [member, kind, size] = HEADER[i]!;
    const v = block[member];
    if (i >= ALWAYS && (v === undefined || v === null)) continue;
    if (typeof v !== 'string' || v.charCodeAt(0) !== 0x30 || v.charCodeAt(1) !== 0x78) throw new Malformed(member);
    let first = 2;
    if (kind === 'data') {
      if (v.length % 2 === 1 || (size !== undefined && v.length !== 2 + 2 * size)) throw new Malformed(member);
    } else {
      if (v.length < 3 || v.length > 66) throw new Malformed(member);
      while (first < v.length && v.charCodeAt(first) === 0x30) first++;
      if (first === v.length) {
        hex += '80';
        continue;
      }
    }
    const digits = (v.length - first) % 2 === 1 ? `0${v.slice(first)}` : first === 2 ? v.slice(2) : v.slice(first);
    const n = digits.length >> 1;
    if (n === 1) {
      const high = digits.charCodeAt(0) < 128 ? NIBBLE[digits.charCodeAt(0)]! : -1;
      if (high < 0) return null;
      // A byte under 0x80 is its own encoding.
      hex += high < 8 ? digits : `81${digits}`;
    } else if (n <= 55) hex += HEX_BYTE[0x80 + n]! + digits;
    else {
      const k = byteLength(n);
      hex += HEX_BYTE[0xb7 + k]!;
      for (let j = k - 1; j >= 0; j--) hex += HEX_BYTE[Math.floor(n / 256 ** j) % 256]!;
      hex += digits;
    }
  }
  return hex;
}

/** headerEncoding written member by member, each member's digits checked as they are decoded. */
function encodingByMember(block: Record<string, unknown>): Uint8Array {
  let at = LIST_PREFIX_ROOM;
  for (let i = 0; i < HEADER.length; i++) {
    const [member, kind, size] = HEADER[i]!;
    const v = block[member];
    if (i >= ALWAYS && (v === undefined || v === null)) continue;
    if (typeof v !== 'string' || v.charCodeAt(0) !== 0x30 || v.charCodeAt(1) !== 0x78) throw new Malformed(member);
    at = kind === 'data' ? writeData(v, size, member, at) : writeQuantity(v, member, at);
  }
  const payload = at - LIST_PREFIX_ROOM;
  const prefix = payload <= 55 ? 1 : 1 + byteLength(payload);
  const start = LIST_PREFIX_ROOM - prefix;
  writeLength(scratch, start, payload, 0xc0);
  return scratch.subarray(start, at);
}

/** Room kept in front of the payload for the list's prefix (a header's payload is under 2^32 bytes). */
const LIST_PREFIX_ROOM = 5;
/** The buffer headers are encoded in; grown (never shrunk) for a header with a long extraData. */
let scratch = Buffer.allocUnsafe(2048);

/** Room for `n` more bytes at `at`, the bytes written so far kept. */
function room(at: number, n: number): void {
  if (at + n <= scratch.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(scratch.length * 2, at + n));
  scratch.copy(bigger, 0, 0, at);
  scratch = bigger;
}

/** Each hex digit's value by character code, -1 for a character that is not one. */
const NIBBLE = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) NIBBLE[0x30 + c] = c;
for (let c = 0; c < 6; c++) {
  NIBBLE[0x41 + c] = 10 + c;
  NIBBLE[0x61 + c] = 10 + c;
}

function nibble(v: string, i: number, member: string): number {
  const c = v.charCodeAt(i);
  const n = c < 128 ? NIBBLE[c]! : -1;
  if (n < 0) throw new Malformed(member);
  return n;
}

/** DATA "0x…" (hex digits from index 2, an even count, `size` bytes where given) as an RLP string. */
function writeData(v: string, size: number | undefined, member: string, at: number): number {
  const digits = v.length - 2;
  if (digits % 2 === 1 || (size !== undefined && digits !== 2 * size)) throw new Malformed(member);
  return writeDigits(v, 2, digits >> 1, member, at);
}

/** QUANTITY "0x…" (1 to 64 hex digits) as the RLP string of its minimal big-endian bytes. */
function writeQuantity(v: string, member: string, at: number): number {
  if (v.length < 3 || v.length > 66) throw new Malformed(member);
  let first = 2;
  while (first < v.length && v.charCodeAt(first) === 0x30) first++;
  const digits = v.length - first;
  if (digits === 0) {
    room(at, 1);
    scratch[at] = 0x80;
    return at + 1;
  }
  if (digits % 2 === 0) return writeDigits(v, first, digits >> 1, member, at);
  // An odd count: the first byte is its first digit alone.
  const n = (digits + 1) >> 1;
  const high = nibble(v, first, member);
  if (n === 1 && high < 0x80) {
    room(at, 1);
    scratch[at] = high;
    return at + 1;
  }
  at = writePrefix(at, n);
  scratch[at++] = high;
  return writeHex(v, first + 1, n - 1, member, at);
}

/** `n` bytes from the hex digits of `v` at `from` as an RLP string (a byte under 0x80 stands alone). */
function writeDigits(v: string, from: number, n: number, member: string, at: number): number {
  if (n === 1) {
    const b = (nibble(v, from, member) << 4) | nibble(v, from + 1, member);
    if (b < 0x80) {
      room(at, 1);
      scratch[at] = b;
      return at + 1;
    }
  }
  return writeHex(v, from, n, member, writePrefix(at, n));
}

/**
 * `n` bytes from the hex digits of `v` at `from`, at `at` (room made), a pair of digits at a time.
 * Not Buffer's hex decoding: it reads a character past Latin-1 by its low byte ("\u0130" as "0"),
 * so text that is no hex could stand for a header's bytes.
 */
function writeHex(v: string, from: number, n: number, member: string, at: number): number {
  const out = scratch;
  for (let k = 0; k < n; k++, from += 2) {
    const c = v.charCodeAt(from);
    const d = v.charCodeAt(from + 1);
    const high = c < 128 ? NIBBLE[c]! : -1;
    const low = d < 128 ? NIBBLE[d]! : -1;
    if ((high | low) < 0) throw new Malformed(member);
    out[at + k] = (high << 4) | low;
  }
  return at + n;
}

/** The prefix of an RLP string of `n` bytes, with room made for them. */
function writePrefix(at: number, n: number): number {
  room(at, 9 + n);
  return writeLength(scratch, at, n, 0x80);
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
