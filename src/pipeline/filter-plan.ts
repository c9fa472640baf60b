/**
 * The plan for a call on a filter (eth_getFilterChanges, eth_getFilterLogs, eth_uninstallFilter):
 * the filter id names the node that holds it (routing/filters.ts), which alone gets the call, once.
 */
import { RpcError } from '../jsonrpc/errors.js';
import type { Call } from '../jsonrpc/parse.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { MethodSpec } from '../methods/table.js';
import { unwrapFilterId } from '../routing/filters.js';
import type { RequestContext } from './context.js';
import type { Plan } from './plan.js';

/** A filter call: to the one node that holds the filter, once. */
export function filterPlan(ctx: RequestContext, call: Call, label: string, spec: MethodSpec): Outcome | Plan {
  const found = unwrapFilterId(call.params[0], ctx.routing.fleet.upstreams);
  if (found === null || !found.upstream.available || found.upstream.shadow)
    return { error: new RpcError('FILTER_NOT_FOUND') };
  const params = [found.nodeId, ...call.params.slice(1)];
  return {
    kind: 'plan',
    index: call.index,
    method: call.method,
    label,
    paramsJson: JSON.stringify(params),
    requirement: {},
    batchable: false,
    nullMayLag: undefined,
    rawTransaction: undefined,
    broadcast: false,
    waitsForReceipt: undefined,
    expensive: spec.expensive,
    held: spec.held,
    hedgeable: false,
    only: found.upstream,
    budget: undefined,
    spec,
    params,
    cache: null,
    gen: ctx.routing.cache.generation,
    provesBlock: false,
    shared: undefined,
    key: undefined,
    trace: undefined,
    quorum: undefined,
  };
}
