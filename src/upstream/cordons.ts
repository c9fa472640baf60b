/**
 * Cordons (SPEC 4.8): upstreams an operator has taken out of rotation by name. A cordoned node gets
 * no new calls (routing/select.ts asks `fleet.cordons`), calls in flight finish, and it is still
 * probed, so it comes back in sync when uncordoned. A cordon belongs to a name, not to a node
 * object: it outlives reloads, and one for a name the configuration no longer has is kept but
 * ignored until the name comes back or it is lifted.
 * Where cordons are kept is a keeper's business (replicas/cordon-keeper.ts, the one that makes
 * one): Redis shared by every replica, a file of their own, or this process's memory.
 * Owns: the set in force, the rules for a valid cordon, applying the keeper's view, the gauge.
 * Refuses: HTTP (server/admin-cordons.ts), storage (replicas/cordon-keeper.ts).
 */
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/registry.js';

export interface Cordon {
  /** What the operator said, or null. */
  reason: string | null;
  /** When it was cordoned, ms since the epoch. */
  at: number;
}

/** A reason longer than this is refused (400): it is shown on the status and uptime pages. */
export const MAX_REASON = 200;
/** The configuration's rule for upstream names (config/schema.ts): nothing else can be one. */
export const UPSTREAM_NAME = /^[a-zA-Z0-9_.-]{1,64}$/;

/**
 * A stored cordon as JSON text, as a keeper reads it back: what Redis or a file holds is input, so
 * anything but `{"reason": string|null, "at": ms}` within bounds is refused (null).
 */
export function parseCordon(text: string): Cordon | null {
  if (text.length > 2 * MAX_REASON + 64) return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null) return null;
  const { reason, at } = v as Record<string, unknown>;
  if (reason !== null && (typeof reason !== 'string' || reason.length > MAX_REASON)) return null;
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0) return null;
  return { reason, at };
}

export function cordonText(c: Cordon): string {
  return JSON.stringify({ reason: c.reason, at: c.at });
}

/** The cordons in force, by upstream name: what routing and the status pages read. */
export class CordonSet {
  private byName: ReadonlyMap<string, Cordon> = new Map();

  has(name: string): boolean {
    return this.byName.has(name);
  }

  get(name: string): Cordon | undefined {
    return this.byName.get(name);
  }

  entries(): IterableIterator<[string, Cordon]> {
    return this.byName.entries();
  }

  /** Swaps in a whole new set (one reference: a reader never sees half of one). */
  replace(next: ReadonlyMap<string, Cordon>): void {
    this.byName = next;
  }
}

/** Where cordons are kept. put/drop reject when the cordon could not be stored or removed. */
export interface CordonKeeper {
  /** For GET /upstreams: `redis`, `file` or `memory`. */
  readonly keptIn: string;
  /**
   * Reads the stored cordons and from then on calls `seen` with the whole set whenever it may have
   * changed (another replica's write). Resolves once the first read is done or could not be.
   */
  start(seen: (all: ReadonlyMap<string, Cordon>) => void): Promise<void>;
  put(name: string, c: Cordon): Promise<void>;
  drop(name: string): Promise<void>;
  close(): Promise<void>;
}

/** What Cordons reads and sets of the fleet (fleet.ts): its set in force and the upstreams configured now. */
export interface CordonedFleet {
  readonly cordons: CordonSet;
  readonly upstreams: readonly { readonly name: string }[];
}

/** The set in force, kept by a keeper: what the admin routes change and read. */
export class Cordons {
  private current = new Map<string, Cordon>();

  constructor(
    private readonly fleet: CordonedFleet,
    readonly keeper: CordonKeeper,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Loads what the keeper holds; resolves once the first read is done (or could not be). */
  start(): Promise<void> {
    return this.keeper.start((all) => this.take(all, false));
  }

  get(name: string): Cordon | undefined {
    return this.current.get(name);
  }

  /** Every cordon kept, including those for names not configured (ignored). */
  all(): ReadonlyMap<string, Cordon> {
    return this.current;
  }

  /** Cordons `name` (already checked to be configured); stored first, so a failure changes nothing. */
  async cordon(name: string, reason: string | null): Promise<Cordon> {
    const c: Cordon = { reason, at: this.now() };
    await this.keeper.put(name, c);
    this.take(new Map(this.current).set(name, c), true);
    this.log.warn({ upstream: name, reason }, 'upstream cordoned: no new calls until uncordoned');
    return c;
  }

  /** Lifts the cordon on `name`; false if it had none here (another replica's, not read yet, is lifted too). */
  async uncordon(name: string): Promise<boolean> {
    const had = this.current.has(name);
    await this.keeper.drop(name);
    const next = new Map(this.current);
    next.delete(name);
    this.take(next, true);
    if (had) this.log.info({ upstream: name }, 'upstream uncordoned: takes calls again');
    return had;
  }

  /** The keeper's view (`own`: this process's own change) becomes the set in force. */
  private take(all: ReadonlyMap<string, Cordon>, own: boolean): void {
    const before = this.current;
    this.current = new Map(all);
    this.fleet.cordons.replace(this.current);
    for (const u of this.fleet.upstreams) {
      const on = this.current.has(u.name);
      this.metrics.setUpstreamCordoned(u.name, on);
      if (!own && on !== before.has(u.name))
        this.log.info({ upstream: u.name, cordoned: on }, 'cordon read from where cordons are kept');
    }
  }

  close(): Promise<void> {
    return this.keeper.close();
  }
}
