/**
 * Dispatch: the only way a call reaches a node. The calls of one request (a lone call is a request
 * of one) are grouped by routing requirement; each group goes to the node chosen for it in
 * exchanges of up to that node's maxBatchSize (one promise per exchange, not a chain per call;
 * a chunk of one is a plain call, which the upstream client's micro-batcher may join with other
 * requests' calls). A call whose answer is not a result goes on through the failover steps
 * (failover.ts) from there, exactly as a call sent alone. Calls that must not share an exchange
 * go alone with their options: expensive ones (a slow one would hold every call sharing it; a
 * timeout is final), a null that may mean a lagging node (second opinion), a transaction waiting
 * for its receipt (one attempt), a filter call (its one node), a split eth_getLogs chunk (its byte
 * budget), a broadcast transaction (every node, broadcast.ts), and a quorum read (several nodes
 * at once, quorum.ts). A node with a budget
 * (upstreams[].rateLimit) gets a chunk only when its budget gives a token for every call of it.
 * A read on its own way may be hedged (hedge.ts): asked of a second node when the first is late;
 * a read in an exchange with others is not (the exchange answers them together).
 * Refuses: what a call is and what its answer means for the cache (pipeline/), and the shape of
 * an exchange on the wire (upstream/client.ts).
 */
import type { Verdict } from '../upstream/classify.js';
import type { Upstream } from '../upstream/node.js';
import { broadcast } from './broadcast.js';
import { attempt, goOn } from './failover.js';
import { hedged, mayHedge } from './hedge.js';
import { pinnedNode } from './pinned.js';
import { quorum } from './quorum.js';
import { choose, eligible, type Requirement } from './select.js';
import { interpretVerdict } from './verdict.js';
import { confirmed, judged } from './verified.js';
import {
  fresh,
  noteAnswered,
  noteSent,
  timeoutOf,
  type Attempted,
  type DispatchContext,
  type Sendable,
} from './way.js';

export type { Attempted, DispatchContext, RoutingDeps, Sendable } from './way.js';

const NONE: readonly Upstream[] = [];

/** Each call's answer, in the order of `calls`, once every one of them has its answer. */
export function dispatch(calls: readonly Sendable[], ctx: DispatchContext): Promise<Attempted[]> {
  if (calls.length === 1) return alone(calls[0]!, ctx).then(one);
  const answers = new Array<Attempted>(calls.length);
  const waits: Promise<void>[] = [];
  let groups: number[][] | undefined;
  for (let k = 0; k < calls.length; k++) {
    if (calls[k]!.batchable === true) groups = join(groups ?? [], calls, k);
    else waits.push(alone(calls[k]!, ctx).then((a) => void (answers[k] = a)));
  }
  if (groups !== undefined) for (const g of groups) sendGroup(calls, g, ctx, answers, waits);
  return Promise.all(waits).then(() => answers);
}

function one(a: Attempted): Attempted[] {
  return [a];
}

/** A call on its own way: every attempt from the first, to every node at once (broadcast), or to several (quorum). */
function alone(call: Sendable, ctx: DispatchContext): Promise<Attempted> {
  // A request pinned to one node (pinned.ts) sends its call there only.
  if (ctx.useUpstream !== undefined) return attempt(ctx, call, fresh());
  if (call.quorum !== undefined && ctx.routing.quorum !== undefined) return quorum(ctx, call, call.quorum);
  if (call.broadcast === true) return broadcast(ctx, call);
  // A read the first node is late with may be asked of a second (hedge.ts).
  return mayHedge(ctx, call) ? hedged(ctx, call) : attempt(ctx, call, fresh());
}

/** One requirement's calls (indexes into `calls`), in exchanges of up to the chosen node's batch size. */
function sendGroup(
  calls: readonly Sendable[],
  group: readonly number[],
  ctx: DispatchContext,
  answers: Attempted[],
  waits: Promise<void>[],
): void {
  const { fleet } = ctx.routing;
  const req = calls[group[0]!]!.requirement;
  let next = 0;
  while (next < group.length) {
    const candidates =
      ctx.useUpstream === undefined ? eligible(fleet, req, NONE) : pinnedNode(fleet, ctx.useUpstream, req, NONE);
    const remaining = ctx.deadline - fleet.now();
    const u = typeof candidates === 'string' ? null : choose(candidates, req.stickyKey);
    // No node now, no time left, a breaker trying a node out, or one call left: each call on its own way.
    if (u === null || remaining <= 0 || u.breaker.state !== 'closed' || next === group.length - 1) {
      for (; next < group.length; next++) {
        const k = group[next]!;
        waits.push(alone(calls[k]!, ctx).then((a) => void (answers[k] = a)));
      }
      return;
    }
    const taken = group.slice(next, next + u.config.maxBatchSize);
    next += taken.length;
    const chunk = setAside(u, calls, taken, ctx, answers, waits);
    if (chunk.length === 0) continue;
    if (chunk.length === 1) {
      const k = chunk[0]!;
      waits.push(alone(calls[k]!, ctx).then((a) => void (answers[k] = a)));
      continue;
    }
    if (u.budget === null) waits.push(exchange(u, calls, chunk, ctx, remaining, answers));
    else waits.push(budgeted(u, calls, chunk, ctx, answers));
  }
}

/** The calls of a chunk whose method `u` refused as unknown (upstream/serving.ts) go their own way; the rest stay. */
function setAside(
  u: Upstream,
  calls: readonly Sendable[],
  chunk: number[],
  ctx: DispatchContext,
  answers: Attempted[],
  waits: Promise<void>[],
): number[] {
  if (!chunk.some((k) => u.serving.refuses(calls[k]!.method))) return chunk;
  const kept: number[] = [];
  for (const k of chunk) {
    if (u.serving.refuses(calls[k]!.method)) waits.push(alone(calls[k]!, ctx).then((a) => void (answers[k] = a)));
    else kept.push(k);
  }
  return kept;
}

/**
 * A chunk for a budgeted node takes one token per call at once; when the budget cannot give them
 * all, each call goes its own way (taking its own token, or going elsewhere: failover.ts).
 */
function budgeted(
  u: Upstream,
  calls: readonly Sendable[],
  chunk: readonly number[],
  ctx: DispatchContext,
  answers: Attempted[],
): Promise<void> {
  return u.budget!.take(chunk.length).then((granted) => {
    const remaining = ctx.deadline - ctx.routing.fleet.now();
    if (granted && remaining > 0) return exchange(u, calls, chunk, ctx, remaining, answers);
    return Promise.all(chunk.map((k) => alone(calls[k]!, ctx).then((a) => void (answers[k] = a)))).then(noop);
  });
}

/** One exchange with `u`: results are answers; anything else goes on as a call sent alone would go on. */
function exchange(
  u: Upstream,
  calls: readonly Sendable[],
  chunk: readonly number[],
  ctx: DispatchContext,
  remaining: number,
  answers: Attempted[],
): Promise<void> {
  const sent = chunk.map((k) => calls[k]!);
  ctx.trail.push(u.name);
  const before = u.breaker.state;
  const span = ctx.trace?.exchange(u.name, sent);
  noteSent(ctx, sent.length);
  return u
    .callMany(sent, Math.min(exchangeTimeout(ctx, sent), remaining), span?.traceparent)
    .then(({ verdicts, ms }) => {
      span?.endMany(verdicts);
      noteAnswered(ctx);
      const after = u.breaker.state;
      if (after !== before) ctx.log?.debug({ upstream: u.name, from: before, to: after }, 'breaker state changed');
      recordExchange(ctx, u, sent, verdicts, ms);
      let later: Promise<void>[] | undefined;
      for (let i = 0; i < chunk.length; i++) {
        const k = chunk[i]!;
        const verdict = judged(ctx.routing, sent[i]!, verdicts[i]!);
        if (verdict.kind === 'result' && verdict.unverified === undefined && verdict.confirm === undefined) {
          answers[k] = { outcome: { result: verdict.result }, upstream: u };
          continue;
        }
        const progress = fresh();
        progress.tried.push(u);
        if (verdict.kind === 'result' && verdict.confirm !== undefined) {
          const left = Math.max(1, ctx.deadline - ctx.routing.fleet.now());
          (later ??= []).push(
            confirmed(ctx.routing, u, verdict, left)
              .then((v) => goOn(ctx, sent[i]!, progress, u, v, ms))
              .then((a) => void (answers[k] = a)),
          );
          continue;
        }
        const answer = interpretVerdict(ctx, sent[i]!, progress, u, verdict, ms);
        if (answer !== null) {
          answers[k] = answer;
          continue;
        }
        progress.attempt++;
        (later ??= []).push(attempt(ctx, sent[i]!, progress).then((a) => void (answers[k] = a)));
      }
      return later === undefined ? undefined : Promise.all(later).then(noop);
    });
}

/** One exchange answers all its calls together: it may take as long as its longest-allowed call. */
function exchangeTimeout(ctx: DispatchContext, sent: readonly Sendable[]): number {
  let ms = 0;
  for (const c of sent) ms = Math.max(ms, timeoutOf(ctx.routing, c));
  return ms;
}

/** The exchange's calls in the upstream metrics: each run of calls with the same method and outcome recorded at once. */
function recordExchange(
  ctx: DispatchContext,
  u: Upstream,
  sent: readonly Sendable[],
  verdicts: readonly Verdict[],
  ms: number,
): void {
  let run = 0;
  for (let k = 0; k < sent.length; k++) {
    const v = verdicts[k]!;
    const outcome = v.kind === 'retry' ? v.reason : v.kind;
    run++;
    const next = verdicts[k + 1];
    if (
      next !== undefined &&
      sent[k + 1]!.label === sent[k]!.label &&
      (next.kind === 'retry' ? next.reason : next.kind) === outcome
    )
      continue;
    ctx.routing.metrics.recordUpstreamCall(u.name, sent[k]!.label, outcome, ms / 1000, run);
    run = 0;
  }
}

/** Adds call `k` to the group of its requirement (groups keep request order). */
function join(groups: number[][], calls: readonly Sendable[], k: number): number[][] {
  const req = calls[k]!.requirement;
  for (const g of groups) {
    if (sameRequirement(calls[g[0]!]!.requirement, req)) {
      g.push(k);
      return groups;
    }
  }
  groups.push([k]);
  return groups;
}

function sameRequirement(a: Requirement, b: Requirement): boolean {
  return (
    a.minHead === b.minHead &&
    a.maxLag === b.maxLag &&
    a.capability === b.capability &&
    a.stickyKey === b.stickyKey &&
    a.stateAt === b.stateAt
  );
}

function noop(): void {}
