/**
 * The small hex parsers every room needs, in one place: block hashes, and quantities as JSON text
 * or as strings. Heights are kept to 13 hex digits (below 2^53), so they stay exact numbers.
 */

const HASH = /^0x[0-9a-fA-F]{64}$/;
const HEIGHT = /^0x[0-9a-fA-F]{1,13}$/;

/** A 32-byte hash: 0x and 64 hex digits. */
export function isHash(v: unknown): boolean {
  return typeof v === 'string' && HASH.test(v);
}

/** A quantity string ("0x1a") that fits a safe integer, as a number; null otherwise. */
export function heightOf(v: unknown): number | null {
  return typeof v === 'string' && HEIGHT.test(v) ? Number.parseInt(v, 16) : null;
}

/** A JSON quantity result text ("\"0x1a\"") as a number, or null when it is not one. */
export function parseQuantity(raw: string): number | null {
  const t = raw.trim();
  return t.length > 2 && t.startsWith('"') && t.endsWith('"') ? heightOf(t.slice(1, -1)) : null;
}
