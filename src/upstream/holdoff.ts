/**
 * Hold-off (SPEC 4.8): a node that says "too many requests" (HTTP 429, or a -32005 / limit answer:
 * classify.ts `holdOff`) gets no calls for a while. It is not failing: its breaker and its state
 * stay as they are (client.ts leaves them alone for such an answer); routing only skips it
 * (routing/select.ts) until the hold-off ends.
 * Owns: how long a hold-off lasts, the doubling across repeats, reading `Retry-After`.
 * Refuses: deciding what answer is a limit (classify.ts), choosing nodes (routing/).
 *
 * How long: the node's `Retry-After` when it sent one, else 1 s doubling on each repeat; either
 * capped at routing.holdOffMaxMs; then up to 20% more at random, so replicas held off together do
 * not all come back at the same moment (the cap still bounds the whole). A good answer ends the
 * doubling: the next limit starts again at 1 s.
 */
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/registry.js';
import type { Verdict } from './classify.js';

/** The first hold-off without a `Retry-After`; each repeat doubles it. */
export const FIRST_HOLD_OFF_MS = 1_000;
/** routing.holdOffMaxMs's default: 10 minutes. */
export const DEFAULT_HOLD_OFF_MAX_MS = 600_000;
/** At most this share of a hold-off is added at random. */
export const HOLD_OFF_JITTER = 0.2;

export interface HoldOffOptions {
  /** The routing clock (ms since the epoch: heldOffUntil is shown as a date). */
  now?: () => number;
  /** In [0, 1): the share of HOLD_OFF_JITTER added. */
  random?: () => number;
  /** routing.holdOffMaxMs, read at each limit so a reload applies to running nodes; undefined: the default. */
  maxMs?: () => number | undefined;
  /**
   * Called once per limit answer (an exchange answered with one or more), for the metrics and the
   * log: `began`, the length of the hold-off it started, or null when one was running already.
   */
  onLimited?: (began: number | null) => void;
}

export class HoldOff {
  /** When the hold-off ends (routing clock); at or before now: not held off. */
  private endsAt = 0;
  /** Hold-offs without a good answer between them: the next one lasts FIRST_HOLD_OFF_MS x 2^repeats. */
  private repeats = 0;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly maxMs: () => number | undefined;
  private readonly onLimited: (began: number | null) => void;

  constructor(opts: HoldOffOptions = {}) {
    this.now = opts.now ?? Date.now;
    this.random = opts.random ?? Math.random;
    this.maxMs = opts.maxMs ?? (() => undefined);
    this.onLimited = opts.onLimited ?? (() => undefined);
  }

  /** Whether the node gets no calls now. */
  get active(): boolean {
    return this.endsAt > this.now();
  }

  /** When the hold-off ends, or null when the node is not held off. */
  get until(): number | null {
    return this.active ? this.endsAt : null;
  }

  /**
   * The node answered "too many requests"; `retryAfterMs`: what its Retry-After asked for, if it
   * sent one. Answers arriving while a hold-off runs were asked for before it began: they may
   * lengthen it to their own Retry-After, but are no repeat (the doubling counts hold-offs, not
   * the calls that were in flight when the node began refusing).
   */
  limited(retryAfterMs?: number): void {
    const now = this.now();
    const running = this.endsAt > now;
    if (running && retryAfterMs === undefined) {
      this.onLimited(null);
      return;
    }
    const max = this.maxMs() ?? DEFAULT_HOLD_OFF_MAX_MS;
    const base = Math.min(retryAfterMs ?? FIRST_HOLD_OFF_MS * 2 ** Math.min(this.repeats, 40), max);
    // Whole milliseconds: heldOffUntil is shown to the millisecond, and means exactly that.
    const ms = Math.round(Math.min(base * (1 + HOLD_OFF_JITTER * this.random()), max));
    this.endsAt = Math.max(this.endsAt, now + ms);
    if (!running) this.repeats++;
    this.onLimited(running ? null : ms);
  }

  /**
   * One exchange's verdicts: any number of its calls answered "too many requests" is one limit,
   * with the exchange's Retry-After header; else a good answer among them ends the doubling.
   * Returns the verdicts as given.
   */
  read<T extends Verdict | Verdict[] | Map<number, Verdict> | null>(verdicts: T, retryAfter: string | undefined): T {
    const all: Verdict | Verdict[] | Map<number, Verdict> | null = verdicts;
    if (all === null) return verdicts;
    let good = false;
    for (const v of all instanceof Map ? all.values() : Array.isArray(all) ? all : [all]) {
      if (v.kind !== 'retry') good = true;
      else if (v.holdOff === true) {
        this.limited(retryAfterMs(retryAfter, this.now()));
        return verdicts;
      }
    }
    if (good) this.answered();
    return verdicts;
  }

  /**
   * A good answer (a result, or an error that is the call's own answer): the node serves again, so
   * the doubling ends. One that arrives while held off was asked for before the hold-off began and
   * says nothing of the node since.
   */
  answered(): void {
    if (this.repeats > 0 && !this.active) this.repeats = 0;
  }
}

/**
 * A fleet node's hold-off: the routing clock, routing.holdOffMaxMs as reloaded, each limit counted
 * under the node's name, and each hold-off that begins logged (not each refusal: a busy provider
 * refuses many calls at once).
 */
export function nodeHoldOff(
  name: string,
  now: () => number,
  maxMs: () => number | undefined,
  m: Metrics,
  log: Logger,
): HoldOff {
  const onLimited = (began: number | null): void => {
    m.recordUpstreamRateLimited(name);
    if (began !== null)
      log.info({ upstream: name, heldOffMs: Math.round(began) }, 'upstream held off: it answered "too many requests"');
  };
  return new HoldOff({ now, maxMs, onLimited });
}

/**
 * A `Retry-After` header's wait in ms: delta-seconds, or an HTTP date (RFC 9110 10.2.3) less `now`
 * (0 when past). Undefined when absent or unreadable: the doubling applies then.
 */
export function retryAfterMs(header: string | undefined, now: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Every HTTP date form starts with a day name; Date.parse alone reads "-5" or "1.5" as dates.
  if (!/^[A-Za-z]{3}/.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}
