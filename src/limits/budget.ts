/**
 * Upstream budgets (upstreams[].rateLimit, SPEC 4.8): the most calls Switchyard sends one node, a
 * provider plan's cap. A budget holds `burst` calls for each window of burst / ratePerSec seconds,
 * rounded up to whole seconds (Redis times its windows in seconds; rounding up keeps the average at
 * or under ratePerSec). A window starts with the first call after the previous one ended, so around
 * a window's end up to 2 x burst calls can leave within moments; over any T seconds at most
 * burst x (ceil(T / window) + 1).
 * Routing takes a token per call when it picks a budgeted node (a chunk of N calls in one exchange
 * takes N at once); a refusal is at once, never a wait, and the call goes to another node
 * (routing/failover.ts). Refused tokens are given back, so a chunk that did not fit leaves the
 * window as it was for the calls that do.
 * With the top-level `redis` the windows live in Redis, one per upstream name and chain, shared by
 * every replica; while Redis is unusable (redis/connections.ts) each replica counts in its own
 * memory, so the node may get up to one budget per replica meanwhile, never an unlimited one.
 * Head polls and probes are not counted: they are a steady load the budget should leave room for.
 * Owns: the windows, taking and giving back tokens, the remaining count as last seen.
 * Refuses: which node a call goes to (routing/).
 */
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { UpstreamConfig } from '../config/schema.js';
import type { Metrics } from '../metrics/registry.js';
import type { RedisConnections, RedisLink } from '../redis/connections.js';

export interface BudgetRate {
  ratePerSec: number;
  burst: number;
}

/** The one key of a budget's limiter: each limiter belongs to one upstream already (its prefix). */
const KEY = 'calls';

/**
 * A refund this close to its window's end may land after it, and the store would then start the
 * next window at -n, more than the budget. Near the end the refund is skipped: the window ends anyway.
 */
const REFUND_MARGIN_MS = 50;

export class Budget {
  /** Seconds each window of `burst` calls lasts. */
  readonly windowSec: number;
  private readonly local: RateLimiterAbstract;
  private readonly shared: RateLimiterAbstract | null;
  /** Tokens left in the window as this replica last saw it, and when that window ends (Date.now). */
  private left: number;
  private endsAt = 0;

  constructor(
    readonly rate: Readonly<BudgetRate>,
    keyPrefix: string,
    private readonly link: RedisLink | null,
  ) {
    this.windowSec = Math.max(1, Math.ceil(rate.burst / rate.ratePerSec));
    this.left = rate.burst;
    const opts = { keyPrefix, points: rate.burst, duration: this.windowSec };
    this.local = new RateLimiterMemory(opts);
    this.shared =
      link === null ? null : new RateLimiterRedis({ ...opts, storeClient: link.client, rejectIfRedisNotReady: true });
  }

  /**
   * Takes `n` tokens: true when the node may get `n` more calls now. Never waits for tokens. In
   * Redis while it is usable; after a failed command, in memory (and every user of that Redis skips
   * it for a second).
   */
  async take(n: number): Promise<boolean> {
    if (n > this.rate.burst) return false;
    if (this.shared !== null && this.link!.usable) {
      try {
        const granted = await this.consume(this.shared, n);
        this.link!.note(true);
        return granted;
      } catch {
        this.link!.note(false);
      }
    }
    return this.consume(this.local, n);
  }

  private async consume(l: RateLimiterAbstract, n: number): Promise<boolean> {
    try {
      this.saw(await l.consume(KEY, n), 0);
      return true;
    } catch (res) {
      if (!(res instanceof RateLimiterRes)) throw res;
      this.saw(res, n);
      if (res.msBeforeNext > REFUND_MARGIN_MS) await l.reward(KEY, n).catch(() => undefined);
      return false;
    }
  }

  /**
   * Gives back `n` tokens taken for calls that were then not sent (a hedged read cancelled while
   * its token was taken: routing/failover.ts), to the store a take would use now. Skipped near the
   * window's end, as a refused take's refund is.
   */
  giveBack(n: number): void {
    if (this.msToRefill() <= REFUND_MARGIN_MS) return;
    const l = this.shared !== null && this.link!.usable ? this.shared : this.local;
    l.reward(KEY, n).then(
      (res) => this.saw(res, 0),
      () => undefined,
    );
  }

  /** `refunded`: tokens counted by a refused take that are given back. */
  private saw(res: RateLimiterRes, refunded: number): void {
    this.left = Math.max(0, this.rate.burst - (res.consumedPoints - refunded));
    this.endsAt = Date.now() + res.msBeforeNext;
  }

  /** Tokens left now, as this replica last saw its window (a window that has ended is full again). */
  remaining(): number {
    return Date.now() >= this.endsAt ? this.rate.burst : this.left;
  }

  /** Milliseconds until the window as last seen ends (0: it has). */
  msToRefill(): number {
    return Math.max(0, this.endsAt - Date.now());
  }

  /** For /status: the budget, its window, what is left, and whether it is shared through Redis now. */
  status(): Record<string, unknown> {
    return {
      ratePerSec: this.rate.ratePerSec,
      burst: this.rate.burst,
      windowSec: this.windowSec,
      remaining: this.remaining(),
      shared: this.link === null ? null : this.link.usable,
    };
  }
}

/** The budget of upstream `c` (null: it has none). */
export type BudgetMaker = (c: UpstreamConfig) => Budget | null;

/**
 * Makes each upstream's budget: in Redis when the top-level `redis` is set (one link, opened with
 * the first budget), else in memory. `redis` is read at start only (config/restart.ts), so the
 * choice holds for the process. A budget belongs to the upstream's name: a reload that keeps a
 * name and its rateLimit keeps the window it counts in, whatever else changed.
 */
export class Budgets {
  private link: RedisLink | null = null;
  private readonly byName = new Map<string, Budget>();

  constructor(
    private readonly redisUrl: string | null,
    private readonly chainId: number,
    private readonly connections: RedisConnections | null,
    private readonly metrics: Metrics | null,
  ) {}

  readonly of: BudgetMaker = (c) => {
    const rate = c.rateLimit;
    if (rate === null) return null;
    const running = this.byName.get(c.name);
    if (running !== undefined && running.rate.ratePerSec === rate.ratePerSec && running.rate.burst === rate.burst)
      return running;
    this.metrics?.declareBudget(c.name);
    const budget = new Budget(rate, `switchyard:budget:${this.chainId}:${c.name}`, this.shared());
    this.byName.set(c.name, budget);
    return budget;
  };

  private shared(): RedisLink | null {
    if (this.redisUrl === null || this.connections === null) return null;
    this.link ??= this.connections.link(this.redisUrl, {
      name: 'upstream budgets',
      whileDown: 'upstream budgets count in local memory (one budget per replica)',
    });
    return this.link;
  }
}

/** Budgets in this process's memory, for a fleet built without the app's Redis (tools, tests): one maker per fleet. */
export function memoryBudgets(): BudgetMaker {
  return new Budgets(null, 0, null, null).of;
}
