/**
 * Which answered reads are copied to shadow upstreams (routing/shadow.ts sends them): a sample
 * (routing.shadowSampleRate) of reads a regular node answered with a result, and only reads whose
 * answer is fixed by what they ask: a block parameter that is a number or a hash (`latest` counts:
 * it was pinned to the request's head number before the call left), an eth_getLogs range of
 * numbers or a blockHash, or a lookup by hash (block, transaction, receipt) that found something.
 * Reads at `pending`, `safe`, `finalized` or `earliest`, and reads with no block at all (gas price,
 * client version, peer count), may differ between two good nodes: they are never copied.
 * Refuses: sending and comparing (routing/shadow.ts).
 */
import { blockNumberOf, heightInText, isHash } from '../jsonrpc/hex.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { Attempted } from '../routing/dispatch.js';
import type { ShadowCopy } from '../routing/shadow.js';
import type { Upstream } from '../upstream/node.js';
import type { RequestContext, ShadowDeps, ShadowSampling } from './context.js';
import type { Plan } from './plan.js';

/** A client's result longer than this is not copied: it is held until the shadow answers. */
export const SHADOW_MAX_RESULT_CHARS = 1024 * 1024;

/** A read a regular node answered, kept on the request for the shadows when sampled (Pipeline.finish). */
export function sampleForShadows(ctx: RequestContext, shadow: ShadowDeps, plan: Plan, answer: Attempted): void {
  const timeoutMs = ctx.routing.timeouts?.of(plan.method) ?? ctx.routing.upstreamTimeoutMs;
  const copy = shadowCopy(plan, answer.outcome, answer.upstream, shadow, timeoutMs);
  if (copy !== null) (ctx.copies ??= []).push(copy);
}

/** Once the request's answer is written (server/front.ts): its sampled reads go to the shadows. */
export function copyToShadows(ctx: RequestContext): void {
  const shadow = ctx.routing.shadow;
  if (ctx.copies === undefined || shadow === undefined) return;
  shadow.reads.later(ctx.copies, shadow.maxInFlight, ctx.routing.maxLagBlocks, ctx.reqId);
  ctx.copies = undefined;
}

/** The copy of an answered plan for the shadows, or null when it is not sampled or not comparable. */
export function shadowCopy(
  plan: Plan,
  outcome: Outcome,
  from: Upstream | undefined,
  sampling: ShadowSampling,
  timeoutMs: number,
): ShadowCopy | null {
  const result = outcome.result;
  if (result === undefined || outcome.cached === true || from === undefined || from.shadow) return null;
  // Split eth_getLogs chunks (budget) and filter calls (only) are parts of other calls, not reads of their own.
  if (plan.spec.handling !== 'read' || plan.budget !== undefined || plan.only !== undefined) return null;
  if (typeof result !== 'string' || result.length > SHADOW_MAX_RESULT_CHARS) return null;
  if ((sampling.random ?? Math.random)() >= sampling.sampleRate) return null;
  const block = pinnedBlock(plan, result);
  if (block === undefined) return null;
  return {
    method: plan.method,
    label: plan.label,
    paramsJson: plan.paramsJson,
    result,
    block,
    needs: plan.requirement,
    expensive: plan.expensive === true,
    held: plan.held === true,
    timeoutMs,
  };
}

/** The block a read's answer is fixed at: a number, null for a hash, undefined when it is not fixed. */
function pinnedBlock(plan: Plan, result: string): number | null | undefined {
  const { spec, params } = plan;
  if (spec.block !== undefined) return blockRef(params[spec.block]);
  if (spec.filterObject !== undefined) {
    const f = params[spec.filterObject] as Record<string, unknown> | null | undefined;
    if (f === null || typeof f !== 'object') return undefined;
    if (isHash(f.blockHash)) return null;
    const from = blockNumberOf(f.fromBlock);
    const to = blockNumberOf(f.toBlock);
    return from === null || to === null ? undefined : to;
  }
  // A lookup by hash that found nothing may be a node not there yet: not compared.
  if ((spec.cache === 'hash' || spec.cache === 'tx') && result !== 'null') return heightInText(result, true);
  return undefined;
}

function blockRef(v: unknown): number | null | undefined {
  if (typeof v === 'string') return isHash(v) ? null : (blockNumberOf(v) ?? undefined);
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as { blockHash?: unknown; blockNumber?: unknown };
    if (isHash(o.blockHash)) return null;
    return blockNumberOf(o.blockNumber) ?? undefined;
  }
  return undefined;
}
