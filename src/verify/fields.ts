/**
 * An answer's hex members as the bytes its RLP encoding holds: data exactly as written (hashes,
 * addresses, extra data, input), quantities as big-endian bytes without leading zeros (0 is no
 * bytes). A member that is not hex of its kind makes the answer unreadable: the node's wrong answer.
 */

/** A member is missing or not what its kind allows: the answer cannot be what it claims to be. */
export class Malformed extends Error {
  constructor(readonly member: string) {
    super(`malformed ${member}`);
  }
}

const HEX_DIGITS = /^(?:[0-9a-fA-F]{2})*$/;
const QUANTITY_DIGITS = /^[0-9a-fA-F]{1,64}$/;
const EMPTY = new Uint8Array(0);

function bytesOfDigits(digits: string): Uint8Array {
  return Buffer.from(digits, 'hex');
}

/** DATA: "0x" and an even number of hex digits, as its bytes; `size`: the length it must have. */
export function data(o: Record<string, unknown>, member: string, size?: number): Uint8Array {
  const v = o[member];
  if (typeof v !== 'string' || !v.startsWith('0x')) throw new Malformed(member);
  const digits = v.slice(2);
  if (!HEX_DIGITS.test(digits) || (size !== undefined && digits.length !== 2 * size)) throw new Malformed(member);
  return bytesOfDigits(digits);
}

/** QUANTITY: "0x" and hex digits, as its value's minimal big-endian bytes (at most 32). */
export function quantity(o: Record<string, unknown>, member: string): Uint8Array {
  const v = o[member];
  if (typeof v !== 'string' || !v.startsWith('0x')) throw new Malformed(member);
  let digits = v.slice(2);
  if (!QUANTITY_DIGITS.test(digits)) throw new Malformed(member);
  let i = 0;
  while (i < digits.length && digits.charCodeAt(i) === 0x30) i++;
  digits = digits.slice(i);
  if (digits.length === 0) return EMPTY;
  return bytesOfDigits(digits.length % 2 === 1 ? `0${digits}` : digits);
}

/** An address, or no bytes where the member is null (a contract creation's `to`). */
export function addressOrNull(o: Record<string, unknown>, member: string): Uint8Array {
  return o[member] === null || o[member] === undefined ? EMPTY : data(o, member, 20);
}

/** The member as an array, or Malformed. */
export function list(o: Record<string, unknown>, member: string): unknown[] {
  const v = o[member];
  if (!Array.isArray(v)) throw new Malformed(member);
  return v;
}

/** The value as an object (members by name), or Malformed. */
export function record(v: unknown, what: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Malformed(what);
  return v as Record<string, unknown>;
}

/** Bytes as lowercase "0x…" text, for comparing with an answer's hash. */
export function hexOf(b: Uint8Array): string {
  return `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;
}

/** A QUANTITY member's value, for comparing two members written with or without leading zeros. */
export function quantityValue(o: Record<string, unknown>, member: string): bigint {
  quantity(o, member);
  return BigInt(o[member] as string);
}
