/**
 * One call's way through small named stages: policy -> local answer -> block resolution -> cache
 * -> a decision: the call's outcome now, or a Plan for a node (plan.ts). The pipeline decides and
 * never dispatches: server/front.ts gives a request's plans to routing/dispatch.ts once, and hands
 * their answers back to finish(), the one place an answer is stored, shared with the calls that
 * joined it, bounded and counted. Every call ends in exactly one Outcome for its slot.
 * Refuses: HTTP/WS concerns (server/), batch assembly (server/ + jsonrpc/response.ts), and sending.
 */
import type { Logger } from 'pino';
import type { Call } from '../jsonrpc/parse.js';
import { RpcError, blameOf, rpcErrors } from '../jsonrpc/errors.js';
import type { Outcome } from '../jsonrpc/response.js';
import { METHODS, type MethodSpec } from '../methods/table.js';
import type { CallOutcome } from '../metrics/registry.js';
import type { Attempted } from '../routing/dispatch.js';
import type { QuorumRule } from '../routing/quorum-gate.js';
import type { Requirement } from '../routing/select.js';
import { wrapFilterId } from '../routing/filters.js';
import { filterPlan } from './filter-plan.js';
import { planCache, type CachePlan } from '../cache/index.js';
import type { Shared } from '../cache/coalesce.js';
import { heightInText, heightOf } from '../jsonrpc/hex.js';
import { type JsonText, textOf } from '../jsonrpc/raw.js';
import { resolveBlocks, type Resolution } from './blocks.js';
import { answerLocally } from './local.js';
import { splitLogsRange } from './logs.js';
import type { BytePool } from '../upstream/answer-bytes.js';
import type { PipelineDeps, RequestContext, SubscriptionSession } from './context.js';
import { paramsText, shareKey, type Decision, type Plan } from './plan.js';
import { sampleForShadows } from './shadow.js';

export type { Decision, Plan, Split } from './plan.js';
export type { PipelineDeps, RequestContext, SubscriptionSession } from './context.js';

export class Pipeline {
  constructor(private readonly deps: PipelineDeps) {}

  label(method: string): string {
    return this.deps.policy.label(method);
  }

  /**
   * A snapshot of the fleet head for one request: every call in it sees this block as `latest`
   * (eth_blockNumber's, or a lower one a routable node has when none has that: Fleet.latest).
   */
  context(clientIp: string, timeoutMs: number, log: Logger, session?: SubscriptionSession): RequestContext {
    const d = this.deps;
    return {
      routing: d,
      clientIp,
      started: performance.now(),
      head: d.fleet.latest(),
      deadline: d.fleet.now() + timeoutMs,
      trail: [],
      attempts: 0,
      upstreamFrom: 0,
      upstreamTo: 0,
      log,
      session,
      held: 0,
      // Every field a request may set later is made here, so every context has one shape.
      trace: null,
      reqId: undefined,
      cacheable: undefined,
      answered: undefined,
      copies: undefined,
      skipCache: undefined,
      useUpstream: undefined,
    };
  }

  /**
   * What to do with one call. An outcome is synchronous when nothing needs waiting for (local
   * answers, refusals, memory cache hits), so a cached answer costs no promise and no microtask
   * hop; it is counted and bounded here. A Plan's outcome comes from finish(), a Split's from done().
   */
  decide(ctx: RequestContext, call: Call): Decision {
    const label = ctx.routing.policy.label(call.method);
    let d: Decision;
    try {
      d = this.run(ctx, call, label);
    } catch (err) {
      d = this.crashed(ctx, err, label);
    }
    if (d instanceof Promise) {
      return d.then(
        (o) => this.done(ctx, label, o),
        (err: unknown) => this.done(ctx, label, this.crashed(ctx, err, label)),
      );
    }
    if ('kind' in d) return d;
    return this.done(ctx, label, d);
  }

  /**
   * One chunk of a split eth_getLogs (Split): a call of its own with the budget its answer's bytes
   * are taken from. Its outcome is neither bounded nor counted: the merged answer is (done()).
   */
  decideChunk(ctx: RequestContext, call: Call, budget: BytePool): Plan | Outcome | Promise<Outcome> {
    const d = this.run(ctx, call, ctx.routing.policy.label(call.method), budget);
    // run() splits only a call without a budget: a chunk is never split again.
    if (!(d instanceof Promise) && 'kind' in d && d.kind === 'split')
      throw new Error('a chunk of a split eth_getLogs was split again');
    return d;
  }

  /** A finished call's outcome as the request holds it (the bound), counted once. */
  done(ctx: RequestContext, label: string, outcome: Outcome): Outcome {
    return this.record(label, this.keep(ctx, outcome), ctx.started);
  }

  /**
   * The plans' second-level (Redis) cache lookups, made before they are dispatched; null when no
   * plan has one (no Redis, or no immutable cache plan), so the memory levels' path costs nothing.
   * Each found answer is the plan's outcome (finished); undefined where the plan goes to a node.
   */
  lookupShared(ctx: RequestContext, plans: readonly Plan[]): Promise<(Outcome | undefined)[]> | null {
    if (ctx.skipCache === true) return null;
    const cache = ctx.routing.cache;
    let any = false;
    for (const p of plans) if (p.cache !== null && cache.shared(p.cache)) any = true;
    if (!any) return null;
    return Promise.all(
      plans.map((p) => {
        if (p.cache === null || !cache.shared(p.cache)) return undefined;
        return cache
          .lookupShared(p.cache)
          .then((v) =>
            v === undefined ? undefined : this.finishOne(ctx, p, { outcome: { result: v, cached: true } }),
          );
      }),
    );
  }

  /**
   * The one place a node's answers become the plans' outcomes (in the plans' order): each is
   * stored when its cache plan allows, given to the identical calls that joined it, bounded by the
   * request's maxResponseBytes and counted (results of one method in a run, with one metrics update).
   */
  finish(ctx: RequestContext, plans: readonly Plan[], answers: readonly Attempted[]): Outcome[] {
    const d = ctx.routing;
    const out = new Array<Outcome>(plans.length);
    let runLabel = '';
    let run = 0;
    for (let k = 0; k < plans.length; k++) {
      const plan = plans[k]!;
      const { outcome } = answers[k]!;
      // An answer no rule could verify is served (another node returned the same), never kept.
      if (plan.cache !== null && outcome.result !== undefined && answers[k]!.unverified !== true)
        d.cache.store(plan.cache, outcome.result, plan.gen, d.fleet.finalized);
      const shared = this.afterAnswer(ctx, plan, answers[k]!);
      if (d.shadow !== undefined) sampleForShadows(ctx, d.shadow, plan, answers[k]!);
      if (plan.shared !== undefined) d.cache.settle(plan.key!, plan.shared, shared);
      if (plan.budget !== undefined) {
        out[k] = shared;
        continue;
      }
      const kept = this.keep(ctx, shared);
      out[k] = kept;
      if (kept !== shared || kept.result === undefined) {
        this.record(plan.label, kept, ctx.started);
        continue;
      }
      if (plan.label !== runLabel && run > 0) {
        this.recordResults(runLabel, ctx.started, run);
        run = 0;
      }
      runLabel = plan.label;
      run++;
    }
    if (run > 0) this.recordResults(runLabel, ctx.started, run);
    return out;
  }

  /** A fault on the plans' way to the nodes: each gets -32603, and so do the calls that joined it. */
  failed(ctx: RequestContext, plans: readonly Plan[], err: unknown): Outcome[] {
    ctx.log.error({ err }, 'calls sent to the nodes failed inside the service');
    return plans.map((p) => this.finishOne(ctx, p, { outcome: { error: new RpcError('INTERNAL_ERROR') } }));
  }

  /** finish() for one plan whose answer did not come from a node now (Redis, a fault): nothing to store. */
  private finishOne(ctx: RequestContext, plan: Plan, answer: Attempted): Outcome {
    const outcome = this.afterAnswer(ctx, plan, answer);
    if (plan.shared !== undefined) ctx.routing.cache.settle(plan.key!, plan.shared, outcome);
    return plan.budget !== undefined ? outcome : this.done(ctx, plan.label, outcome);
  }

  /**
   * A call's outcome as the request may hold it: a result that would take the request's results
   * past server.maxResponseBytes is let go and the call gets RESPONSE_TOO_LARGE (each node answer
   * is within upstreams[].maxResponseBytes, but a batch of such answers is one request's memory).
   */
  private keep(ctx: RequestContext, outcome: Outcome): Outcome {
    const max = ctx.routing.maxResponseBytes;
    if (outcome.result === undefined || max === undefined) return outcome;
    if (ctx.held + outcome.result.length > max) return { error: new RpcError('RESPONSE_TOO_LARGE') };
    ctx.held += outcome.result.length;
    return outcome;
  }

  private crashed(ctx: RequestContext, err: unknown, label: string): Outcome {
    ctx.log.error({ err, method: label }, 'call failed inside the pipeline');
    return { error: new RpcError('INTERNAL_ERROR') };
  }

  /** `calls` node results for calls of one method taken up at `started`, recorded at once. */
  private recordResults(label: string, started: number, calls: number): void {
    this.deps.metrics.recordCall(label, 'ok', 'none', (performance.now() - started) / 1000, calls);
  }

  private record(label: string, outcome: Outcome, started: number): Outcome {
    let kind: CallOutcome;
    if (outcome.result !== undefined) kind = outcome.cached ? 'cached' : 'ok';
    else if (outcome.error !== undefined)
      kind = blameOf(outcome.error.reason) === 'client' ? 'client_error' : 'service_error';
    else kind = 'node_error';
    this.deps.metrics.recordCall(label, kind, outcome.error?.reason ?? 'none', (performance.now() - started) / 1000);
    return outcome;
  }

  /** `budget`: the bytes a chunk of a split eth_getLogs may bring (pipeline/logs.ts). */
  private run(ctx: RequestContext, call: Call, label: string, budget?: BytePool): Decision {
    const d = ctx.routing;
    const resolved = d.policy.resolve(call.method);
    if (resolved === null) return { error: rpcErrors.methodNotFound(call.method) };
    if (call.paramsNotArray) return { error: rpcErrors.invalidParams('params must be an array') };
    const { spec } = resolved;
    switch (spec.handling) {
      case 'local':
        return answerLocally(call.method, d.chainId, d.fleet);
      case 'subscription':
        return ctx.session ? ctx.session.call(call) : { error: new RpcError('SUBSCRIPTIONS_NEED_WS') };
      case 'filter-use':
        return filterPlan(ctx, call, label, spec);
      default:
        break;
    }
    if (ctx.head < 0) return { error: rpcErrors.noUpstream('none healthy') };
    // A quorum read's nodes must answer for one block: its tags are pinned to numbers (blocks.ts).
    const rule = spec.handling === 'read' ? d.quorum?.rules.get(call.method) : undefined;
    const res = resolveBlocks(spec, call.params, {
      head: ctx.head,
      maxLagBlocks: d.maxLagBlocks,
      clientKey: ctx.clientIp,
      recentBlocks: d.recentBlocks,
      pinTags: rule === undefined ? undefined : Math.max(0, d.fleet.finalized),
    });
    if (res instanceof RpcError) return { error: res };
    if (spec.filterObject !== undefined && d.logs !== undefined && budget === undefined) {
      const split = splitLogsRange(res.params, spec.filterObject, d.logs);
      if (split instanceof RpcError) return { error: split };
      // Each chunk is a call of its own (its params text is made from its params, not the client's).
      if (split !== null) return { kind: 'split', call, label, chunks: split, maxBytes: d.logs.maxBytes };
    }
    const cacheable = spec.handling === 'read' && !resolved.extension && spec.capability !== 'debug';
    const plan = cacheable
      ? planCache(call.method, spec, res.params, { head: ctx.head, finalized: d.fleet.finalized })
      : null;
    if (plan !== null && ctx.skipCache !== true) {
      const hit = d.cache.lookup(plan);
      if (hit !== undefined) return { result: hit, cached: true };
    }
    // `pending` is each node's own pool: no two nodes need agree on it, so it is no quorum read.
    const quorum = res.pending === true ? undefined : rule;
    const cache = plan === null ? (cacheable ? null : undefined) : plan;
    return this.planFor(ctx, call, label, spec, res, cache, quorum, budget);
  }

  /**
   * The Plan for a call that goes to a node, or the promise of an identical call in flight it
   * joined. `cache`: the cache plan; null when the call may be shared but not kept; undefined when
   * neither (writes, extensions, debug calls).
   */
  private planFor(
    ctx: RequestContext,
    call: Call,
    label: string,
    spec: MethodSpec,
    res: Resolution,
    cache: CachePlan | null | undefined,
    quorum: QuorumRule | undefined,
    budget?: BytePool,
  ): Plan | Promise<Outcome> {
    const d = ctx.routing;
    const requirement = spec.capability ? { ...res.requirement, capability: spec.capability } : res.requirement;
    const paramsJson = paramsText(call, spec, res);
    let shared: Shared<Outcome> | undefined;
    let key: string | undefined;
    if (cache !== undefined && ctx.skipCache !== true) {
      key = shareKey(call.method, requirement, cache, paramsJson);
      const claimed = d.cache.claim<Outcome>(key);
      if (claimed instanceof Promise) return claimed;
      shared = claimed;
    }
    const raw = spec.handling === 'write' && typeof call.params[0] === 'string' ? call.params[0] : undefined;
    return {
      kind: 'plan',
      index: call.index,
      method: call.method,
      label,
      paramsJson,
      requirement,
      // An expensive call goes alone: in an exchange, a slow one would hold every call sharing it.
      // A quorum read goes to several nodes on its own way (routing/quorum.ts).
      batchable:
        spec.handling === 'read' &&
        spec.nullMayLag !== true &&
        spec.expensive !== true &&
        budget === undefined &&
        quorum === undefined,
      nullMayLag: spec.nullMayLag,
      rawTransaction: raw,
      broadcast: raw !== undefined && d.broadcastTransactions && spec.waitsForReceipt !== true,
      waitsForReceipt: spec.waitsForReceipt,
      expensive: spec.expensive,
      held: spec.held,
      hedgeable: hedgeable(call.method, spec, requirement, budget),
      only: undefined,
      budget,
      spec,
      params: res.params,
      cache: cache ?? null,
      gen: d.cache.generation,
      // Only a mined block proves a height: the pending block (head + 1) must not move the fleet head.
      provesBlock: spec.nullMayLag === true && !(spec.block !== undefined && res.params[spec.block] === 'pending'),
      shared,
      key,
      trace: undefined,
      quorum,
    };
  }

  /** What an answer teaches the fleet (a newer block exists), and what it means for filters. */
  private afterAnswer(ctx: RequestContext, plan: Plan, { outcome, upstream }: Attempted): Outcome {
    if (plan.provesBlock && outcome.result !== undefined && upstream) {
      const n = heightIn(outcome.result);
      if (n !== null) ctx.routing.fleet.proveBlock(upstream, n);
    }
    // Filter ids carry their node (routing/filters.ts).
    if (plan.spec.handling === 'filter-new' && outcome.result !== undefined && upstream) {
      const id = wrapFilterId(upstream, textOf(outcome.result));
      return id === null ? outcome : { result: id };
    }
    // The node holding the filter did not answer at all: for the client the filter is gone.
    if (plan.only !== undefined && outcome.error?.reason === 'UPSTREAM_FAILED')
      return { error: new RpcError('FILTER_NOT_FOUND') };
    return outcome;
  }
}

/**
 * The block height an answer names (a block's number, a transaction's block): a large answer's
 * from the members recorded as it was checked, not read again.
 */
function heightIn(result: JsonText): number | null {
  if (typeof result === 'string') return heightInText(result, true);
  const text = result.members.get('number') ?? result.members.get('blockNumber');
  return text === undefined ? null : heightOf(text.slice(1, -1));
}

/**
 * A call a second node may be asked for when the first is late (routing/hedge.ts): a read of the
 * method table's (a forwarded method's nature is unknown: it may write), not expensive (it would
 * run twice) nor held, not sticky to one node (`pending`), not a chunk of a split request.
 */
function hedgeable(method: string, spec: MethodSpec, req: Requirement, budget: BytePool | undefined): boolean {
  return (
    spec.handling === 'read' &&
    METHODS[method] === spec &&
    spec.expensive !== true &&
    spec.held !== true &&
    req.stickyKey === undefined &&
    budget === undefined
  );
}
