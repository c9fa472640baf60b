/**
 * Response text for each slot, and the writer that emits the slots in request order.
 * Results are kept as the raw JSON text a node returned, so a large result is never re-serialised
 * and its numbers never pass through JS numbers.
 */
import type { RpcError } from './errors.js';
import { type JsonText, joinRaw } from './raw.js';

/** What a call produced: a raw `result` text, or an error object (ours or a node's verbatim text). */
export type Outcome =
  | { result: JsonText; error?: undefined; cached?: boolean }
  | { result?: undefined; error: RpcError }
  | { result?: undefined; error?: undefined; nodeError: string };

/** A result passed on as bytes gives the answer as bytes: the envelope's beside the result's, nothing copied. */
export function responseText(id: string, outcome: Outcome): JsonText {
  const result = outcome.result;
  if (typeof result === 'string') return `{"jsonrpc":"2.0","id":${id},"result":${result}}`;
  if (result !== undefined) return joinRaw([`{"jsonrpc":"2.0","id":${id},"result":`, result, '}']);
  if (outcome.error !== undefined) return `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify(outcome.error)}}`;
  return `{"jsonrpc":"2.0","id":${id},"error":${outcome.nodeError}}`;
}

export function errorText(id: string, error: RpcError): string {
  return `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify(error)}}`;
}

/**
 * The body for a finished request: texts are in slot order; undefined marks a notification.
 * A batch gives an array of the non-notification answers; a lone notification gives an empty body.
 * An answer passed on as bytes makes the body bytes.
 */
export function writeBody(batch: boolean, texts: (JsonText | undefined)[]): JsonText {
  // Notifications (undefined) are rare: the texts are joined as they are unless one is there.
  const present = texts.includes(undefined)
    ? texts.filter((t): t is JsonText => t !== undefined)
    : (texts as JsonText[]);
  if (!batch) return present[0] ?? '';
  if (present.length === 0) return '';
  if (present.every((t) => typeof t === 'string')) return `[${present.join(',')}]`;
  const parts: JsonText[] = ['['];
  for (const [k, t] of present.entries()) {
    if (k > 0) parts.push(',');
    parts.push(t);
  }
  parts.push(']');
  return joinRaw(parts);
}
