/**
 * The fleet: every configured upstream, their state and heads, and the fleet head derived from them.
 * Owns: chain-id verification (quarantine), head polling, the fleet head and finalized height, the
 * block number served to clients (it never goes backwards), and swapping upstreams on reload.
 * Refuses: choosing an upstream for a call (routing/select.ts), transport (client.ts).
 *
 * The fleet is the only writer of upstream state (node.ts `NodeStatus`). Everything else reports
 * observations through these transitions, and the fleet decides what they mean:
 *   markUp(u) / markDown(u)       a probe reached the node on the right chain / could not
 *   markLate(u)                   a poll timed out: not routed until a poll answers (probe.ts)
 *   quarantine(u, got)            the node answers another chain id
 *   observeHeader(u, h, askedAt)  a `latest` header from a poll or a newHeads subscription
 *   proveBlock(u, n)              an answer from u proved it has block n (its head is at least n)
 *   takeShared(u, n)              another replica saw u at n (Redis): taken only within reach
 *   observeFinalized(u, n)        the node's own `finalized` block
 *   finalizedUnsupported(u)       the node has no `finalized` tag
 *   retire (reconfigure)          the node is being removed: no new calls, its head stops counting
 * Only a healthy, non-retiring node moves the head (node.ts `movesHead`, checked in `counts`).
 * Events: 'upstream-head' (u) when a node's head or state changes, 'head' (n) when the fleet head
 * rises, 'reorg' (height) when blocks from that height changed.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Config, UpstreamConfig } from '../config/schema.js';
import type { Metrics } from '../metrics/registry.js';
import { HeadBelief } from './belief.js';
import { Canon, type Header } from './heads.js';
import { HttpUpstreamClient, type UpstreamClient } from './client.js';
import { Breaker } from './health.js';
import { freshStatus, movesHead, Upstream, type NodeStatus, type UpstreamState } from './node.js';
import { Probe, type ProbeSettings } from './probe.js';

export interface FleetOptions {
  chainId: number;
  headPollMs: number;
  chainIdCheckMs: number;
  upstreamTimeoutMs: number;
  finalityDepth: number;
  maxHeadJumpBlocks: number;
  /**
   * Blocks a head no other node confirms may run beyond the chain's pace since the last confirmed
   * head (belief.ts); absent = 4, the config default.
   */
  headSlackBlocks?: number;
  /** Circuit breaker settings for every upstream (routing.breaker); absent = the Breaker's defaults. */
  breaker?: { threshold: number; cooldownMs: number };
}

export function fleetOptions(cfg: Config): FleetOptions {
  return {
    chainId: cfg.chainId,
    headPollMs: cfg.routing.headPollMs,
    chainIdCheckMs: cfg.routing.chainIdCheckMs,
    upstreamTimeoutMs: cfg.routing.upstreamTimeoutMs,
    finalityDepth: cfg.cache.finalityDepth,
    maxHeadJumpBlocks: cfg.routing.maxHeadJumpBlocks,
    headSlackBlocks: cfg.routing.headSlackBlocks,
    breaker: { threshold: cfg.routing.breaker.failureThreshold, cooldownMs: cfg.routing.breaker.cooldownMs },
  };
}

/** A new upstream set built by Fleet.prepare: swapped in by `apply`, or thrown away by `discard`. */
export interface FleetChange {
  /** Swaps the new set in at once; resolves when the removed nodes have drained and closed. */
  apply(): Promise<void>;
  discard(): void;
}

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
  private readonly probes = new Map<Upstream, Probe>();
  /** The writable state of every upstream, current and retiring: the fleet's alone. */
  private readonly status = new WeakMap<Upstream, NodeStatus>();
  private readonly canon = new Canon();

  constructor(
    private opts: FleetOptions,
    configs: readonly UpstreamConfig[],
    private readonly metrics: Metrics,
    private readonly log: Logger,
    /** Builds the transport for one node (tests inject fakes); `latencyMs` seeds a replacement's average. */
    private readonly makeClient: (c: UpstreamConfig, seed: { latencyMs?: number; breaker?: Breaker }) => UpstreamClient = (c, seed) => new HttpUpstreamClient(c, seed),
    /** The routing clock: head times, breaker cooldowns, call deadlines (routing/failover.ts). Tests pass a controlled one. */
    readonly now: () => number = Date.now,
  ) {
    super();
    // Every call waiting for a block adds a listener for a moment; thousands at once are normal.
    this.setMaxListeners(0);
    this.belief = new HeadBelief(() => ({ slackBlocks: this.opts.headSlackBlocks ?? 4, headPollMs: this.opts.headPollMs }), now);
    this.upstreams = configs.map((c) => this.build(c, freshStatus(), {}));
  }

  private build(c: UpstreamConfig, status: NodeStatus, seed: { latencyMs?: number }): Upstream {
    const u = new Upstream(this.makeClient(c, { ...seed, breaker: new Breaker({ now: this.now }) }), status);
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
    for (const u of this.upstreams) if (u.available && u.head > top) top = u.head;
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
    return this.upstreams.filter((u) => u.available).length;
  }

  private track(u: Upstream): void {
    this.metrics.declareUpstream(u.name);
    if (this.opts.breaker) u.breaker.configure(this.opts.breaker);
    const probe = new Probe(u, () => this.probeSettings(), this.now, {
      up: () => {
        this.log.debug({ upstream: u.name, state: 'healthy' }, 'probe: state');
        this.markUp(u);
      },
      down: (why) => {
        this.log.debug({ upstream: u.name, state: 'down', why }, 'probe: state');
        this.markDown(u, why);
      },
      late: (why) => this.markLate(u, why),
      header: (h, observedAt) => {
        this.log.debug({ upstream: u.name, head: h.number }, 'probe: head');
        this.observeHeader(u, h, observedAt);
      },
      finalized: (n) => this.observeFinalized(u, n),
      finalizedUnsupported: () => this.finalizedUnsupported(u),
      quarantined: (got) => this.quarantine(u, got),
      crashed: (err) => this.log.error({ upstream: u.name, err }, 'head poll crashed'),
    });
    this.probes.set(u, probe);
    probe.start();
  }

  private probeSettings(): ProbeSettings {
    return { chainId: this.opts.chainId, headPollMs: this.opts.headPollMs, chainIdCheckMs: this.opts.chainIdCheckMs, upstreamTimeoutMs: this.opts.upstreamTimeoutMs };
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

  /**
   * Another replica saw `u` at n (replicas/shared-heads.ts): what Redis holds is input, so it is
   * taken only as far as this replica's own nodes make it possible (reach()). False: refused.
   */
  takeShared(u: Upstream, n: number): boolean {
    if (!Number.isSafeInteger(n) || n < 0 || n > this.reach()) return false;
    this.proveBlock(u, n);
    return true;
  }

  /**
   * A new head from polling or from the node's newHeads subscription. `observedAt`: when the
   * question was asked; a lower head asked for before the node last proved a higher one is an old
   * answer, not a reorg.
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
    if (s.head === this.head) {
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
    this.setState(u, 'down', why);
  }

  /** The node answers another chain id (`got`, or null when unreadable): never routed until it is right. */
  quarantine(u: Upstream, got: number | null): void {
    if (this.s(u).state !== 'quarantined') {
      this.metrics.recordQuarantine(u.name);
      this.log.error({ upstream: u.name, expected: this.opts.chainId, got }, 'upstream answers another chain id: quarantined');
    }
    this.setState(u, 'quarantined');
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
    if (s.state !== state) {
      const level = state === 'healthy' ? 'info' : 'warn';
      this.log[level]({ upstream: u.name, from: s.state, to: state, why }, 'upstream state changed');
      s.state = state;
      this.recompute();
      if (state === 'healthy') this.emit('upstream-head', u);
    }
  }

  /** Fleet head = the highest head the fleet believes (belief.ts) among healthy upstreams. */
  private recompute(): void {
    const heads = this.upstreams
      .filter((u) => this.counts(u) && u.head >= 0)
      .map((u) => u.head)
      .sort((a, b) => b - a);
    const head = this.belief.judge(heads, this.upstreams.length === 1, this.head);
    const max = this.opts.maxHeadJumpBlocks;
    // A node this far beyond the believed head is not routed either: what it answers for `latest`
    // is not this chain's latest. One nearer is routed for the blocks it shares with the others.
    for (const u of this.upstreams) this.s(u).implausible = head >= 0 && u.head - head > max;
    const previous = this.head;
    if (head >= 0) {
      this.head = head;
      this.finalized = this.finalizedHeight(head);
      if (head > previous) this.belief.rose(previous, head);
      else if (head < previous) this.belief.fell(head);
    }
    // A block number served from a head no other node ever confirmed, and far beyond the head now
    // believed, was never this chain's: clients must not be held to it. One nearer holds (reads of
    // `latest` are answered at a block a node has meanwhile: latest()).
    if (head >= 0 && this.served - Math.max(head, this.belief.confirmedHead) > max) {
      this.log.warn({ served: this.served, head }, 'eth_blockNumber served from an implausible head: back to the fleet head');
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

  /**
   * The lowest finalized height among in-sync healthy upstreams (their `finalized` tag, or head -
   * finalityDepth): the cache trusts a block as immutable only when every node it may ask agrees.
   */
  private finalizedHeight(head: number): number {
    let min = Number.POSITIVE_INFINITY;
    for (const u of this.upstreams) {
      if (!this.counts(u) || head - u.head > this.opts.finalityDepth) continue;
      const f = u.finalizedSupported && u.finalized >= 0 ? u.finalized : u.head - this.opts.finalityDepth;
      min = Math.min(min, f);
    }
    return Number.isFinite(min) ? Math.max(0, Math.min(min, head)) : Math.max(0, head - this.opts.finalityDepth);
  }

  private publish(): void {
    for (const u of this.upstreams) {
      this.metrics.setUpstreamHead(u.name, u.head);
      this.metrics.setUpstreamLag(u.name, Number.isFinite(this.lag(u)) ? this.lag(u) : -1);
      this.metrics.setUpstreamHealthy(u.name, u.available);
      this.metrics.setQuarantined(u.name, u.state === 'quarantined');
    }
    this.metrics.setFleetHead(this.head);
    this.metrics.setFleetFinalized(this.finalized);
  }

  /** Refreshes the gauges that move with every call (scraped, not pushed). */
  collect(): void {
    for (const u of this.upstreams) {
      this.metrics.setUpstreamInFlight(u.name, u.inFlight);
      this.metrics.setBreakerState(u.name, u.breaker.label);
      this.metrics.setUpstreamLatency(u.name, u.latencyMs / 1000);
      this.metrics.setUpstreamHealthy(u.name, u.available);
    }
  }

  /**
   * Applies a reloaded upstream list: unchanged entries keep their object (and in-flight calls);
   * removed ones stop getting new calls and are closed once their in-flight calls finish.
   */
  async reconfigure(opts: FleetOptions, configs: readonly UpstreamConfig[]): Promise<void> {
    await this.prepare(opts, configs).apply();
  }

  /**
   * Builds the upstreams of a new configuration without touching the running fleet: building a
   * client can throw (a URL whose credentials do not decode, an unreadable caFile), and a reload
   * that fails must leave the fleet as it was. `apply` swaps them in (it must run in the same turn
   * as prepare, so a kept node's copied state is current); `discard` closes what was built.
   */
  prepare(opts: FleetOptions, configs: readonly UpstreamConfig[]): FleetChange {
    const byName = new Map(this.upstreams.map((u) => [u.name, u]));
    const next: Upstream[] = [];
    const built: Upstream[] = [];
    const discard = (): void => {
      for (const u of built) void u.client.close();
    };
    try {
      for (const c of configs) {
        const old = byName.get(c.name);
        if (old && JSON.stringify(old.config) === JSON.stringify(c)) {
          next.push(old);
          byName.delete(c.name);
        } else {
          // Same address, other weight/tags/pool size: the same node, so it keeps what the fleet
          // knows of it (state, head, finality) and its latency, and stays routable. Starting it as
          // 'connecting' left a gap until its first poll, and re-weighting every upstream at once
          // answered calls with "none healthy" meanwhile. Its chain id is checked again on the
          // tracker's first poll all the same.
          const same = old !== undefined && old.config.url === c.url && old.config.ws === c.ws;
          const u = same ? this.build(c, { ...this.s(old), retiring: false }, { latencyMs: old.latencyMs }) : this.build(c, freshStatus(), {});
          next.push(u);
          built.push(u);
        }
      }
    } catch (err) {
      discard();
      throw err;
    }
    const removed = [...byName.values()];
    return {
      apply: async () => {
        this.opts = opts;
        if (opts.breaker) for (const u of this.upstreams) u.breaker.configure(opts.breaker);
        for (const u of built) this.track(u);
        for (const u of removed) this.retire(u);
        this.upstreams = next;
        this.recompute();
        await Promise.all(removed.map((u) => this.drain(u)));
      },
      discard,
    };
  }

  /** The node is being removed: it takes no new calls and its head stops counting at once. */
  private retire(u: Upstream): void {
    this.s(u).retiring = true;
  }

  /** Stops probing a removed node and closes it once its in-flight calls finish. */
  private async drain(u: Upstream): Promise<void> {
    this.untrack(u);
    // A re-weighted node is replaced under the same name: its series belong to the new object now.
    if (!this.upstreams.some((x) => x.name === u.name)) this.metrics.forgetUpstream(u.name);
    const deadline = Date.now() + 60_000;
    while (u.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await u.client.close();
  }

  private untrack(u: Upstream): void {
    this.probes.get(u)?.stop();
    this.probes.delete(u);
  }

  async stop(): Promise<void> {
    for (const u of [...this.probes.keys()]) this.untrack(u);
    await Promise.all(this.upstreams.map((u) => u.client.close()));
  }
}
