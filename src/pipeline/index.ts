/**
 * One call's way through small named stages: policy -> local answer -> block resolution -> route
 * and forward. Every call ends in exactly one Outcome for its slot, whatever happens inside.
 * Refuses: HTTP/WS concerns (server/) and batch assembly (server/ + jsonrpc/response.ts).
 */
import type { Logger } from 'pino';
import type { Call } from '../jsonrpc/parse.js';
import { RpcError, blameOf, rpcErrors } from '../jsonrpc/errors.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { MethodPolicy } from '../methods/policy.js';
import type { MethodSpec } from '../methods/table.js';
import type { Metrics, CallOutcome } from '../metrics/registry.js';
import { broadcast, forward, type Attempted, type ForwardDeps } from '../routing/forward.js';
import { unwrapFilterId, wrapFilterId } from '../routing/filters.js';
import type { Fleet } from '../upstream/fleet.js';
import { planCache, type CachePlan, type ResponseCache } from '../cache/index.js';
import type { Shared } from '../cache/coalesce.js';
import { elementSpan } from '../jsonrpc/scan.js';
import { heightInText } from '../jsonrpc/hex.js';
import type { Requirement } from '../routing/select.js';
import { resolveBlocks, type Resolution } from './blocks.js';
import { answerLocally } from './local.js';
import { fetchChunks, splitLogsRange, type LogsRange } from './logs.js';
import type { BytePool } from '../upstream/answer-bytes.js';
import { Outbound } from './outbound.js';
import type { MethodTimeouts } from '../routing/timeouts.js';

export { Outbound } from './outbound.js';

/** handle()'s answer for a call it gave to the request's Outbound: its outcome is written to its slot there. */
export const SENT_TOGETHER = Symbol('sent together');
type Handled = Outcome | Promise<Outcome> | typeof SENT_TOGETHER;

/** What a request shares among its calls: who asked, and the one head snapshot of the batch. */
export interface RequestContext {
  clientIp: string;
  /** performance.now() when the request's calls were taken up: each call's latency counts from here. */
  started: number;
  head: number;
  deadline: number;
  trail: string[];
  log: Logger;
  /** The WebSocket connection's subscriptions; absent over HTTP. */
  session?: SubscriptionSession;
  /** Characters of results the request holds so far (bounded by server.maxResponseBytes). */
  held: number;
}

/** What answers eth_subscribe/eth_unsubscribe for one connection (subscriptions/). */
export interface SubscriptionSession {
  call(call: Call): Outcome | Promise<Outcome>;
}

export interface PipelineDeps extends ForwardDeps {
  fleet: Fleet;
  policy: MethodPolicy;
  metrics: Metrics;
  chainId: number;
  maxLagBlocks: number;
  recentBlocks: number;
  broadcastTransactions: boolean;
  cache: ResponseCache;
  /** eth_getLogs range cap (pipeline/logs.ts); absent = no cap. */
  logs?: LogsRange;
  /** eth_sendRawTransactionSync's per-attempt timeout; absent = upstreamTimeoutMs. */
  sendSyncTimeoutMs?: number;
  /** Per-method attempt timeouts (routing.methodTimeoutsMs); absent = upstreamTimeoutMs for every method. */
  timeouts?: MethodTimeouts;
  /** The results of one request's calls together (server.maxResponseBytes); absent = no bound. */
  maxResponseBytes?: number;
}

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
    return { clientIp, started: performance.now(), head: this.deps.fleet.latest(), deadline: this.deps.fleet.now() + timeoutMs, trail: [], log, session, held: 0 };
  }

  /**
   * Where a request's reads that go to the nodes are gathered, to be sent together (outbound.ts):
   * handle() adds to it, the caller sends it once every call was handled.
   */
  outbound(ctx: RequestContext, outcomes: unknown[]): Outbound {
    return new Outbound(this.deps, ctx, outcomes, this.recordCall, this.recordResults, (o) => this.keep(ctx, o));
  }

  /**
   * A call's outcome as the request may hold it: a result that would take the request's results
   * past server.maxResponseBytes is let go and the call gets RESPONSE_TOO_LARGE (each node answer
   * is within upstreams[].maxResponseBytes, but a batch of such answers is one request's memory).
   */
  readonly keep = (ctx: RequestContext, outcome: Outcome): Outcome => {
    const max = this.deps.maxResponseBytes;
    if (outcome.result === undefined || max === undefined) return outcome;
    if (ctx.held + outcome.result.length > max) return { error: new RpcError('RESPONSE_TOO_LARGE') };
    ctx.held += outcome.result.length;
    return outcome;
  };

  /**
   * One call's outcome. Synchronous when nothing needs waiting for (local answers, refusals,
   * memory cache hits), so a cached answer costs no promise and no microtask hop. With an
   * `outbound`, a plain read that goes to a node is added to it and SENT_TOGETHER is returned.
   */
  handle(ctx: RequestContext, call: Call, outbound?: Outbound): Handled {
    const label = this.deps.policy.label(call.method);
    let outcome: Handled;
    try {
      outcome = this.run(ctx, call, label, outbound);
    } catch (err) {
      outcome = this.crashed(ctx, err, label);
    }
    if (outcome === SENT_TOGETHER) return outcome;
    if (outcome instanceof Promise) {
      return outcome.then(
        (o) => this.record(label, this.keep(ctx, o), ctx.started),
        (err: unknown) => this.record(label, this.crashed(ctx, err, label), ctx.started),
      );
    }
    return this.record(label, this.keep(ctx, outcome), ctx.started);
  }

  private crashed(ctx: RequestContext, err: unknown, label: string): Outcome {
    ctx.log.error({ err, method: label }, 'call failed inside the pipeline');
    return { error: new RpcError('INTERNAL_ERROR') };
  }

  private readonly recordCall = (label: string, outcome: Outcome, started: number): Outcome => this.record(label, outcome, started);

  /** `calls` node results for calls of one method taken up at `started`, recorded at once. */
  private readonly recordResults = (label: string, started: number, calls: number): void =>
    this.deps.metrics.recordCall(label, 'ok', 'none', (performance.now() - started) / 1000, calls);

  private record(label: string, outcome: Outcome, started: number): Outcome {
    let kind: CallOutcome;
    if (outcome.result !== undefined) kind = outcome.cached ? 'cached' : 'ok';
    else if (outcome.error !== undefined) kind = blameOf(outcome.error.reason) === 'client' ? 'client_error' : 'service_error';
    else kind = 'node_error';
    this.deps.metrics.recordCall(label, kind, outcome.error?.reason ?? 'none', (performance.now() - started) / 1000);
    return outcome;
  }

  /** `budget`: the bytes a chunk of a split eth_getLogs may bring (pipeline/logs.ts). */
  private run(ctx: RequestContext, call: Call, label: string, outbound?: Outbound, budget?: BytePool): Handled {
    const d = this.deps;
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
        return this.useFilter(ctx, call, label, spec);
      default:
        break;
    }
    if (ctx.head < 0) return { error: rpcErrors.noUpstream('none healthy') };
    const res = resolveBlocks(spec, call.params, { head: ctx.head, maxLagBlocks: d.maxLagBlocks, clientKey: ctx.clientIp, recentBlocks: d.recentBlocks });
    if (res instanceof RpcError) return { error: res };
    const requirement = spec.capability ? { ...res.requirement, capability: spec.capability } : res.requirement;
    const raw = spec.handling === 'write' && typeof call.params[0] === 'string' ? call.params[0] : undefined;
    if (spec.waitsForReceipt) {
      // The node may have taken the transaction before a timeout or a dropped connection: sending
      // it again elsewhere would be blind. One attempt; the client looks the hash up if it fails.
      return forward(
        { ...d, maxAttempts: 1, upstreamTimeoutMs: d.sendSyncTimeoutMs ?? d.upstreamTimeoutMs },
        { method: call.method, label, paramsJson: JSON.stringify(res.params), requirement, deadline: ctx.deadline, trail: ctx.trail, log: ctx.log },
      ).then((a) => a.outcome);
    }
    if (spec.filterObject !== undefined && d.logs !== undefined) {
      const split = splitLogsRange(res.params, spec.filterObject, d.logs);
      if (split instanceof RpcError) return { error: split };
      // Each chunk is a call of its own (its params text is made from its params, not the client's).
      if (split !== null)
        return fetchChunks(split, d.logs.maxBytes, (params, b) => this.run(ctx, { ...call, params, paramsText: undefined }, label, undefined, b) as Outcome | Promise<Outcome>);
    }
    if (raw !== undefined && d.broadcastTransactions) {
      return broadcast(d, { method: call.method, label, paramsJson: paramsText(call, spec, res), requirement, deadline: ctx.deadline, rawTransaction: raw, trail: ctx.trail });
    }
    // Only a mined block proves a height: the pending block (head + 1) must not move the fleet head.
    const proves = spec.nullMayLag === true && !(spec.block !== undefined && res.params[spec.block] === 'pending');
    const cacheable = spec.handling === 'read' && !resolved.extension && spec.capability !== 'debug';
    const plan = cacheable ? planCache(call.method, spec, res.params, { head: ctx.head, finalized: d.fleet.finalized }) : null;
    // An expensive call goes alone: in a batch, a slow one would hold every call sharing it.
    const together = outbound !== undefined && spec.handling === 'read' && spec.nullMayLag !== true && raw === undefined && spec.expensive !== true;
    if (plan === null)
      return together
        ? this.addOutbound(outbound, call, label, spec, res, requirement, cacheable, plan)
        : this.fetch(ctx, call, label, spec, res, requirement, raw, proves, cacheable, plan, budget);
    const hit = d.cache.lookup(plan);
    if (hit instanceof Promise) {
      return hit.then((h) => (h !== undefined ? { result: h, cached: true } : this.fetch(ctx, call, label, spec, res, requirement, raw, proves, cacheable, plan, budget)));
    }
    if (hit !== undefined) return { result: hit, cached: true };
    if (together) return this.addOutbound(outbound, call, label, spec, res, requirement, cacheable, plan);
    return this.fetch(ctx, call, label, spec, res, requirement, raw, proves, cacheable, plan, budget);
  }

  /**
   * A plain read for the request's Outbound: shared with an identical call in flight when there is
   * one (its promise is the outcome), else claimed for sharing and added to be sent together.
   */
  private addOutbound(
    outbound: Outbound,
    call: Call,
    label: string,
    spec: MethodSpec,
    res: Resolution,
    requirement: Requirement,
    cacheable: boolean,
    plan: CachePlan | null,
  ): Handled {
    const d = this.deps;
    const paramsJson = paramsText(call, spec, res);
    let shared: Shared<Outcome> | undefined;
    let key: string | undefined;
    if (cacheable) {
      key = shareKey(call, requirement, plan, paramsJson);
      const claimed = d.cache.claim<Outcome>(key);
      if (claimed instanceof Promise) return claimed;
      shared = claimed;
    }
    outbound.add({ index: call.index, method: call.method, label, paramsJson, requirement, plan, gen: d.cache.generation, shared, key });
    return SENT_TOGETHER;
  }

  /** The call goes to a node: shared with identical calls in flight, stored when its plan allows. */
  private fetch(
    ctx: RequestContext,
    call: Call,
    label: string,
    spec: MethodSpec,
    res: Resolution,
    requirement: Requirement,
    raw: string | undefined,
    proves: boolean,
    cacheable: boolean,
    plan: CachePlan | null,
    budget?: BytePool,
  ): Promise<Outcome> {
    const d = this.deps;
    const paramsJson = paramsText(call, spec, res);
    const send = (): Promise<Attempted> =>
      forward(d, {
        budget,
        method: call.method,
        label,
        paramsJson,
        requirement,
        deadline: ctx.deadline,
        nullMayLag: spec.nullMayLag,
        head: ctx.head,
        rawTransaction: raw,
        timeoutMs: d.timeouts?.of(call.method),
        expensive: spec.expensive,
        trail: ctx.trail,
        log: ctx.log,
      });
    if (!cacheable) return send().then((a) => this.afterForward(spec, a, proves));
    const gen = d.cache.generation;
    const key = shareKey(call, requirement, plan, paramsJson);
    // The answer is stored (and what it proves learnt) once, by whichever call reached the node.
    return d.cache.coalesce(key, send, (attempted: Attempted) => {
      if (plan !== null && attempted.outcome.result !== undefined) d.cache.store(plan, attempted.outcome.result, gen, d.fleet.finalized);
      return this.afterForward(spec, attempted, proves);
    });
  }

  /** What an answer teaches the fleet (a newer block exists), and filter ids made to carry their node. */
  private afterForward(spec: MethodSpec, { outcome, upstream }: Attempted, provesBlock = false): Outcome {
    const d = this.deps;
    if (provesBlock && outcome.result !== undefined && upstream) {
      const n = heightInText(outcome.result, true);
      if (n !== null) d.fleet.proveBlock(upstream, n);
    }
    if (spec.handling === 'filter-new' && outcome.result !== undefined && upstream) {
      const id = wrapFilterId(upstream, outcome.result);
      return id === null ? outcome : { result: id };
    }
    return outcome;
  }

  private async useFilter(ctx: RequestContext, call: Call, label: string, spec: MethodSpec): Promise<Outcome> {
    const found = unwrapFilterId(call.params[0], this.deps.fleet.upstreams);
    if (found === null || !found.upstream.available) return { error: new RpcError('FILTER_NOT_FOUND') };
    const params = [found.nodeId, ...call.params.slice(1)];
    const { outcome } = await forward(
      { ...this.deps, maxAttempts: 1 },
      {
        method: call.method,
        label,
        paramsJson: JSON.stringify(params),
        requirement: {},
        deadline: ctx.deadline,
        only: found.upstream,
        timeoutMs: this.deps.timeouts?.of(call.method),
        expensive: spec.expensive,
        trail: ctx.trail,
      },
    );
    // The node holding the filter did not answer at all: for the client the filter is gone.
    if (outcome.error?.reason === 'UPSTREAM_FAILED') return { error: new RpcError('FILTER_NOT_FOUND') };
    return outcome;
  }
}

/** Identical reads in flight at once share one upstream call under this key; per-client (sticky) ones per client. */
function shareKey(call: Call, requirement: Requirement, plan: CachePlan | null, paramsJson: string): string {
  return plan?.shareKey ?? `${call.method}:${requirement.stickyKey ?? ''}:${paramsJson}`;
}

const LATEST_LAST = '"latest"]';

/**
 * The params as JSON text for the node: the client's own text when nothing was rewritten (never
 * parsed and serialised again), the block parameter spliced into it when `latest` was pinned, and
 * a fresh serialisation only for rewritten filter objects.
 */
function paramsText(call: Call, spec: MethodSpec, res: Resolution): string {
  const text = call.paramsText;
  if (text === undefined) return JSON.stringify(res.params);
  if (!res.rewritten) return text;
  if (spec.block !== undefined && spec.filterObject === undefined) {
    const value = res.params[spec.block];
    // `latest` as the last parameter (most reads): found from the end of the text, with no walk. The
    // text's last element is exactly `"latest"`: a longer string ending so would not parse as `latest`.
    if (spec.block === call.params.length - 1 && call.params[spec.block] === 'latest' && typeof value === 'string' && text.endsWith(LATEST_LAST)) {
      return `${text.slice(0, text.length - LATEST_LAST.length)}${JSON.stringify(value)}]`;
    }
    const span = elementSpan(text, spec.block);
    if (span !== undefined && typeof value === 'string') return `${text.slice(0, span.start)}${JSON.stringify(value)}${text.slice(span.end)}`;
  }
  return JSON.stringify(res.params);
}
