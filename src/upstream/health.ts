/**
 * Passive health: a per-upstream circuit breaker fed by real traffic.
 * Closed: calls flow. After `threshold` consecutive failures it opens: no calls for `cooldownMs`.
 * Then half-open: one trial call at a time; a success closes it, a failure opens it again.
 * Failures are timeouts, transport errors and HTTP 5xx (classify.ts); an expensive call's timeout
 * is none (classify.ts expensiveVerdict), nor a held call's (heldVerdict: a node holding
 * eth_sendRawTransactionSync or a trace does what it was asked), nor a "too many requests" answer
 * (it holds the node off: holdoff.ts), and never a revert.
 */
import type { BreakerStateLabel } from '../metrics/labels.js';

export type BreakerState = 'closed' | 'open' | 'half-open';

export interface BreakerOptions {
  threshold?: number;
  cooldownMs?: number;
  now?: () => number;
}

export class Breaker {
  private consecutive = 0;
  private openedAt = 0;
  private trialInFlight = false;
  private opened = false;
  private threshold: number;
  private cooldownMs: number;
  private readonly now: () => number;

  constructor(opts: BreakerOptions = {}) {
    this.threshold = opts.threshold ?? 5;
    this.cooldownMs = opts.cooldownMs ?? 5_000;
    this.now = opts.now ?? Date.now;
  }

  /** routing.breaker from the config (at start and on reload); the current state is kept. */
  configure(opts: { threshold: number; cooldownMs: number }): void {
    this.threshold = opts.threshold;
    this.cooldownMs = opts.cooldownMs;
  }

  /** Failures since the last success: what opened it, when it is open (/status's reason). */
  get failuresInARow(): number {
    return this.consecutive;
  }

  get state(): BreakerState {
    if (!this.opened) return 'closed';
    return this.now() - this.openedAt >= this.cooldownMs ? 'half-open' : 'open';
  }

  /** Whether a call may be sent now. In half-open, only one trial at a time. */
  allows(): boolean {
    const s = this.state;
    if (s === 'closed') return true;
    if (s === 'open') return false;
    return !this.trialInFlight;
  }

  /** Marks the start of a call; in half-open that call is the trial. */
  begin(): void {
    if (this.state === 'half-open') this.trialInFlight = true;
  }

  success(): void {
    this.consecutive = 0;
    this.opened = false;
    this.trialInFlight = false;
  }

  /** A call that says nothing of the node's health ended (neither success nor failure): a trial's slot is free again. */
  release(): void {
    this.trialInFlight = false;
  }

  failure(): void {
    this.trialInFlight = false;
    this.consecutive++;
    if (this.opened || this.consecutive >= this.threshold) {
      this.opened = true;
      this.openedAt = this.now();
    }
  }

  /** The metric's `state` label. */
  get label(): BreakerStateLabel {
    const s = this.state;
    return s === 'half-open' ? 'half_open' : s;
  }
}
