/**
 * Quorum reads (SPEC 4.9, routing.quorum): a call of a listed method is asked of `of` eligible
 * nodes at once (fewer when fewer are eligible; as many groups as there are first, the cheapest
 * node of each), all at the block the pipeline pinned its params to (its tags too:
 * pipeline/blocks.ts), and answered as soon as `min` answers agree (parsed JSON, member order
 * ignored; a node's error counts as an answer too) and the agreeing nodes span `minGroups`
 * distinct upstreams[].group. Reached through dispatch.ts only.
 * Each asked node is a node call: a token of its budget, its in-flight count, a CLIENT span of the
 * call's trace, an attempt in X-Switchyard-Attempts; a held call (a trace) also a place on the
 * node's held lane, and a node whose lane is full is passed over as failover.ts passes it (lane.ts).
 * An asked node that fails (timeout, transport, an HTTP error, a wrong answer) has no say, and
 * while the call is undecided another eligible node is asked in its place (up to maxAttempts - 1
 * such replacements per call, each against its node's budget and lane), except after a failure
 * that another node would repeat or that must not run twice (an expensive call's timeout). A chosen
 * node whose budget has no token when the call starts is replaced before any node is asked, outside
 * that count.
 * Once the call is decided the other asked nodes are left to answer within their attempt timeout,
 * not aborted: an answer that differs from the agreed one is dissent however late it comes. The
 * call keeps its place in routing.quorumMaxInFlight until then, so a node that hangs holds at most
 * quorumMaxInFlight x of calls, each until its timeout (a replacement is asked only once a node
 * answered, so a call never has more than `of` nodes asked and unanswered); of each answer only a
 * digest is kept, and one answer per distinct digest until the call is decided.
 * Owns: choosing the asked nodes, the vote, dissent (counted, logged at warn without params) and
 * NO_QUORUM. Refuses: which calls are quorum reads (pipeline/), sending (upstream/client.ts).
 */
import { RpcError } from '../jsonrpc/errors.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { QuorumOutcome } from '../metrics/labels.js';
import type { Verdict } from '../upstream/classify.js';
import type { Upstream } from '../upstream/node.js';
import { funded, overBudget } from './budget.js';
import { callOptions, couldCatchUp, tracedOptions } from './failover.js';
import { heldLaneFull, laneFull } from './lane.js';
import type { QuorumRule } from './quorum-gate.js';
import { digestOf, NULL_DIGEST } from './quorum-digest.js';
import { cost, eligible, willing } from './select.js';
import { wrongAnswer } from './verdict.js';
import { confirmed, judged } from './verified.js';
import { noteAnswered, noteSent, timeoutOf, type Attempted, type DispatchContext, type Sendable } from './way.js';

const NONE: readonly Upstream[] = [];

/** How long, and how many times, a quorum call waits for enough nodes to reach its block (as failover.ts). */
const BLOCK_WAIT_MS = 2_000;
const MAX_BLOCK_WAITS = 3;

/** The call, asked of several nodes; its answer once `rule` is met or cannot be. */
export async function quorum(ctx: DispatchContext, call: Sendable, rule: QuorumRule): Promise<Attempted> {
  const { fleet, metrics } = ctx.routing;
  const q = ctx.routing.quorum!;
  let found = candidates(ctx, call, rule);
  // A node a block behind the snapshot head is not eligible for it yet: wait (bounded) as a call sent alone does.
  for (let waits = 0; !enough(found.asked, rule) && found.laneFull === 0 && waits < MAX_BLOCK_WAITS; waits++) {
    const remaining = ctx.deadline - fleet.now();
    if (remaining <= 0 || !couldCatchUp(fleet, call.requirement.minHead, found.asked)) break;
    await fleet.nextHeadChange(Math.min(remaining, BLOCK_WAIT_MS));
    found = candidates(ctx, call, rule);
  }
  const asked = found.asked;
  if (!enough(asked, rule)) {
    // Full held lanes stood in the way: said at once, as for a held call sent alone (lane.ts).
    if (found.laneFull > 0) return { outcome: { error: heldLaneFull() } };
    return undecided(ctx, call, 'too few nodes', 0, 0);
  }
  if (!q.gate.enter(q.maxInFlight))
    return { outcome: { error: new RpcError('QUORUM_BUSY', { data: { retryAfterSeconds: 1 } }) } };
  let chosen = asked;
  let targets = asked.some((u) => u.budget !== null) ? await funded(asked, metrics) : asked;
  // Nodes passed over for their budget: other eligible nodes in their place, while there are.
  while (targets.length < asked.length) {
    const more = inPlaceOf(ranked(ctx, call, chosen), targets, asked.length - targets.length);
    if (more.length === 0) break;
    chosen = chosen.concat(more);
    targets = targets.concat(await funded(more, metrics));
  }
  if (!enough(targets, rule)) {
    q.gate.leave();
    return { outcome: { error: overBudget(chosen.filter((u) => !targets.includes(u))) } };
  }
  return new Vote(ctx, call, rule, targets, chosen).decided;
}

/** `n` nodes of `pool` (cheapest first) to ask beside `taken`: of groups `taken` lacks first. */
function inPlaceOf(pool: readonly Upstream[], taken: readonly Upstream[], n: number): Upstream[] {
  const groups = new Set(taken.map((u) => u.group));
  const out = pool.filter((u) => !groups.has(u.group)).slice(0, n);
  for (const u of pool) if (out.length < n && !out.includes(u)) out.push(u);
  return out;
}

/** The nodes chosen to ask, and how many were passed over for a full held lane. */
interface Found {
  asked: Upstream[];
  laneFull: number;
}

/**
 * The nodes to ask: as many groups as there are among the eligible first, the cheapest node of
 * each, then the cheapest others; a held call's nodes with a full held lane are passed over.
 */
function candidates(ctx: DispatchContext, call: Sendable, rule: QuorumRule): Found {
  const pool = ranked(ctx, call, NONE);
  let laneFull = 0;
  const room: Upstream[] = [];
  for (const u of pool) {
    if (!fullLane(ctx, call, u)) room.push(u);
    else laneFull++;
  }
  const out: Upstream[] = [];
  const groups = new Set<string>();
  for (const u of room)
    if (out.length < rule.of && !groups.has(u.group)) {
      out.push(u);
      groups.add(u.group);
    }
  for (const u of room) if (out.length < rule.of && !out.includes(u)) out.push(u);
  return { asked: out, laneFull };
}

/** The eligible nodes for the call but `exclude`, cheapest first. */
function ranked(ctx: DispatchContext, call: Sendable, exclude: readonly Upstream[]): Upstream[] {
  const found = eligible(ctx.routing.fleet, call.requirement, exclude);
  if (typeof found === 'string') return [];
  return (willing(found, call.method) ?? []).slice().sort((a, b) => cost(a) - cost(b));
}

/** `u` must be passed over for a held call (lane.ts): counted as such. */
function fullLane(ctx: DispatchContext, call: Sendable, u: Upstream): boolean {
  if (!laneFull(call.held, u)) return false;
  ctx.routing.metrics.recordHeldLaneFull(u.name);
  return true;
}

function enough(nodes: readonly Upstream[], rule: QuorumRule): boolean {
  return nodes.length >= rule.min && new Set(nodes.map((u) => u.group)).size >= rule.minGroups;
}

/**
 * A failed node's place may go to another node: not after a failure every node would repeat (an
 * answer over the size bound, Switchyard's own answer bound), nor after one that must not run
 * twice (`final`: an expensive call the node may still be running).
 */
function replaceable(v: Extract<Verdict, { kind: 'retry' }>): boolean {
  return v.final !== true && v.reason !== 'response_too_large' && v.reason !== 'answers_busy';
}

type Why = 'dispute' | 'too few answers' | 'too few nodes';

/** NO_QUORUM: counted, and said in the answer's X-Switchyard-Quorum. */
function undecided(ctx: DispatchContext, call: Sendable, why: Why, agreeing: number, asked: number): Attempted {
  const outcome: QuorumOutcome = why === 'dispute' ? 'dispute' : 'too_few';
  ctx.routing.metrics.recordQuorumCall(call.label, outcome);
  (ctx.quorum ??= []).push(`${agreeing}/${asked}`);
  return {
    outcome: { error: new RpcError('NO_QUORUM', { message: `no quorum: ${why}`, data: { why, asked, agreeing } }) },
  };
}

/** One answer and the nodes that gave it (as parsed JSON). */
interface Side {
  readonly digest: string;
  readonly outcome: Outcome;
  readonly upstream: Upstream;
  /** Some node's copy could not be verified (verified.ts): served, never cached. */
  unverified: boolean;
  count: number;
  readonly groups: Set<string>;
}

/** One quorum call's vote: the asked nodes' answers as they come, and what was decided. */
class Vote {
  readonly decided: Promise<Attempted>;
  private resolve!: (a: Attempted) => void;
  private sides: Side[] | null = [];
  private agreed: string | null = null;
  /** The nodes asked, in the order they were, and each one's answer digest once it answered (null: no say). */
  private readonly asked: Upstream[] = [];
  private readonly digests: (string | null | undefined)[] = [];
  /** Every node this call chose (asked, or passed over for its budget or lane): none is chosen twice. */
  private readonly chosen: Upstream[];
  /** Replacements on their way to a node (a budget token being taken). */
  private readonly readying = new Set<Upstream>();
  /** Asked nodes yet to answer, and replacements on their way: the place is given back at 0. */
  private pending = 0;
  /** Failed nodes that may still be replaced (routing.maxAttempts - 1, as a call sent alone has retries). */
  private spare: number;

  constructor(
    private readonly ctx: DispatchContext,
    private readonly call: Sendable,
    private readonly rule: QuorumRule,
    targets: readonly Upstream[],
    chosen: readonly Upstream[],
  ) {
    this.decided = new Promise((r) => (this.resolve = r));
    this.chosen = chosen.slice();
    this.spare = ctx.routing.maxAttempts - 1;
    // Held while the first nodes leave, so that one passed over at once cannot end the vote early.
    this.pending = 1;
    for (const u of targets) this.send(u);
    this.release();
  }

  /** `u` is asked now, unless its held lane filled meanwhile: then it is passed over, and replaced. */
  private send(u: Upstream): void {
    const { ctx, call } = this;
    if (fullLane(ctx, call, u)) return this.replace();
    const i = this.asked.push(u) - 1;
    this.digests.push(undefined);
    this.pending++;
    const limit = Math.min(timeoutOf(ctx.routing, call), Math.max(1, ctx.deadline - ctx.routing.fleet.now()));
    void ask(ctx, call, u, limit).then(
      (v) => this.answer(i, u, v),
      () => this.answer(i, u, { kind: 'retry', reason: 'transport', health: false }),
    );
  }

  /**
   * Another eligible node, of a group not yet asked where there is one, in a failed node's place:
   * only while the call is undecided and has time left, with a token of its budget.
   */
  private replace(): void {
    const { ctx, call } = this;
    if (this.sides === null || ctx.deadline - ctx.routing.fleet.now() <= 0) return;
    const pool = ranked(ctx, call, this.chosen);
    if (pool.length === 0) return;
    const groups = new Set(this.asked.filter((_, i) => this.digests[i] !== null).map((u) => u.group));
    const u = pool.find((x) => !groups.has(x.group)) ?? pool[0]!;
    this.chosen.push(u);
    if (u.budget === null) return this.send(u);
    this.pending++;
    this.readying.add(u);
    void u.budget
      .take(1)
      .catch(() => false)
      .then((granted) => {
        this.readying.delete(u);
        try {
          if (!granted) {
            ctx.routing.metrics.recordBudgetExhausted(u.name);
            this.replace();
          } else if (this.sides !== null) this.send(u);
        } finally {
          this.release();
        }
      });
  }

  /** Every asked node's answer comes here once. */
  private answer(i: number, u: Upstream, v: Verdict): void {
    try {
      this.take(i, u, v);
    } finally {
      this.release();
    }
  }

  /**
   * One asked node answered or a replacement was settled: the vote is failed once no answer can
   * win any more, and the place in quorumMaxInFlight is given back with the last.
   */
  private release(): void {
    this.pending--;
    try {
      if (this.sides !== null && !this.possible()) this.fail();
    } catch (err) {
      this.crashed(err);
    } finally {
      if (this.pending === 0) this.ctx.routing.quorum!.gate.leave();
    }
  }

  private take(i: number, u: Upstream, v: Verdict): void {
    try {
      const digest = v.kind === 'result' || v.kind === 'node-error' ? digestOf(v) : null;
      this.digests[i] = digest;
      if (v.kind === 'retry' && v.reason === 'wrong_answer') wrongAnswer(this.ctx, u, this.call, v.why);
      if (this.agreed !== null) {
        if (digest !== null && digest !== this.agreed) this.dissent(u, digest);
      } else if (this.sides !== null) {
        if (digest !== null) this.count(u, v as Exclude<Verdict, { kind: 'retry' }>, digest);
        else if (v.kind === 'retry' && replaceable(v) && this.spare > 0) {
          this.spare--;
          this.replace();
        }
      }
    } catch (err) {
      this.crashed(err);
    }
  }

  /** A fault here must neither leave the client without an answer nor keep the place. */
  private crashed(err: unknown): void {
    this.ctx.log?.error({ err, method: this.call.label }, 'quorum read failed inside the service');
    if (this.sides !== null) {
      this.sides = null;
      this.resolve({ outcome: { error: new RpcError('INTERNAL_ERROR') } });
    }
  }

  private count(u: Upstream, v: Exclude<Verdict, { kind: 'retry' }>, digest: string): void {
    const sides = this.sides!;
    let side = sides.find((s) => s.digest === digest);
    if (side === undefined) {
      const outcome: Outcome = v.kind === 'result' ? { result: v.result } : { nodeError: v.error };
      side = { digest, outcome, upstream: u, unverified: false, count: 0, groups: new Set() };
      sides.push(side);
    }
    side.count++;
    side.groups.add(u.group);
    if (v.kind === 'result' && v.unverified === true) side.unverified = true;
    if (side.count >= this.rule.min && side.groups.size >= this.rule.minGroups) this.agree(side);
  }

  private agree(side: Side): void {
    const { ctx, call } = this;
    this.agreed = side.digest;
    this.sides = null;
    noteAnswered(ctx);
    ctx.routing.metrics.recordQuorumCall(call.label, 'agreed');
    (ctx.quorum ??= []).push(`${side.count}/${this.asked.length}`);
    this.digests.forEach((d, i) => {
      if (d !== undefined && d !== null && d !== side.digest) this.dissent(this.asked[i]!, d);
    });
    this.resolve(
      side.unverified
        ? { outcome: side.outcome, upstream: side.upstream, unverified: true }
        : { outcome: side.outcome, upstream: side.upstream },
    );
  }

  /** Some answer can still reach `min` from `minGroups` groups with the nodes yet to answer. */
  private possible(): boolean {
    const { min, minGroups } = this.rule;
    const waiting = new Set<string>();
    this.asked.forEach((u, i) => {
      if (this.digests[i] === undefined) waiting.add(u.group);
    });
    for (const u of this.readying) waiting.add(u.group);
    if (this.pending >= min && waiting.size >= minGroups) return true;
    return this.sides!.some(
      (s) => s.count + this.pending >= min && new Set([...s.groups, ...waiting]).size >= minGroups,
    );
  }

  private fail(): void {
    const sides = this.sides!;
    this.sides = null;
    noteAnswered(this.ctx);
    const most = sides.reduce((m, s) => Math.max(m, s.count), 0);
    this.resolve(
      undecided(this.ctx, this.call, sides.length > 1 ? 'dispute' : 'too few answers', most, this.asked.length),
    );
  }

  /** `u` answered otherwise than the agreed answer: counted, shown in /status, logged (never params nor answers). */
  private dissent(u: Upstream, digest: string): void {
    const { ctx, call } = this;
    // A null for a lookup by hash may only mean the node has not seen the block yet (verdict.ts nullMayLag): no dissent.
    if (call.nullMayLag === true && digest === NULL_DIGEST) return;
    const { metrics, fleet, quorum: q } = ctx.routing;
    metrics.recordDissent(u.name);
    fleet.dissented(u);
    if (q!.gate.mayLog(Date.now()))
      ctx.log?.warn(
        { upstream: u.name, method: call.label, block: call.requirement.minHead ?? null, req: ctx.reqId },
        'quorum read: upstream answer differs from the agreed one',
      );
  }
}

/** One asked node's verdict, verified as any answer is (verified.ts). */
function ask(ctx: DispatchContext, call: Sendable, u: Upstream, limit: number): Promise<Verdict> {
  const r = ctx.routing;
  ctx.trail.push(u.name);
  const span = call.trace?.attempt(u.name);
  noteSent(ctx, 1);
  const opts = span === undefined ? callOptions(call) : tracedOptions(call, span.traceparent);
  return u.call(call.method, call.paramsJson, limit, opts).then(({ verdict: read, ms }) => {
    const verdict = judged(r, call, read);
    span?.end(verdict);
    r.metrics.recordUpstreamCall(
      u.name,
      call.label,
      verdict.kind === 'retry' ? verdict.reason : verdict.kind,
      ms / 1000,
    );
    if (verdict.kind === 'result' && verdict.confirm !== undefined) return confirmed(r, u, verdict, limit);
    return verdict;
  });
}
