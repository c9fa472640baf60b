/**
 * One upstream's active health and head probe: its chain id at start, every chainIdCheckMs and
 * after any outage; its `latest` header every headPollMs (and from its newHeads subscription when
 * it has `ws`); its `finalized` block every few polls where it has the tag. Reports to the fleet,
 * which decides what the answers mean for the fleet head. Probes never touch the breaker.
 * A poll that times out makes a healthy node late (not routed until a poll answers); only
 * POLL_TIMEOUTS_TO_DOWN timeouts in a row, none while the node runs an expensive call, mark it
 * down. A node running one heavy call (anvil tracing) answers everything late for that long: the
 * node is skipped meanwhile, not declared an outage. Any other failure (refused, a bad answer) marks it down at once.
 * A node held off (holdoff.ts) is not polled until its hold-off ends, and a poll answered "too many
 * requests" leaves its state as it was: a hold-off is no health failure.
 */
import type { Header } from './heads.js';
import { parseHeader } from './heads.js';
import type { Upstream } from './node.js';
import { parseQuantity } from '../jsonrpc/hex.js';
import { WsHeads } from './ws-heads.js';
import type { Verdict } from './classify.js';

export interface ProbeSettings {
  chainId: number;
  headPollMs: number;
  chainIdCheckMs: number;
  upstreamTimeoutMs: number;
}

/** Observations, reported to the fleet (its transitions decide what they mean). */
export interface ProbeSink {
  up(): void;
  /** `why`: what the probe got instead (a retry reason, a node error code, an unreadable header); no URL. */
  down(why: string): void;
  /** A poll timed out, not yet POLL_TIMEOUTS_TO_DOWN in a row: skip the node until it answers. */
  late(why: string): void;
  /** `observedAt`: when the question was asked, so an answer older than a newer proof is ignored. */
  header(h: Header, observedAt: number): void;
  finalized(n: number): void;
  finalizedUnsupported(): void;
  quarantined(got: number | null): void;
  crashed(err: Error): void;
}

/** The fleet's own polls are probes: they decide up/down, never the breaker (node.ts). */
const PROBE = { probe: true } as const;

/** Poll timeouts in a row that mark a node down (HAProxy's `fall` default). */
export const POLL_TIMEOUTS_TO_DOWN = 3;

/** How long one question of a poll may take: twice the poll interval (at least 1 s), within upstreamTimeoutMs. */
export function pollTimeoutMs(s: Pick<ProbeSettings, 'headPollMs' | 'upstreamTimeoutMs'>): number {
  return Math.min(s.upstreamTimeoutMs, Math.max(1000, s.headPollMs * 2));
}

/** How often (in head polls) the `finalized` block is asked for. */
const FINALIZED_EVERY_POLLS = 5;

export class Probe {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private chainCheckedAt = 0;
  private polls = 0;
  /** Poll timeouts since the last answer. */
  private timeouts = 0;
  private ws: WsHeads | null = null;

  constructor(
    private readonly u: Upstream,
    /** Read on every poll, so a reload's new intervals apply to running probes. */
    private readonly settings: () => ProbeSettings,
    /** The fleet's clock: `observedAt` is compared with head times it keeps. */
    private readonly now: () => number,
    private readonly sink: ProbeSink,
  ) {}

  start(): void {
    if (this.u.config.ws !== undefined) {
      this.ws = new WsHeads(this.u.config.ws, (h) => this.sink.header(h, this.now()));
      this.ws.start();
    }
    const tick = async (): Promise<void> => {
      if (this.stopped) return;
      try {
        await this.poll();
      } catch (err) {
        this.sink.crashed(err as Error);
      }
      if (!this.stopped) this.timer = setTimeout(tick, this.settings().headPollMs);
    };
    void tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.stop();
  }

  private async poll(): Promise<void> {
    const { u } = this;
    if (u.heldOff) return;
    const settings = this.settings();
    const timeout = pollTimeoutMs(settings);
    const now = this.now();
    // Re-verify the chain after any outage too: what answers on that address may be another node now.
    if (u.state !== 'healthy' || now - this.chainCheckedAt >= settings.chainIdCheckMs) {
      const { verdict } = await u.call('eth_chainId', '[]', timeout, PROBE);
      if (this.stopped) return;
      if (verdict.kind !== 'result') return this.failed(`eth_chainId: ${whyNot(verdict)}`, verdict);
      const got = typeof verdict.result === 'string' ? parseQuantity(verdict.result) : null;
      if (got !== settings.chainId) return this.sink.quarantined(got);
      this.chainCheckedAt = now;
    }
    const asked = this.now();
    const { verdict } = await u.call('eth_getBlockByNumber', '["latest",false]', timeout, PROBE);
    if (this.stopped) return;
    const header = verdict.kind === 'result' ? parseHeader(verdict.result) : null;
    if (header === null)
      return this.failed(
        `latest block: ${verdict.kind === 'result' ? 'not a block header' : whyNot(verdict)}`,
        verdict,
      );
    this.timeouts = 0;
    this.sink.up();
    this.sink.header(header, asked);
    if (u.finalizedSupported && ++this.polls % FINALIZED_EVERY_POLLS === 1) await this.pollFinalized(timeout);
  }

  /**
   * A poll got no usable answer: a timeout of a healthy node makes it late, until too many in a
   * row; else down. While the node runs an expensive call its poll timeouts are not counted: the
   * call is why it answers late, and it ends by its method's timeout at the latest (a late node
   * gets no new calls), after which timeouts count again.
   */
  private failed(why: string, verdict: Verdict): void {
    if (verdict.kind === 'retry' && verdict.holdOff === true) return;
    const timedOut = verdict.kind === 'retry' && verdict.reason === 'timeout';
    if (timedOut && this.u.state === 'healthy') {
      if (this.u.expensiveInFlight > 0) return this.sink.late(why);
      if (++this.timeouts < POLL_TIMEOUTS_TO_DOWN) return this.sink.late(why);
    }
    this.sink.down(why);
  }

  /** The node's `finalized` block where it has the tag; else finality is head - finalityDepth. */
  private async pollFinalized(timeout: number): Promise<void> {
    const { verdict } = await this.u.call('eth_getBlockByNumber', '["finalized",false]', timeout, PROBE);
    if (this.stopped) return;
    if (verdict.kind === 'node-error') return this.sink.finalizedUnsupported();
    const header = verdict.kind === 'result' ? parseHeader(verdict.result) : null;
    if (header !== null) this.sink.finalized(header.number);
  }
}

/** A fleet's probes, one a node, each started and stopped with its node's membership. */
export class Probes {
  private readonly byNode = new Map<Upstream, Probe>();

  constructor(
    /** Read on every poll (a reload's new intervals apply to running probes). */
    private readonly settings: () => ProbeSettings,
    private readonly now: () => number,
  ) {}

  start(u: Upstream, sink: ProbeSink): void {
    const probe = new Probe(u, this.settings, this.now, sink);
    this.byNode.set(u, probe);
    probe.start();
  }

  stop(u: Upstream): void {
    this.byNode.get(u)?.stop();
    this.byNode.delete(u);
  }

  stopAll(): void {
    for (const u of [...this.byNode.keys()]) this.stop(u);
  }
}

/** Why an answer was not one, for the log: the retry reason or the node error's code. */
function whyNot(v: Exclude<Verdict, { kind: 'result' }>): string {
  return v.kind === 'retry' ? v.reason : `node error ${v.code}`;
}

export { parseQuantity } from '../jsonrpc/hex.js';
