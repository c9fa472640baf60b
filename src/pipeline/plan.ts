/**
 * What the pipeline decides for a call that needs a node: one Plan object holding all it knows
 * (what to send and where it may go, for routing/dispatch.ts; the cache plan and coalescing claim,
 * for storing and sharing the answer afterwards), and how its params text is made.
 * Refuses: sending anything (routing/dispatch.ts).
 */
import type { Shared } from '../cache/coalesce.js';
import type { CachePlan } from '../cache/index.js';
import type { Call } from '../jsonrpc/parse.js';
import type { Outcome } from '../jsonrpc/response.js';
import { elementSpan } from '../jsonrpc/scan.js';
import type { MethodSpec } from '../methods/table.js';
import type { Sendable } from '../routing/dispatch.js';
import type { Requirement } from '../routing/select.js';
import type { Resolution } from './blocks.js';

/** A call for a node: what dispatch needs (Sendable), and what its answer then means. */
export interface Plan extends Sendable {
  readonly kind: 'plan';
  /** The call's slot in its request. */
  readonly index: number;
  readonly spec: MethodSpec;
  /** The params after block resolution (`latest` pinned to the request's head). */
  readonly params: readonly unknown[];
  /** Where its answer is kept; null: never kept. */
  readonly cache: CachePlan | null;
  /** The cache generation the plan was made under (an answer fetched across a reorg is not kept). */
  readonly gen: number;
  /** A mined block found in the answer moves that node's head (a null that may lag was checked). */
  readonly provesBlock: boolean;
  /** The coalescing claim (and its key) identical calls may join, ended with the call's outcome. */
  readonly shared: Shared<Outcome> | undefined;
  readonly key: string | undefined;
}

/**
 * An eth_getLogs over routing.maxLogsBlockRange, split in chunks: each chunk is a call of its own
 * (pipeline/logs.ts fetchChunks), within `maxBytes` together.
 */
export interface Split {
  readonly kind: 'split';
  readonly call: Call;
  readonly label: string;
  /** Each chunk's params, in block order. */
  readonly chunks: unknown[][];
  readonly maxBytes: number;
}

/**
 * The pipeline's answer for one call: its outcome now (local answer, refusal, memory cache hit),
 * a Plan for a node, a Split eth_getLogs, or a later outcome (a subscription call, or an identical
 * call in flight it joined).
 */
export type Decision = Outcome | Plan | Split | Promise<Outcome>;

/** Identical reads in flight at once share one upstream call under this key; per-client (sticky) ones per client. */
export function shareKey(method: string, requirement: Requirement, plan: CachePlan | null, paramsJson: string): string {
  return plan?.shareKey ?? `${method}:${requirement.stickyKey ?? ''}:${paramsJson}`;
}

const LATEST_LAST = '"latest"]';

/**
 * The params as JSON text for the node: the client's own text when nothing was rewritten (never
 * parsed and serialised again), the block parameter spliced into it when `latest` was pinned, and
 * a fresh serialisation only for rewritten filter objects.
 */
export function paramsText(call: Call, spec: MethodSpec, res: Resolution): string {
  const text = call.paramsText;
  if (text === undefined) return JSON.stringify(res.params);
  if (!res.rewritten) return text;
  if (spec.block !== undefined && spec.filterObject === undefined) {
    const value = res.params[spec.block];
    // `latest` as the last parameter (most reads): found from the end of the text, with no walk. The
    // text's last element is exactly `"latest"`: a longer string ending so would not parse as `latest`.
    if (
      spec.block === call.params.length - 1 &&
      call.params[spec.block] === 'latest' &&
      typeof value === 'string' &&
      text.endsWith(LATEST_LAST)
    ) {
      return `${text.slice(0, text.length - LATEST_LAST.length)}${JSON.stringify(value)}]`;
    }
    const span = elementSpan(text, spec.block);
    if (span !== undefined && typeof value === 'string')
      return `${text.slice(0, span.start)}${JSON.stringify(value)}${text.slice(span.end)}`;
  }
  return JSON.stringify(res.params);
}
