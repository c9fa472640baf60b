/**
 * The small hex parsers every room needs, in one place: hashes, addresses, quantities as JSON text
 * or as strings, and block heights read from raw answer text; and the one quantity formatter.
 *
 * Two rules for a number, each where it belongs:
 *   - heightOf: a quantity as read (leading zeros allowed), at most 13 hex digits, so below 2^52
 *     and an exact JS number. Heights in answers, cache classes, log range bounds and block counts
 *     use it; a longer value is "not a height" (no chain is near 2^52 blocks), never a rounded one.
 *   - blockNumberOf: a block number as a request may write it (execution-apis `uint`: no leading
 *     zeros, at most 64 bits, what geth accepts). Above 2^53 the number it returns is approximate;
 *     such a number is beyond every head and is only ever compared with heads.
 */

const HASH = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HEIGHT = /^0x[0-9a-fA-F]{1,13}$/;
const BLOCK_NUMBER = /^0x(?:0|[1-9a-fA-F][0-9a-fA-F]{0,15})$/;
const BLOCK_NUMBER_FIELD = /"blockNumber":"0x([0-9a-fA-F]{1,13})"/;
const BLOCK_OR_NUMBER_FIELD = /"(?:blockNumber|number)":"0x([0-9a-fA-F]{1,13})"/;
/** Text JSON.stringify would leave as is: 0x and hex digits (or nothing) after it. */
const HEX_TEXT = /^0x[0-9a-fA-F]*$/;

/** `n` as a JSON-RPC quantity: 0x and lowercase hex digits without leading zeros (26 -> "0x1a"). */
export function toQuantity(n: number | bigint): string {
  return `0x${n.toString(16)}`;
}

/** A 32-byte hash: 0x and 64 hex digits. */
export function isHash(v: unknown): boolean {
  return typeof v === 'string' && HASH.test(v);
}

/** A 20-byte address: 0x and 40 hex digits (any case; the checksum is not judged). */
export function isAddress(v: unknown): v is string {
  return typeof v === 'string' && ADDRESS.test(v);
}

/** Any 0x-prefixed run of hex digits, even empty ("0x"): data, quantities, hashes alike. */
export function isHexText(v: string): boolean {
  return HEX_TEXT.test(v);
}

/** A quantity string ("0x1a") that fits a safe integer, as a number; null otherwise. */
export function heightOf(v: unknown): number | null {
  return typeof v === 'string' && HEIGHT.test(v) ? Number.parseInt(v, 16) : null;
}

/** A block number parameter ("0x0", "0x1a"; not "0x01" nor "0x"), as a number; null otherwise. */
export function blockNumberOf(v: unknown): number | null {
  return typeof v === 'string' && BLOCK_NUMBER.test(v) ? Number.parseInt(v, 16) : null;
}

/** A JSON quantity result text ("\"0x1a\"") as a number, or null when it is not one. */
export function parseQuantity(raw: string): number | null {
  const t = raw.trim();
  return t.length > 2 && t.startsWith('"') && t.endsWith('"') ? heightOf(t.slice(1, -1)) : null;
}

/**
 * The first `"blockNumber":"0x…"` height in raw answer text (a transaction or receipt), without
 * parsing it; with `orNumber`, a block's own `"number"` counts too. null when there is none.
 */
export function heightInText(raw: string, orNumber = false): number | null {
  const m = (orNumber ? BLOCK_OR_NUMBER_FIELD : BLOCK_NUMBER_FIELD).exec(raw);
  return m ? Number.parseInt(m[1]!, 16) : null;
}
