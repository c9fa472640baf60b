/**
 * routing.broadcastTransactions: a raw transaction goes to every routable upstream (no shadow) not held off at once; the
 * first success (or "already known", which means another copy got there) answers. If none
 * succeeds, the last node error is returned verbatim, or -32002 when no node answered. A node out
 * of budget gets no copy; when every node is, UPSTREAM_BUDGET.
 * Reached through dispatch.ts only (a plan with `broadcast`).
 */
import { RpcError, rpcErrors } from '../jsonrpc/errors.js';
import type { Outcome } from '../jsonrpc/response.js';
import { funded, overBudget } from './budget.js';
import { alreadyKnown, transactionHash } from './verdict.js';
import { noteAnswered, noteSent, type Attempted, type DispatchContext, type Sendable } from './way.js';

export async function broadcast(ctx: DispatchContext, call: Sendable): Promise<Attempted> {
  const { fleet, metrics, upstreamTimeoutMs } = ctx.routing;
  const healthy = fleet.upstreams.filter((u) => u.available);
  if (healthy.length === 0) return { outcome: { error: rpcErrors.noUpstream('none healthy') } };
  // A shadow never gets a client's transaction: it would be a second, unasked-for sender.
  const live = healthy.filter((u) => !u.shadow);
  if (live.length === 0) return { outcome: { error: rpcErrors.noUpstream('only shadow nodes') } };
  const uncordoned = live.filter((u) => !fleet.cordons.has(u.name));
  if (uncordoned.length === 0) return { outcome: { error: rpcErrors.noUpstream('all cordoned') } };
  const routable = uncordoned.filter((u) => !u.heldOff);
  if (routable.length === 0) return { outcome: { error: rpcErrors.noUpstream('all held off') } };
  // Each copy is a call to its node: a node out of budget gets none.
  const targets = routable.some((u) => u.budget !== null) ? await funded(routable, metrics) : routable;
  if (targets.length === 0) return { outcome: { error: overBudget(routable) } };
  const hash = JSON.stringify(transactionHash(call.rawTransaction ?? '0x'));
  let nodeError: string | undefined;
  const attempts = targets.map(async (u): Promise<Outcome> => {
    ctx.trail.push(u.name);
    // Each copy is an attempt: a CLIENT span of the call's when traced, and counted for the diagnostic headers.
    const span = call.trace?.attempt(u.name);
    noteSent(ctx, 1);
    const { verdict, ms } = await u.call(
      call.method,
      call.paramsJson,
      Math.min(upstreamTimeoutMs, Math.max(1, ctx.deadline - fleet.now())),
      span === undefined ? undefined : { traceparent: span.traceparent },
    );
    span?.end(verdict);
    noteAnswered(ctx);
    metrics.recordUpstreamCall(u.name, call.label, verdict.kind === 'retry' ? verdict.reason : verdict.kind, ms / 1000);
    if (verdict.kind === 'result') return { result: verdict.result };
    if (verdict.kind === 'node-error' && alreadyKnown(verdict.message)) return { result: hash };
    if (verdict.kind === 'node-error') nodeError = verdict.error;
    throw new Error('no success');
  });
  try {
    return { outcome: await Promise.any(attempts) };
  } catch {
    if (nodeError !== undefined) return { outcome: { nodeError } };
    return {
      outcome: { error: new RpcError('UPSTREAM_FAILED', { data: { attempts: targets.length, last: 'broadcast' } }) },
    };
  }
}
