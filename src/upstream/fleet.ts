/**
 * The fleet: every configured upstream, their state and heads, and the fleet head derived from them.
 * Owns: chain-id verification (quarantine), head polling, the fleet head and finalized height, the block
 * number served to clients (it never goes backwards), each node's hold-off clock and limit (holdoff.ts),
 * and applying a reloaded configuration (which nodes stay, come and go: membership.ts).
 * Refuses: choosing an upstream for a call (routing/select.ts), transport (client.ts), keeping cordons (cordons.ts).
 *
 * The fleet is the only writer of upstream state (node.ts `NodeStatus`). Everything else reports
 * observations through these transitions, and the fleet decides what they mean:
 *   markUp(u) / markDown(u)       a probe reached the node on the right chain / could not
 *   markLate(u)                   a poll timed out: not routed until a poll answers (probe.ts)
 *   quarantine(u, got)            the node answers another chain id
 *   wrongAnswer(u)                an answer from u failed verification (routing/verified.ts)
 *   dissented(u)                  u's answer to a quorum read differed from the agreed one (routing/quorum.ts)
 *   observeHeader(u, h, askedAt)  a `latest` header from a poll or a newHeads subscription
 *   proveBlock(u, n)              an answer from u proved it has block n (its head is at least n)
 *   takeShared(u, n)              another replica saw u at n (Redis): taken only within reach
 *   observeFinalized(u, n)        the node's own `finalized` block
 *   finalizedUnsupported(u)       the node has no `finalized` tag
 *   apply(config) (reload)        a removed node retires: no new calls, its head stops counting
 * Only a healthy, non-retiring node moves the head (node.ts `movesHead`, checked in `counts`).
 * Events: 'upstream-head' (u) when a node's head or state changes, 'head' (n) when the fleet head
 * rises, 'reorg' (height) when blocks from that height changed, 'upstream-state' (u) when its state changes.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Config, UpstreamConfig } from '../config/schema.js';
import type { Metrics } from '../metrics/registry.js';
import { HeadBelief } from './belief.js';
import { collectCallGauges, publishHeads } from './gauges.js';
import { Canon, finalizedHeight, type Header } from './heads.js';
import { HttpUpstreamClient, type ClientOptions, type UpstreamClient } from './client.js';
import { CordonSet } from './cordons.js';
import { Breaker } from './health.js';
import { memoryBudgets, type BudgetMaker } from '../limits/budget.js';
import { nodeHoldOff } from './holdoff.js';
import { freshStatus, movesHead, Upstream, type NodeStatus, type UpstreamState } from './node.js';
import { Probes } from './probe.js';
import { countWrongAnswer, markAnotherChain, WRONG_ANSWERS } from './quarantine.js';
import { changeMembers, closeWhenIdle, fleetOptions, REMOVED_NODE_GRACE_MS, reportTo } from './membership.js';
import type { FleetOptions } from './membership.js';

export class Fleet extends EventEmitter {
  upstreams: Upstream[] = [];
  /** Highest plausible head among healthy upstreams; -1 until one is known. */
  head = -1;
  finalized = -1;
  /**
   * The block number clients have been told: it never decreases, across failovers and restarts
   * of nodes, except away from a block no node of the chain has (recompute, observeHeader).
   */
  private served = -1;
  /** Which head is believed: confirmed by a second node, or within the chain's pace (belief.ts). */
  private readonly belief: HeadBelief;
  private servedCap: (() => number) | null = null;
  private readonly probes: Probes;
  /** The writable state of every upstream, current and retiring: the fleet's alone. */
  private readonly status = new WeakMap<Upstream, NodeStatus>();
  private readonly canon = new Canon();
  readonly cordons = new CordonSet();

  constructor(
    private opts: FleetOptions,
    configs: readonly UpstreamConfig[],
    private readonly metrics: Metrics,
    private readonly log: Logger,
    /** Builds the transport for one node (tests inject fakes); `latencyMs` seeds a replacement's average. */
    private readonly makeClient: (c: UpstreamConfig, seed: ClientOptions) => UpstreamClient = (c, seed) =>
      new HttpUpstreamClient(c, seed),
    /** The routing clock: head times, breaker cooldowns, call deadlines (routing/failover.ts). Tests pass a controlled one. */
    readonly now: () => number = Date.now,
    private readonly makeBudget: BudgetMaker = memoryBudgets(),
  ) {
    super();
    // Every call waiting for a block adds a listener for a moment; thousands at once are normal.
    this.setMaxListeners(0);
    this.belief = new HeadBelief(
      () => ({ slackBlocks: this.opts.headSlackBlocks ?? 4, headPollMs: this.opts.headPollMs }),
      now,
    );
    this.upstreams = configs.map((c) => this.build(c, freshStatus(), {}));
    // FleetOptions holds the probes' settings; a reload swaps the object.
    this.probes = new Probes(() => this.opts, now);
  }

  private build(c: UpstreamConfig, status: NodeStatus, seed: { latencyMs?: number }): Upstream {
    const holdOff = nodeHoldOff(c.name, this.now, () => this.opts.holdOffMaxMs, this.metrics, this.log);
    const client = this.makeClient(c, { ...seed, breaker: new Breaker({ now: this.now }), holdOff });
    const u = new Upstream(client, status, this.makeBudget(c));
    this.status.set(u, status);
    return u;
  }

  private s(u: Upstream): NodeStatus {
    const s = this.status.get(u);
    if (s === undefined) throw new Error(`upstream ${u.name} does not belong to this fleet`);
    return s;
  }

  /** Whether u's head counts for the fleet head and u may take calls at all. */
  private counts(u: Upstream): boolean {
    return movesHead(this.s(u));
  }

  start(): void {
    for (const u of this.upstreams) this.track(u);
  }

  /** The block number for eth_blockNumber: the fleet head, but never lower than one already served. */
  blockNumber(): number {
    const head = this.servedCap === null ? this.head : Math.min(this.head, this.servedCap());
    if (head > this.served) this.served = head;
    return this.served;
  }

  /**
   * The block `latest` reads of a request are pinned to: eth_blockNumber's, unless no routable node
   * has that block (the node that had it died, or it was a head no longer believed): then the
   * highest block a routable node has that the fleet believes. Reads are answered at a block a
   * node has instead of waiting for one no node may ever reach; eth_blockNumber itself holds.
   */
  latest(): number {
    const served = this.blockNumber();
    let top = -1;
    for (const u of this.upstreams)
      if (u.available && !u.shadow && !u.heldOff && !this.cordons.has(u.name) && u.head > top) top = u.head;
    return top < 0 || this.head < 0 ? served : Math.min(served, this.head, top);
  }

  /**
   * Replicas sharing heads (replicas/shared-heads.ts): eth_blockNumber rises no higher than this,
   * the head the other replicas can already know of. null: no cap.
   */
  capServedHead(cap: (() => number) | null): void {
    this.servedCap = cap;
  }

  lag(u: Upstream): number {
    return this.head < 0 || u.head < 0 ? Number.POSITIVE_INFINITY : Math.max(0, this.head - u.head);
  }

  /**
   * Resolves when any upstream reports a new head or becomes healthy, or after `ms`: a call that
   * needs a block no routable node has yet waits for it instead of failing or reading an older one.
   */
  nextHeadChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.off('upstream-head', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.on('upstream-head', done);
    });
  }

  healthyCount(): number {
    return this.upstreams.filter((u) => u.available && !u.shadow).length;
  }

  private track(u: Upstream): void {
    this.metrics.declareUpstream(u.name);
    if (this.opts.breaker) u.breaker.configure(this.opts.breaker);
    this.probes.start(u, reportTo(this, u, this.log));
  }

  /**
   * An answer proved that `u` has block n (a receipt, transaction or block it returned): its head is
   * at least n, so the fleet moves on before the next poll and a client that just saw its receipt
   * reads `latest` at that block or later, as it would from one node.
   */
  proveBlock(u: Upstream, n: number): void {
    const s = this.s(u);
    if (!this.counts(u) || n <= s.head || n - this.head > this.opts.maxHeadJumpBlocks) return;
    s.head = n;
    s.headAt = this.now();
    this.recompute();
    this.emit('upstream-head', u);
  }

  /** Another replica saw `u` at n (shared-heads.ts): Redis is input, taken only within reach(). False: refused. */
  takeShared(u: Upstream, n: number): boolean {
    if (!Number.isSafeInteger(n) || n < 0 || n > this.reach()) return false;
    this.proveBlock(u, n);
    return true;
  }

  /**
   * A new head from polling or from the node's newHeads subscription. `observedAt`: when the question was asked;
   * a lower head asked for before the node last proved a higher one is an old answer, not a reorg.
   */
  observeHeader(u: Upstream, header: Header, observedAt = this.now()): void {
    const s = this.s(u);
    if (!this.counts(u)) return;
    if (header.number < s.head && observedAt < s.headAt) return;
    if (header.number === s.head && header.hash === s.headHash) return;
    const before = s.head;
    s.head = header.number;
    s.headHash = header.hash;
    s.headAt = this.now();
    this.recompute();
    // Only a node at the believed head speaks for the chain: a claim beyond it is not the chain's.
    if (s.head === this.head && !u.shadow) {
      const fork = this.canon.observe(header);
      if (fork !== null) {
        this.metrics.recordReorg();
        this.log.warn({ upstream: u.name, fork, head: header.number }, 'reorg: blocks from this height changed');
        // The node that had the served block now has a shorter chain: the blocks above it are gone,
        // and eth_blockNumber follows the chain down rather than pin `latest` to a block no node
        // has any more. (Another node's lower head after a failover is no such proof: it may only
        // be behind, at a height the fleet never recorded.)
        if (before >= this.served && header.number < before && this.served > this.head) this.served = this.head;
        this.emit('reorg', fork);
      }
    }
    this.emit('upstream-head', u);
  }

  /** A probe reached the node and it is on the configured chain. */
  markUp(u: Upstream): void {
    const s = this.s(u);
    // A quarantine for wrong answers lasts its time whatever the probes say.
    if (s.state === 'quarantined' && s.quarantinedUntil > this.now()) return;
    s.quarantinedUntil = 0;
    if (s.late && s.state === 'healthy') {
      s.late = false;
      this.log.info({ upstream: u.name }, 'upstream answers its polls again');
      this.publish();
      this.emit('upstream-head', u);
    }
    s.late = false;
    this.setState(u, 'healthy');
  }

  /** A poll timed out: the node keeps its state but gets no calls until a poll answers. */
  markLate(u: Upstream, why: string): void {
    const s = this.s(u);
    if (s.late) return;
    s.late = true;
    this.log.info({ upstream: u.name, why }, 'upstream late: a head poll timed out, not routed until it answers');
    this.publish();
  }

  /** A probe could not reach the node, or its answer was not one. */
  markDown(u: Upstream, why?: string): void {
    this.s(u).stateWhy = why ?? null;
    this.setState(u, 'down', why);
  }

  /** The node answers another chain id (`got`, or null when unreadable): never routed until it is right. */
  quarantine(u: Upstream, got: number | null): void {
    markAnotherChain(this.s(u), got, this.opts.chainId);
    if (this.s(u).state !== 'quarantined') {
      this.metrics.recordQuarantine(u.name);
      this.log.error(
        { upstream: u.name, expected: this.opts.chainId, got },
        'upstream answers another chain id: quarantined',
      );
    }
    this.setState(u, 'quarantined');
  }

  /** An answer from `u` failed verification: enough of them quarantine it (quarantine.ts). */
  wrongAnswer(u: Upstream): void {
    const limits = this.opts.wrongAnswers ?? WRONG_ANSWERS;
    if (!countWrongAnswer(this.s(u), this.now(), limits)) return;
    this.metrics.recordQuarantine(u.name);
    this.log.error(
      { upstream: u.name, wrongAnswers: limits.quarantineAfter, withinMs: limits.windowMs, forMs: limits.quarantineMs },
      'upstream gave wrong answers: quarantined',
    );
    this.setState(u, 'quarantined', 'wrong answers');
  }

  /** `u` answered a quorum read otherwise than the nodes that agreed: counted for /status (no health mark). */
  dissented(u: Upstream): void {
    this.s(u).dissent++;
  }

  /** The node's own `finalized` block. */
  observeFinalized(u: Upstream, n: number): void {
    const s = this.s(u);
    if (n <= s.finalized) return;
    s.finalized = n;
    this.recompute();
  }

  /** The node has no `finalized` tag: its finality is head - finalityDepth. */
  finalizedUnsupported(u: Upstream): void {
    this.s(u).finalizedSupported = false;
  }

  private setState(u: Upstream, state: UpstreamState, why?: string): void {
    const s = this.s(u);
    if (state === 'healthy') s.stateWhy = null;
    if (s.state !== state) {
      const level = state === 'healthy' ? 'info' : 'warn';
      this.log[level]({ upstream: u.name, from: s.state, to: state, why }, 'upstream state changed');
      s.state = state;
      this.emit('upstream-state', u);
      this.recompute();
      if (state === 'healthy') this.emit('upstream-head', u);
    }
  }

  /** Fleet head = the highest head the fleet believes (belief.ts) among healthy upstreams. */
  private recompute(): void {
    // A shadow's head is its own: it is tracked (lag, /status) but never moves the fleet's.
    const members = this.upstreams.filter((u) => !u.shadow);
    const heads = members
      .filter((u) => this.counts(u) && u.head >= 0)
      .map((u) => u.head)
      .sort((a, b) => b - a);
    const head = this.belief.judge(heads, members.length === 1, this.head);
    const max = this.opts.maxHeadJumpBlocks;
    // A node this far beyond the believed head is not routed either: what it answers for `latest`
    // is not this chain's latest. One nearer is routed for the blocks it shares with the others.
    for (const u of this.upstreams) this.s(u).implausible = head >= 0 && u.head - head > max;
    const previous = this.head;
    if (head >= 0) {
      this.head = head;
      this.finalized = finalizedHeight(
        members.filter((u) => this.counts(u)),
        head,
        this.opts.finalityDepth,
      );
      if (head > previous) this.belief.rose(previous, head);
      else if (head < previous) this.belief.fell(head);
    }
    // A block number served from a head no other node ever confirmed, and far beyond the head now
    // believed, was never this chain's: clients must not be held to it. One nearer holds (reads of
    // `latest` are answered at a block a node has meanwhile: latest()).
    if (head >= 0 && this.served - Math.max(head, this.belief.confirmedHead) > max) {
      this.log.warn(
        { served: this.served, head },
        'eth_blockNumber served from an implausible head: back to the fleet head',
      );
      this.served = head;
    }
    this.publish();
    if (this.head > previous) this.emit('head', this.head);
  }

  /**
   * The highest head the chain can have reached by now, as this replica's own nodes confirm it:
   * what a head told by another replica (replicas/shared-heads.ts) may be at most.
   */
  reach(): number {
    const r = this.belief.reach();
    return r >= 0 ? r : this.head;
  }

  private publish(): void {
    publishHeads(this.metrics, this.upstreams, (u) => this.lag(u), this.head, this.finalized, this.cordons);
  }

  /** Refreshes the gauges that move with every call (scraped, not pushed). */
  collect(): void {
    collectCallGauges(this.metrics, this.upstreams);
  }

  /**
   * A reloaded configuration (SPEC 2): routing settings at once; upstreams unchanged keep their
   * object (and in-flight calls); one at the same address with other settings keeps what the fleet
   * knows of it; removed ones stop getting calls at once and are closed once their in-flight calls
   * end. All or nothing: building a client can throw (a caFile gone since validation), and then the
   * fleet is as it was. Swaps synchronously; the promise resolves once the removed nodes closed.
   */
  apply(config: Config): Promise<void> {
    const change = changeMembers(this.upstreams, config.upstreams, (c, same) =>
      same === undefined
        ? this.build(c, freshStatus(), {})
        : this.build(c, { ...this.s(same), retiring: false }, { latencyMs: same.latencyMs }),
    );
    this.opts = fleetOptions(config);
    if (this.opts.breaker) for (const u of change.kept) u.breaker.configure(this.opts.breaker);
    for (const u of change.built) this.track(u);
    for (const u of change.removed) this.s(u).retiring = true;
    this.upstreams = change.next;
    this.recompute();
    return Promise.all(change.removed.map((u) => this.close(u))).then(() => undefined);
  }

  /** A removed node: not probed any more, its series gone (unless a replacement took its name), closed once idle. */
  private close(u: Upstream): Promise<void> {
    this.probes.stop(u);
    if (!this.upstreams.some((x) => x.name === u.name)) this.metrics.forgetUpstream(u.name);
    return closeWhenIdle(u, REMOVED_NODE_GRACE_MS);
  }

  async stop(): Promise<void> {
    this.probes.stopAll();
    await Promise.all(this.upstreams.map((u) => u.client.close()));
  }
}
