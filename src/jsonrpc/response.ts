/**
 * Response text for each slot, and the writer that emits the slots in request order.
 * Results are kept as the raw JSON text a node returned, so a large result is never re-serialised
 * and its numbers never pass through JS numbers.
 */
import type { RpcError } from './errors.js';

/** What a call produced: a raw `result` text, or an error object (ours or a node's verbatim text). */
export type Outcome =
  | { result: string; error?: undefined; cached?: boolean }
  | { result?: undefined; error: RpcError }
  | { result?: undefined; error?: undefined; nodeError: string };

export function responseText(id: string, outcome: Outcome): string {
  if (outcome.result !== undefined) return `{"jsonrpc":"2.0","id":${id},"result":${outcome.result}}`;
  if (outcome.error !== undefined) return `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify(outcome.error)}}`;
  return `{"jsonrpc":"2.0","id":${id},"error":${outcome.nodeError}}`;
}

export function errorText(id: string, error: RpcError): string {
  return responseText(id, { error });
}

/**
 * The body for a finished request: texts are in slot order; undefined marks a notification.
 * A batch gives an array of the non-notification answers; a lone notification gives an empty body.
 */
export function writeBody(batch: boolean, texts: (string | undefined)[]): string {
  // Notifications (undefined) are rare: the texts are joined as they are unless one is there.
  const present = texts.includes(undefined) ? texts.filter((t): t is string => t !== undefined) : (texts as string[]);
  if (!batch) return present[0] ?? '';
  if (present.length === 0) return '';
  return `[${present.join(',')}]`;
}
