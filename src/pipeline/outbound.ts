/**
 * The reads of one request that go to the nodes, sent together: calls with the same routing
 * requirement leave in one exchange per chosen node (a batch of up to its maxBatchSize), with one
 * promise per exchange instead of a promise chain per call. A call whose answer is not a result
 * goes on through forward()'s attempts from there (failover, waits, the last node error), exactly
 * as a call sent alone. A lone read, and reads no node can take right now, are sent alone
 * (forward(), where the micro-batcher joins them with other requests' calls).
 * Refuses: what is sent together (pipeline/index.ts decides: plain reads, never a null that may
 * mean a lagging node, never an expensive call), and the shapes of exchanges (upstream/client.ts).
 */
import type { Logger } from 'pino';
import type { Shared } from '../cache/coalesce.js';
import type { CachePlan, ResponseCache } from '../cache/index.js';
import { RpcError } from '../jsonrpc/errors.js';
import type { Outcome } from '../jsonrpc/response.js';
import { attempt, forward, interpretVerdict, type ForwardCall, type ForwardDeps, type Progress } from '../routing/forward.js';
import { choose, eligible, type Requirement } from '../routing/select.js';
import type { Verdict } from '../upstream/classify.js';
import type { Upstream } from '../upstream/node.js';
import type { MethodTimeouts } from '../routing/timeouts.js';

/** One read waiting to be sent: what forward() needs, where its outcome goes, what to store. */
export interface OutboundCall {
  /** The call's slot in the request. */
  index: number;
  method: string;
  label: string;
  paramsJson: string;
  requirement: Requirement;
  plan: CachePlan | null;
  /** The cache generation the call was made under (store() drops answers from before a reorg). */
  gen: number;
  /** The coalescing claim (and its key) other identical calls may have joined, ended with the outcome. */
  shared?: Shared<Outcome>;
  key?: string;
  finished?: boolean;
}

export interface OutboundDeps extends ForwardDeps {
  cache: ResponseCache;
  /** Per-method attempt timeouts; absent = upstreamTimeoutMs for every method. */
  timeouts?: MethodTimeouts;
}

interface Context {
  /** performance.now() when the request's calls were taken up (their latency metric). */
  started: number;
  head: number;
  deadline: number;
  trail: string[];
  log: Logger;
}

/** Records a finished call (metrics) and hands back its outcome. */
type RecordOutcome = (label: string, outcome: Outcome, started: number) => Outcome;
/** Records `calls` node results for calls of one method at once. */
type RecordResults = (label: string, started: number, calls: number) => void;

const NONE: readonly Upstream[] = [];

export class Outbound {
  private readonly calls: OutboundCall[] = [];

  constructor(
    private readonly deps: OutboundDeps,
    private readonly ctx: Context,
    /** The request's outcomes by slot: each call's is written there when it is known. */
    private readonly outcomes: unknown[],
    private readonly record: RecordOutcome,
    private readonly recordResults: RecordResults,
    /** The request's bound on the results it holds (Pipeline.keep). */
    private readonly keep: (outcome: Outcome) => Outcome = (o) => o,
  ) {}

  add(call: OutboundCall): void {
    this.calls.push(call);
  }

  /** Sends what was added; resolves once every one of those calls has its outcome. Null: nothing to send. */
  send(): Promise<void> | null {
    const calls = this.calls;
    if (calls.length === 0) return null;
    let all: Promise<void>;
    if (calls.length === 1) all = this.alone(calls[0]!);
    else {
      const waits: Promise<void>[] = [];
      for (const group of byRequirement(calls)) this.sendGroup(group, waits);
      all = waits.length === 1 ? waits[0]! : Promise.all(waits).then(noop);
    }
    return all.catch((err: unknown) => this.crashed(err));
  }

  /** One requirement's calls, in exchanges of up to the chosen node's batch size. */
  private sendGroup(group: OutboundCall[], waits: Promise<void>[]): void {
    const { deps, ctx } = this;
    const req = group[0]!.requirement;
    let next = 0;
    while (next < group.length) {
      const candidates = eligible(deps.fleet, req, NONE);
      const remaining = ctx.deadline - deps.fleet.now();
      const u = typeof candidates === 'string' ? null : choose(candidates, req.stickyKey);
      // No node now, no time left, or a breaker trying a node out: each call on its own way.
      if (u === null || remaining <= 0 || u.breaker.state !== 'closed') {
        for (; next < group.length; next++) waits.push(this.alone(group[next]!));
        return;
      }
      const chunk = group.slice(next, next + u.config.maxBatchSize);
      next += chunk.length;
      if (chunk.length === 1) {
        waits.push(this.alone(chunk[0]!));
        continue;
      }
      ctx.trail.push(u.name);
      const before = u.breaker.state;
      waits.push(
        u.callMany(chunk, Math.min(this.timeoutOf(chunk), remaining)).then(({ verdicts, ms }) => {
          const after = u.breaker.state;
          if (after !== before) ctx.log.debug({ upstream: u.name, from: before, to: after }, 'breaker state changed');
          return this.answered(u, chunk, verdicts, ms);
        }),
      );
    }
  }

  /** An exchange's verdicts: results are done; anything else goes on as forward() would go on. */
  private answered(u: Upstream, chunk: readonly OutboundCall[], verdicts: readonly Verdict[], ms: number): Promise<void> | undefined {
    const { deps } = this;
    recordExchange(deps, u, chunk, verdicts, ms);
    let later: Promise<void>[] | undefined;
    // Results are recorded per run of calls of one method (one metrics update per run).
    let runLabel = '';
    let run = 0;
    for (let k = 0; k < chunk.length; k++) {
      const call = chunk[k]!;
      const verdict = verdicts[k]!;
      if (verdict.kind === 'result') {
        if (this.done(call, { result: verdict.result }, false)) {
          if (call.label !== runLabel && run > 0) {
            this.recordResults(runLabel, this.ctx.started, run);
            run = 0;
          }
          runLabel = call.label;
          run++;
        }
        continue;
      }
      const fc = this.forwardCall(call);
      const progress: Progress = { tried: [u], attempt: 0, waited: 0, lastReason: '' };
      const answer = interpretVerdict(deps, fc, progress, u, verdict, ms);
      if (answer !== null) {
        this.done(call, answer.outcome);
        continue;
      }
      progress.attempt++;
      (later ??= []).push(attempt(deps, fc, progress).then((a) => void this.done(call, a.outcome)));
    }
    if (run > 0) this.recordResults(runLabel, this.ctx.started, run);
    return later === undefined ? undefined : Promise.all(later).then(noop);
  }

  /** One exchange answers all its calls together: it may take as long as its longest-allowed call. */
  private timeoutOf(chunk: readonly OutboundCall[]): number {
    const { timeouts, upstreamTimeoutMs } = this.deps;
    if (timeouts === undefined) return upstreamTimeoutMs;
    let ms = 0;
    for (const c of chunk) ms = Math.max(ms, timeouts.of(c.method));
    return ms;
  }

  private alone(call: OutboundCall): Promise<void> {
    return forward(this.deps, this.forwardCall(call)).then((a) => void this.done(call, a.outcome));
  }

  private forwardCall(call: OutboundCall): ForwardCall {
    const { ctx } = this;
    return {
      method: call.method,
      label: call.label,
      paramsJson: call.paramsJson,
      requirement: call.requirement,
      deadline: ctx.deadline,
      head: ctx.head,
      timeoutMs: this.deps.timeouts?.of(call.method),
      trail: ctx.trail,
      log: ctx.log,
    };
  }

  /**
   * The call's outcome: stored when its plan allows, given to the calls that joined it, and
   * recorded unless the caller records it (`record` false). False when the call was already
   * finished, or its result was let go over the request's bound (then recorded here as that error).
   */
  private done(call: OutboundCall, outcome: Outcome, record = true): boolean {
    if (call.finished) return false;
    const { cache, fleet } = this.deps;
    if (call.plan !== null && outcome.result !== undefined) cache.store(call.plan, outcome.result, call.gen, fleet.finalized);
    return this.finish(call, outcome, record);
  }

  /** False when the outcome was not kept as it came (a result over the request's bound). */
  private finish(call: OutboundCall, outcome: Outcome, record = true): boolean {
    call.finished = true;
    if (call.shared !== undefined) this.deps.cache.settle(call.key!, call.shared, outcome);
    const kept = this.keep(outcome);
    this.outcomes[call.index] = record || kept !== outcome ? this.record(call.label, kept, this.ctx.started) : kept;
    return kept === outcome;
  }

  /** A fault inside this code: every call not yet answered gets -32603, and so do the calls that joined it. */
  private crashed(err: unknown): void {
    this.ctx.log.error({ err }, 'calls sent together failed inside the pipeline');
    for (const call of this.calls) if (!call.finished) this.finish(call, { error: new RpcError('INTERNAL_ERROR') });
  }
}

/** The exchange's calls in the upstream metrics: each run of calls with the same method and outcome recorded at once. */
function recordExchange(deps: OutboundDeps, u: Upstream, chunk: readonly OutboundCall[], verdicts: readonly Verdict[], ms: number): void {
  let run = 0;
  for (let k = 0; k < chunk.length; k++) {
    const v = verdicts[k]!;
    const outcome = v.kind === 'retry' ? v.reason : v.kind;
    run++;
    const next = verdicts[k + 1];
    if (next !== undefined && chunk[k + 1]!.label === chunk[k]!.label && (next.kind === 'retry' ? next.reason : next.kind) === outcome) continue;
    deps.metrics.recordUpstreamCall(u.name, chunk[k]!.label, outcome, ms / 1000, run);
    run = 0;
  }
}

/** The calls grouped by equal requirement, each group in request order. */
function byRequirement(calls: readonly OutboundCall[]): OutboundCall[][] {
  const groups: OutboundCall[][] = [];
  next: for (const call of calls) {
    for (const g of groups) {
      if (sameRequirement(g[0]!.requirement, call.requirement)) {
        g.push(call);
        continue next;
      }
    }
    groups.push([call]);
  }
  return groups;
}

function sameRequirement(a: Requirement, b: Requirement): boolean {
  return a.minHead === b.minHead && a.maxLag === b.maxLag && a.capability === b.capability && a.stickyKey === b.stickyKey;
}

function noop(): void {}
