/**
 * Upstream budgets on a call's way (SPEC 4.8): a node whose budget (limits/budget.ts) has no token
 * for a call is passed over for that call, as if it were not eligible; when every eligible node
 * was passed over so, the call gets UPSTREAM_BUDGET at once (never a wait for tokens). Taking a
 * token is asked only of budgeted nodes: with no budget anywhere, no call waits for a promise here.
 * Refuses: counting tokens (limits/budget.ts), which node is eligible (select.ts).
 */
import { RpcError } from '../jsonrpc/errors.js';
import type { Metrics } from '../metrics/registry.js';
import type { Upstream } from '../upstream/node.js';

/** The answer when every node the call could go to was out of budget: retry once the first window refills. */
export function overBudget(nodes: readonly Upstream[]): RpcError {
  let ms = Number.POSITIVE_INFINITY;
  for (const u of nodes) ms = Math.min(ms, u.budget?.msToRefill() ?? 0);
  return new RpcError('UPSTREAM_BUDGET', { data: { retryAfterSeconds: Math.max(1, Math.ceil(ms / 1000)) } });
}

/** The nodes of `targets` that may each get one more call now: every node without a budget, and those a token was taken from. */
export async function funded(targets: readonly Upstream[], metrics: Metrics): Promise<Upstream[]> {
  const granted = await Promise.all(targets.map((u) => (u.budget === null ? true : u.budget.take(1))));
  const out: Upstream[] = [];
  targets.forEach((u, i) => {
    if (granted[i]) out.push(u);
    else metrics.recordBudgetExhausted(u.name);
  });
  return out;
}
