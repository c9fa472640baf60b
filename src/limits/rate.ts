/**
 * Per-client rate limits (SPEC 6): two rate-limiter-flexible limiters arranged as its
 * BurstyRateLimiter is, with one difference: a refused call is refunded, so a call over budget
 * never eats budget that a cheaper call after it could use.
 *   - sustained: `ratePerSec` cost units in each fixed 1-second window per client;
 *   - burst: when that window is spent, up to `burst - ratePerSec` more units, an allowance that
 *     refills every `burstWindowSec` (W) seconds.
 * A window starts with the first call charged to it after the previous one ended. So a client gets
 * at most `burst` units within one sustained window (while the burst allowance does not renew),
 * but the windows are fixed, not sliding: around a window boundary it can spend one window and the
 * next within moments (up to ratePerSec + burst, or 2 x burst when a burst window ends there too).
 * Over any T seconds: at most ratePerSec x (ceil(T) + 1) + (burst - ratePerSec) x (ceil(T / W) + 1).
 * Every call of a batch is charged in request order with its method's cost; a call over budget is
 * refused alone. A batch whose whole cost fits what is left of the sustained window is charged in
 * one step, the same outcome (one Redis round trip rather than one a call); one that does not fit
 * is refunded and charged call by call, except in a window's last REFUND_MARGIN_MS, where, as for
 * a single call, the refused cost stays until the window ends a moment later. A call costing more
 * than both ratePerSec and burst - ratePerSec fits no window: it is refused as 'never' (no retry
 * time to promise) and charged nothing.
 * With `rateLimit.redis` the windows live in Redis (one budget per client across replicas); while
 * Redis is unreachable, not ready, or fails a command (a hung Redis times out), the same limits
 * apply from local memory: served, logged once and counted, never "allow all"; Redis is tried
 * again a second after a failure.
 * Time: the Redis windows are timed by Redis itself; the memory windows are rate-limiter-flexible's
 * RateLimiterMemory, which reads Date.now and arms a timer per window and takes no clock. Its unit
 * tests replace both with @sinonjs/fake-timers rather than this file keeping a second, hand-written
 * window store that would have to match the Redis one. The pause after a Redis failure is the
 * connection's own hold-off (redis/connections.ts), shared with the other users of that Redis.
 */
import type { Redis } from 'ioredis';
import type { BlockList } from 'node:net';
import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Metrics } from '../metrics/registry.js';
import { RedisConnections, type RedisLink } from '../redis/connections.js';
import { cidrList, inList, limitKey } from '../net/cidrs.js';

export interface Rate {
  ratePerSec: number;
  burst: number;
  burstWindowSec: number;
}

export interface RateLimitConfig {
  perIp: Rate | null;
  methodCost: Readonly<Record<string, number>>;
  redis: string | null;
  exempt: readonly string[];
  apiKeys: readonly (Rate & { name: string; key: string })[];
}

/** Who is charged: an API key's holder, or a client IP. */
export interface Payer {
  ip: string;
  apiKey?: string;
}

/**
 * null: admitted; a number: refused, retry after that many seconds; 'never': the call costs more
 * than any window of this client's limits holds, so no wait would ever admit it.
 */
export type Admission = number | 'never' | null;

interface Windows {
  sustained: RateLimiterAbstract;
  burst: RateLimiterAbstract;
}

/** Where one charge goes: Redis while it is usable (and whether it answered), else memory. */
interface Where {
  shared: boolean;
  sharedWorked: boolean;
}

/** One client kind's windows: in Redis when configured (shared), and in memory (the fallback). */
interface Bucket {
  shared: Windows | null;
  local: Windows;
}

/**
 * A refund this close to its window's end may land after it: the store then starts the next window
 * at -cost, a budget larger than configured. Near the end the refund is skipped instead; the
 * refused cost dies with the window a moment later.
 */
const REFUND_MARGIN_MS = 50;

/** Consumes `cost`, or refunds it and returns the refusal: refused calls leave the window as it was. */
async function take(l: RateLimiterAbstract, id: string, cost: number): Promise<RateLimiterRes | null> {
  try {
    await l.consume(id, cost);
    return null;
  } catch (res) {
    if (!(res instanceof RateLimiterRes)) throw res;
    if (res.msBeforeNext > REFUND_MARGIN_MS) await l.reward(id, cost).catch(() => undefined);
    return res;
  }
}

/**
 * The cost of a batch of `costs` charged whole to a sustained window of `points`, or 0 when it is
 * charged call by call: a single call, a batch over the window, or one holding a call that fits no
 * window.
 */
function wholeCost(costs: readonly number[], points: number): number {
  if (costs.length < 2) return 0;
  let total = 0;
  for (const c of costs) total += c;
  return total <= points ? total : 0;
}

/** Seconds until `cost` may fit again: the next sustained window, unless only the burst allowance ever can. */
async function chargeWindows(b: Windows, id: string, cost: number): Promise<Admission> {
  const s = await take(b.sustained, id, cost);
  if (s === null) return null;
  const r = await take(b.burst, id, cost);
  if (r === null) return null;
  const ms = cost > b.sustained.points ? r.msBeforeNext : Math.min(s.msBeforeNext, r.msBeforeNext);
  return Math.max(1, Math.ceil(ms / 1000));
}

export class RateLimits {
  private readonly perIp: Bucket | null;
  private readonly byKey = new Map<string, { name: string; limiter: Bucket }>();
  private readonly exempt: BlockList;
  /** BlockList.check allocates per call: skipped entirely when nothing is exempt. */
  private readonly anyExempt: boolean;
  private readonly costs = new Map<string, number>();
  private readonly costPrefixes: [string, number][] = [];
  private readonly link: RedisLink | null;
  private readonly redis: Redis | null;
  /** Calls refused for rate since start. */
  private refused = 0;
  private readonly keyRoot: string;

  constructor(
    private readonly cfg: RateLimitConfig,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    /**
     * `connections`: the process's Redis connections (one of its own when not given). `chainId` goes
     * into every Redis key, so deployments of several chains can share one Redis without sharing limits.
     */
    { connections, chainId }: { connections?: RedisConnections; chainId?: number } = {},
  ) {
    this.keyRoot = chainId === undefined ? 'switchyard:rl' : `switchyard:rl:${chainId}`;
    this.link =
      cfg.redis === null
        ? null
        : (connections ?? new RedisConnections(metrics, log)).link(cfg.redis, {
            name: 'rate limits',
            whileDown: 'rate limits apply from local memory',
          });
    this.redis = this.link?.client ?? null;
    this.perIp = cfg.perIp === null ? null : this.bursty('ip', cfg.perIp);
    for (const k of cfg.apiKeys) this.byKey.set(k.key, { name: k.name, limiter: this.bursty(`key:${k.name}`, k) });
    this.exempt = cidrList('rateLimit.exempt', cfg.exempt);
    this.anyExempt = cfg.exempt.length > 0;
    for (const [m, cost] of Object.entries(cfg.methodCost)) {
      if (m.endsWith('*')) this.costPrefixes.push([m.slice(0, -1), cost]);
      else this.costs.set(m, cost);
    }
  }

  private bursty(prefix: string, r: Rate): Bucket {
    // With burst == ratePerSec there is no burst allowance: a zero-point limiter refuses everything.
    const windows = (make: (name: string, points: number, duration: number) => RateLimiterAbstract): Windows => ({
      sustained: make('sustained', r.ratePerSec, 1),
      burst: make('burst', Math.max(r.burst - r.ratePerSec, 0), r.burstWindowSec),
    });
    const keyPrefix = (name: string): string => `${this.keyRoot}:${prefix}:${name}`;
    const redis = this.redis;
    return {
      // rate-limiter-flexible's insurance limiter would hide a failure from us, so the memory
      // fallback is chosen here instead (see charge).
      shared:
        redis === null
          ? null
          : windows(
              (name, points, duration) =>
                new RateLimiterRedis({
                  storeClient: redis,
                  keyPrefix: keyPrefix(name),
                  points,
                  duration,
                  rejectIfRedisNotReady: true,
                }),
            ),
      local: windows(
        (name, points, duration) => new RateLimiterMemory({ keyPrefix: keyPrefix(name), points, duration }),
      ),
    };
  }

  /**
   * Redis connected and not in the hold-off after a failed command: without that pause a hung
   * Redis (connected, not answering) would cost every call of every batch a command timeout.
   */
  private sharedUsable(): boolean {
    return this.link?.usable === true;
  }

  /** Whether an API key is one this configuration knows (an unknown key is refused, not ignored). */
  knowsKey(key: string): boolean {
    return this.byKey.has(key);
  }

  /** The configured name of an API key, for logs (the key itself is never logged). */
  keyName(key: string): string | undefined {
    return this.byKey.get(key)?.name;
  }

  cost(method: string): number {
    const exact = this.costs.get(method);
    if (exact !== undefined) return exact;
    for (const [p, c] of this.costPrefixes) if (method.startsWith(p)) return c;
    return 1;
  }

  private isExempt(ip: string): boolean {
    return this.anyExempt && inList(this.exempt, ip);
  }

  /**
   * Charges each call in order; returns, per call, null (admitted) or seconds to wait. Synchronous
   * (no promise) when no limit applies to this client, which keeps unlimited traffic off the
   * microtask queue.
   */
  admit(who: Payer, methods: readonly string[]): Admission[] | Promise<Admission[]> {
    const keyed = who.apiKey === undefined ? undefined : this.byKey.get(who.apiKey);
    const limiter = keyed?.limiter ?? (this.perIp === null || this.isExempt(who.ip) ? null : this.perIp);
    if (limiter === null) return methods.map(() => null);
    return this.charge(
      limiter,
      keyed ? `key:${keyed.name}` : limitKey(who.ip),
      methods.map((m) => this.cost(m)),
    );
  }

  /**
   * Charges one unit to the client IP's budget for a request that is no call: a GET page (the
   * uptime page, GET /) or a guess at an API key the configuration does not list. Without that a
   * client could fetch pages or try keys as fast as it can send, outside every limit. Synchronous
   * null when no per-IP limit applies (rateLimit.perIp null, an exempt IP).
   */
  admitRequest(ip: string): Admission | Promise<Admission> {
    if (this.perIp === null || this.isExempt(ip)) return null;
    return this.charge(this.perIp, limitKey(ip), [1]).then((a) => a[0] ?? null);
  }

  private async charge(limiter: Bucket, id: string, costs: readonly number[]): Promise<Admission[]> {
    const at: Where = { shared: limiter.shared !== null && this.sharedUsable(), sharedWorked: false };
    // A batch that fits what is left of the sustained window is charged in one step: the outcome of
    // charging its calls one by one (each fits), one Redis round trip instead of one a call.
    const whole = wholeCost(costs, limiter.local.sustained.points);
    const out: Admission[] = whole > 0 && (await this.chargeWhole(limiter, id, whole, at)) ? costs.map(() => null) : [];
    // A cost over both windows' sizes fits neither, however long the client waits.
    const largest = Math.max(limiter.local.sustained.points, limiter.local.burst.points);
    // What was not charged whole (a single call, a batch that did not fit) is charged call by call,
    // each call over budget refused alone.
    for (const cost of out.length === costs.length ? [] : costs) {
      if (cost === 0) {
        out.push(null);
        continue;
      }
      if (cost > largest) {
        out.push('never');
        continue;
      }
      try {
        out.push(await this.onWindows(limiter, at, (w) => chargeWindows(w, id, cost)));
      } catch (err) {
        // Memory limiters do not fail; if one ever does, refuse briefly rather than allow all.
        this.log.error({ err }, 'rate limiter failed');
        out.push(1);
      }
    }
    if (limiter.shared !== null && !at.shared) this.metrics.recordRateLimitFallback();
    else if (at.sharedWorked) this.link!.note(true);
    const refused = out.filter((a) => a !== null).length;
    if (refused > 0) {
      this.refused += refused;
      this.metrics.recordRateLimited('rate', refused);
    }
    return out;
  }

  /** Charges a batch's `whole` cost to the sustained window in one step: whether it fit. */
  private async chargeWhole(limiter: Bucket, id: string, whole: number, at: Where): Promise<boolean> {
    try {
      return (await this.onWindows(limiter, at, (w) => take(w.sustained, id, whole))) === null;
    } catch {
      // Charged call by call instead, where a limiter that fails is logged.
      return false;
    }
  }

  /**
   * `charge` on Redis's windows while they are usable, else on memory's. Redis refusing or timing
   * out moves this charge and the rest of the request to memory, and every user of this Redis
   * skips it for the hold-off.
   */
  private async onWindows<T>(limiter: Bucket, at: Where, charge: (w: Windows) => Promise<T>): Promise<T> {
    if (at.shared) {
      try {
        const done = await charge(limiter.shared!);
        at.sharedWorked = true;
        return done;
      } catch {
        this.link!.note(false);
        at.shared = false;
      }
    }
    return charge(limiter.local);
  }

  /** Figures for /status: the limits in force (never a key itself), where budgets live, calls refused. */
  stats(): Record<string, unknown> {
    const rate = (r: Rate): Record<string, number> => ({
      ratePerSec: r.ratePerSec,
      burst: r.burst,
      burstWindowSec: r.burstWindowSec,
    });
    return {
      perIp: this.cfg.perIp === null ? null : rate(this.cfg.perIp),
      apiKeys: this.cfg.apiKeys.map((k) => ({ name: k.name, ...rate(k) })),
      exemptRanges: this.cfg.exempt.length,
      shared: this.redis === null ? null : { usable: this.sharedUsable() },
      refused: this.refused,
    };
  }

  async close(): Promise<void> {
    this.link?.release();
  }
}
