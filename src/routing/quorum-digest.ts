/**
 * What a quorum read's answer says (quorum.ts): a digest of it as parsed JSON with members in one
 * order, so two answers agree when their digests are equal, and only the digest need be kept of an
 * answer that opens no new side of the vote.
 */
import { createHash } from 'node:crypto';
import { textOf } from '../jsonrpc/raw.js';
import type { Verdict } from '../upstream/classify.js';

/**
 * What an answer says, as parsed JSON with members in one order: two answers agree when their
 * digests are equal. Only the digest is kept of an answer that does not open a new side. A
 * result's parse made by the upstream client (an object or array under 1 MiB: upstream/answers.ts)
 * is read, not made again.
 */
export function digestOf(v: Extract<Verdict, { kind: 'result' | 'node-error' }>): string {
  const raw = v.kind === 'result' ? textOf(v.result) : v.error;
  let text: string;
  try {
    text = canonical(v.kind === 'result' && v.value !== undefined ? v.value : JSON.parse(raw));
  } catch {
    // Not JSON after all: compared as the bytes it is.
    text = raw;
  }
  return createHash('sha256')
    .update(v.kind === 'result' ? 'r' : 'e')
    .update(text)
    .digest('base64');
}

/** A `null` result's digest. */
export const NULL_DIGEST = digestOf({ kind: 'result', result: 'null' });

/** JSON text with every object's members sorted by name. */
function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
}
