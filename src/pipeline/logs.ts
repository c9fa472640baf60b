/**
 * eth_getLogs range cap (routing.maxLogsBlockRange). A range over the cap is split into chunks of
 * at most the cap, each an eth_getLogs of its own (so each is routed, cached and coalesced on its
 * own, and the chunks spread over the eligible upstreams), and the answers are concatenated in
 * block order: the same array one node would return for the whole range. With splitting off, or
 * more chunks than maxChunks, the call is refused with -32602 naming the cap.
 * Runs after block resolution: `latest` ends are already the request's head snapshot.
 *
 * What a split call may hold is bounded (routing.maxLogsResponseBytes): at most CHUNKS_AT_ONCE
 * chunks are asked at a time, their answers' bytes are taken from the request's budget as they
 * arrive, and the moment the chunks together pass it the call gets RESPONSE_TOO_LARGE: the chunk
 * being read is cut off, chunks in flight are cut off at their next bytes, and the rest are never
 * asked. So the merged answer stays within the budget, and so do the chunk answers being received
 * (chunks answered from the cache, or shared with an identical call in flight, are counted when
 * they are read).
 */
import { RpcError, rpcErrors } from '../jsonrpc/errors.js';
import { heightOf, toQuantity } from '../jsonrpc/hex.js';
import { arrayInside, type JsonText, joinRaw } from '../jsonrpc/raw.js';
import type { Outcome } from '../jsonrpc/response.js';
import { BytePool } from '../upstream/answer-bytes.js';

export interface LogsRange {
  /** null: no cap. */
  maxBlockRange: number | null;
  split: boolean;
  maxChunks: number;
  /** The most bytes a split call's chunks may bring together (the merged answer's bound). */
  maxBytes: number;
}

/**
 * Chunks of one call asked at once: enough to spread a range over a few nodes, few enough that a
 * call's chunks never crowd out everyone else's calls to the same nodes.
 */
export const CHUNKS_AT_ONCE = 4;

/** A block bound that is a plain number once resolved (`earliest` is 0); tags stay unknown. */
function boundOf(v: unknown): number | null {
  if (v === 'earliest') return 0;
  return heightOf(v);
}

/**
 * The params of each chunk, in block order; null when the call needs no split (within the cap,
 * a blockHash filter, or an end that is not a number); -32602 when it is over the cap and may
 * not be split.
 */
export function splitLogsRange(
  params: readonly unknown[],
  index: number,
  cfg: LogsRange,
): unknown[][] | RpcError | null {
  const f = params[index];
  if (cfg.maxBlockRange === null || f === null || typeof f !== 'object' || Array.isArray(f)) return null;
  const filter = f as Record<string, unknown>;
  if (filter.blockHash !== undefined) return null;
  const from = boundOf(filter.fromBlock);
  const to = boundOf(filter.toBlock);
  if (from === null || to === null || to < from) return null;
  const blocks = to - from + 1;
  if (blocks <= cfg.maxBlockRange) return null;
  const chunks = Math.ceil(blocks / cfg.maxBlockRange);
  if (!cfg.split || chunks > cfg.maxChunks) {
    const limit = cfg.split ? cfg.maxBlockRange * cfg.maxChunks : cfg.maxBlockRange;
    return rpcErrors.invalidParams(`eth_getLogs block range too large: ${blocks} blocks, at most ${limit} allowed`);
  }
  const out: unknown[][] = [];
  for (let start = from; start <= to; start += cfg.maxBlockRange) {
    const end = Math.min(to, start + cfg.maxBlockRange - 1);
    const copy = params.slice();
    copy[index] = { ...filter, fromBlock: toQuantity(start), toBlock: toQuantity(end) };
    out.push(copy);
  }
  return out;
}

/**
 * Asks for the chunks, CHUNKS_AT_ONCE at a time, within `maxBytes` in all; `run` sends one chunk
 * with the budget its answer's bytes are taken from. The merged answer, or the first error met
 * (RESPONSE_TOO_LARGE once the chunks together pass `maxBytes`); after an error no chunk is asked
 * and those in flight are cut off.
 */
export async function fetchChunks(
  chunks: readonly unknown[][],
  maxBytes: number,
  run: (params: unknown[], budget: BytePool) => Promise<Outcome>,
): Promise<Outcome> {
  const budget = new BytePool(maxBytes);
  const parts: Outcome[] = new Array(chunks.length);
  let next = 0;
  let total = 0;
  let failed: Outcome | null = null;
  const fail = (o: Outcome): void => {
    failed ??= o;
    // Every exchange still reading for this call is cut off at its next bytes.
    budget.close();
  };
  const worker = async (): Promise<void> => {
    while (failed === null && next < chunks.length) {
      const k = next++;
      const o = await run(chunks[k]!, budget);
      if (failed !== null) return;
      if (o.result === undefined) return fail(o);
      // Cached and shared answers took nothing from the budget on their way: counted here.
      total += o.result.length;
      if (total > maxBytes) return fail({ error: new RpcError('RESPONSE_TOO_LARGE') });
      parts[k] = o;
    }
  };
  await Promise.all(Array.from({ length: Math.min(CHUNKS_AT_ONCE, chunks.length) }, worker));
  return failed ?? mergeLogs(parts);
}

/**
 * The chunks' answers as one: their arrays concatenated in order, or the first error as it came.
 * Large chunks stay the bytes their nodes sent: the merged answer is those bytes side by side.
 */
export function mergeLogs(parts: readonly Outcome[]): Outcome {
  const items: JsonText[] = [];
  let raw = false;
  for (const p of parts) {
    if (p.result === undefined) return p;
    const body = elements(p.result);
    if (body === null)
      return {
        error: new RpcError('UPSTREAM_FAILED', {
          data: { why: 'eth_getLogs chunk answered with something other than an array' },
        }),
      };
    if (body === '') continue;
    if (typeof body !== 'string') raw = true;
    items.push(body);
  }
  if (!raw) return { result: `[${items.join(',')}]` };
  const joined: JsonText[] = ['['];
  for (const [k, item] of items.entries()) {
    if (k > 0) joined.push(',');
    joined.push(item);
  }
  joined.push(']');
  return { result: joinRaw(joined) };
}

/** The text of an array's elements ('' when it has none); null when the text is not an array. */
function elements(result: JsonText): JsonText | null {
  if (typeof result !== 'string') {
    const inner = arrayInside(result);
    return inner === null ? null : inner.isBlank() ? '' : inner;
  }
  const text = result.trim();
  if (!text.startsWith('[') || !text.endsWith(']')) return null;
  return text.slice(1, -1).trim();
}
