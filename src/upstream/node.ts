/**
 * One upstream node as the rest of Switchyard sees it: its transport (client.ts) and its state,
 * read-only. The state (up/down, head, finalized, retiring...) is written by the fleet alone
 * (fleet.ts), through its named transitions; probes and answers only report observations to it.
 * Refuses: choosing nodes (routing/), tracking heads across the fleet (fleet.ts).
 */
import type { UpstreamConfig } from '../config/schema.js';
import type { Budget } from '../limits/budget.js';
import type { CallOptions, CallTiming, ManyTiming, OutgoingCall, UpstreamClient } from './client.js';
import type { Breaker } from './health.js';
import { Serving, type Capability } from './serving.js';

export type { CallTiming } from './client.js';

export type UpstreamState = 'connecting' | 'healthy' | 'down' | 'quarantined';

/** What the fleet knows about one node. Only fleet.ts holds a writable reference. */
export interface NodeStatus {
  state: UpstreamState;
  head: number;
  headHash: string;
  /** When the head was last set (Date.now()): an older poll answer does not lower it. */
  headAt: number;
  /** The node's own `finalized` block, where it supports the tag. */
  finalized: number;
  finalizedSupported: boolean;
  /** Its head is implausibly far beyond the rest of the fleet: not routed. */
  implausible: boolean;
  /** Being reloaded away: no new calls. */
  retiring: boolean;
  /**
   * Its last head poll timed out: not routed until a poll answers, but not down either until
   * polls keep timing out (probe.ts): a node busy with one heavy call answers everything late.
   */
  late: boolean;
  /** Why it is quarantined (`another chain id`, `wrong answers`), or null. */
  quarantineWhy: string | null;
  /**
   * What put it in its state, in words for /status (`latest block: timeout`, `wrong chain 0x1
   * (expected 0xba)`, `3 wrong answers within 600 s`): no URL, never a node's own text. Null when healthy.
   */
  stateWhy: string | null;
  /** A quarantine for wrong answers lasts until then (the fleet's clock); 0: none. */
  quarantinedUntil: number;
  /** When its recent wrong answers came (routing/verified.ts), oldest first, at most routing.verify.quarantineAfter. */
  wrongAt: number[];
  /** Its answers to quorum reads that differed from the agreed one (routing/quorum.ts), since start. */
  dissent: number;
  /** Its answers that failed verification (routing/verified.ts), since start. */
  wrongAnswers: number;
}

export function freshStatus(): NodeStatus {
  return {
    state: 'connecting',
    head: -1,
    headHash: '',
    headAt: 0,
    finalized: -1,
    finalizedSupported: true,
    implausible: false,
    retiring: false,
    late: false,
    quarantineWhy: null,
    stateWhy: null,
    quarantinedUntil: 0,
    wrongAt: [],
    dissent: 0,
    wrongAnswers: 0,
  };
}

/** The one rule for whose head counts: a healthy node that is not being removed. */
export function movesHead(s: Readonly<NodeStatus>): boolean {
  return s.state === 'healthy' && !s.retiring;
}

export class Upstream {
  readonly name: string;
  readonly weight: number;
  readonly tags: ReadonlySet<string>;
  /** What it can serve: configured tags and what discovery found (serving.ts). */
  readonly serving: Serving;

  constructor(
    readonly client: UpstreamClient,
    private readonly status: Readonly<NodeStatus>,
    /** upstreams[].rateLimit: routing takes a token per call sent (limits/budget.ts); null = no budget. */
    readonly budget: Budget | null = null,
  ) {
    this.name = client.name;
    this.weight = client.config.weight;
    this.tags = new Set(client.config.tags);
    this.serving = new Serving(client.config);
  }

  /** It has the capability: tagged so, or discovered (serving.ts). */
  can(c: Capability): boolean {
    return this.serving.has(c);
  }

  /** Its earliest block with state now, or null when unknown (serving.ts). */
  get earliestBlock(): number | null {
    return this.serving.earliestBlock(this.status.head);
  }

  /** It can serve a read of the state at block n: it has that state, or nothing says it has not. */
  hasStateAt(n: number): boolean {
    const e = this.earliestBlock;
    return e === null || e <= n;
  }

  get config(): UpstreamConfig {
    return this.client.config;
  }
  /** upstreams[].shadow: gets copies of reads to compare (routing/shadow.ts), never a client's call. */
  get shadow(): boolean {
    return this.client.config.shadow === true;
  }
  get state(): UpstreamState {
    return this.status.state;
  }
  get head(): number {
    return this.status.head;
  }
  get headHash(): string {
    return this.status.headHash;
  }
  get finalized(): number {
    return this.status.finalized;
  }
  get finalizedSupported(): boolean {
    return this.status.finalizedSupported;
  }
  get implausible(): boolean {
    return this.status.implausible;
  }
  get retiring(): boolean {
    return this.status.retiring;
  }
  get late(): boolean {
    return this.status.late;
  }
  /** Why it is quarantined, or null. */
  get quarantineWhy(): string | null {
    return this.status.state === 'quarantined' ? this.status.quarantineWhy : null;
  }
  /** What put it in its state (NodeStatus.stateWhy), or null. */
  get stateWhy(): string | null {
    return this.status.stateWhy;
  }
  /** When a quarantine for wrong answers ends (the fleet's clock), or null. */
  get quarantinedUntil(): number | null {
    return this.status.state === 'quarantined' && this.status.quarantinedUntil > 0
      ? this.status.quarantinedUntil
      : null;
  }
  get breaker(): Breaker {
    return this.client.breaker;
  }
  /** It said "too many requests" and gets no calls yet (holdoff.ts); not a health matter, so not in `available`. */
  get heldOff(): boolean {
    return this.client.holdOff?.active === true;
  }
  /** When its hold-off ends (routing clock, ms since the epoch), or null when it is not held off. */
  get heldOffUntil(): number | null {
    return this.client.holdOff?.until ?? null;
  }
  get inFlight(): number {
    return this.client.inFlight;
  }
  /** Held calls it is holding for clients (client.ts): what its held lane carries now. */
  get heldInFlight(): number {
    return this.client.heldInFlight ?? 0;
  }
  /** Its held lane has a free connection (upstreams[].heldConnections): routing/lane.ts. */
  get heldRoom(): boolean {
    return this.heldInFlight < this.client.config.heldConnections;
  }
  /** Expensive calls it is running for clients (each bounded by its method's timeout). */
  get expensiveInFlight(): number {
    return this.client.expensiveInFlight ?? 0;
  }
  get latencyMs(): number {
    return this.client.latencyMs;
  }
  /** Answers to quorum reads that differed from the agreed one (routing/quorum.ts). */
  get dissent(): number {
    return this.status.dissent;
  }
  /** Answers that failed verification (routing/verified.ts), since start. */
  get wrongAnswers(): number {
    return this.status.wrongAnswers;
  }
  /** upstreams[].group, else its name: quorum reads and unverifiable answers count nodes by it. */
  get group(): string {
    return this.client.config.group ?? this.name;
  }
  get calls(): number {
    return this.client.calls;
  }
  get failures(): number {
    return this.client.failures;
  }

  call(method: string, paramsJson: string, timeoutMs: number, opts: CallOptions = {}): Promise<CallTiming> {
    return this.client.call(method, paramsJson, timeoutMs, opts);
  }

  callMany(calls: readonly OutgoingCall[], timeoutMs: number, traceparent?: string): Promise<ManyTiming> {
    return this.client.callMany(calls, timeoutMs, traceparent);
  }

  /** Routable at all: reachable, answering its polls, right chain, plausible head, breaker lets calls through, not being removed. */
  get available(): boolean {
    return movesHead(this.status) && !this.status.implausible && !this.status.late && this.client.breaker.allows();
  }
}
