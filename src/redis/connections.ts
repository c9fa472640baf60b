/**
 * One Redis connection per URL for the whole process, shared by the cache's second level
 * (cache.redis), the shared rate limits (rateLimit.redis), shared heads and cordons (top-level redis); pub/sub
 * gets a second connection of its own, opened only when asked for, since a subscribed connection
 * can run no other command.
 * Redis is a helper, never a dependency: commands are never queued while it is unreachable (they
 * fail at once), a command gets 200 ms, and reconnection is retried with a backoff (200 ms doubling
 * to 2 s). Each user goes on without Redis in its own way (memory cache, local limits, its own
 * heads) and tells the link what it saw; the link keeps one up/down state per URL, logs one line per
 * transition naming what every user of that Redis does meanwhile, sets `switchyard_redis_up`, and
 * after a failed command reports it unusable for a second (every user skips it meanwhile), so a
 * hung server costs at most one timeout a second, not one per call.
 * The connections are named `switchyard` and `switchyard-sub` (CLIENT LIST shows them); the shared
 * uptime page opens one more of its own for its store images (`switchyard-uptime`, uptime/share/shared.ts).
 * Owns: connections, their state, the up metric's value and the transition lines. Refuses: keys, commands
 * and fallbacks (each user's own). URLs are never logged (they may carry a password).
 */
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/registry.js';

/** After a failed command, users skip this Redis for this long before trying it again. */
export const HOLD_OFF_MS = 1_000;

const OPTIONS: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  commandTimeout: 200,
  connectTimeout: 2_000,
  retryStrategy: (times: number) => Math.min(100 * 2 ** Math.min(times, 5), 2_000),
};

export interface RedisUser {
  /** Who uses the connection, for the transition lines: "cache", "rate limits", "shared heads". */
  name: string;
  /** What this user does while Redis is unreachable (the down line says it). */
  whileDown: string;
  /** Called when the connection becomes usable again (after a restart of Redis, say). */
  onUp?: () => void;
}

/** One user's view of the shared connection to one URL. */
export interface RedisLink {
  /** The shared command connection. Never close it: release() the link instead. */
  readonly client: Redis;
  /** Connected, and no command failed in the last HOLD_OFF_MS. */
  readonly usable: boolean;
  /** The last state seen: connected and answering. */
  readonly up: boolean;
  /** A user's evidence: a command answered (true), or failed or timed out (false). */
  note(answered: boolean): void;
  /** The shared pub/sub connection for this URL (queues SUBSCRIBE until connected, resubscribes after a reconnect). */
  subscriber(): Redis;
  /** This user is done; the last user's release closes the connections. */
  release(): void;
}

class Connection {
  readonly client: Redis;
  private sub: Redis | null = null;
  readonly users = new Set<RedisUser>();
  /** null until the first connect or failure. */
  up: boolean | null = null;
  private holdOffUntil = 0;
  private closing = false;

  constructor(
    private readonly url: string,
    private readonly changed: (c: Connection, before: boolean | null) => void,
    private readonly now: () => number,
  ) {
    this.client = new Redis(url, { ...OPTIONS, connectionName: 'switchyard' });
    this.client.on('ready', () => this.note(true));
    this.client.on('error', () => this.note(false));
    this.client.on('close', () => this.note(false));
  }

  note(answered: boolean): void {
    if (this.closing) return;
    this.holdOffUntil = answered ? 0 : this.now() + HOLD_OFF_MS;
    // A command that answered proves nothing while the connection itself is not ready.
    const up = answered && this.client.status === 'ready';
    if (up === this.up) return;
    const before = this.up;
    this.up = up;
    this.changed(this, before);
  }

  get usable(): boolean {
    return this.client.status === 'ready' && this.now() >= this.holdOffUntil;
  }

  subscriber(): Redis {
    if (this.sub === null) {
      this.sub = new Redis(this.url, { ...OPTIONS, enableOfflineQueue: true, connectionName: 'switchyard-sub' });
      this.sub.on('error', () => undefined);
    }
    return this.sub;
  }

  close(): void {
    this.closing = true;
    this.client.disconnect();
    this.sub?.disconnect();
  }
}

export class RedisConnections {
  private readonly byUrl = new Map<string, Connection>();

  constructor(
    private readonly metrics: Metrics,
    private readonly log: Logger,
    /** The clock that times the hold-off after a failed command. */
    private readonly now: () => number = Date.now,
  ) {}

  /** The shared connection to `url` for `user` (opened on the first ask). */
  link(url: string, user: RedisUser): RedisLink {
    let c = this.byUrl.get(url);
    if (c === undefined) {
      c = new Connection(url, (conn, before) => this.transition(conn, before), this.now);
      this.byUrl.set(url, c);
      this.setGauge();
    }
    const conn = c;
    conn.users.add(user);
    let released = false;
    return {
      client: conn.client,
      get usable() {
        return conn.usable;
      },
      get up() {
        return conn.up === true;
      },
      note: (answered) => conn.note(answered),
      subscriber: () => conn.subscriber(),
      release: () => {
        if (released) return;
        released = true;
        conn.users.delete(user);
        if (conn.users.size > 0) return;
        conn.close();
        this.byUrl.delete(url);
        this.setGauge();
      },
    };
  }

  /** One line per transition, naming the users of that Redis (never its URL). */
  private transition(c: Connection, before: boolean | null): void {
    const users = [...c.users];
    const names = [...new Set(users.map((u) => u.name))];
    if (c.up) {
      this.log.info(
        { users: names },
        before === null ? 'redis connected' : 'redis reachable again: shared across replicas again',
      );
      for (const u of users) u.onUp?.();
    } else {
      this.log.warn(
        { users: names },
        `redis unreachable until it is back: ${[...new Set(users.map((u) => u.whileDown))].join('; ')}`,
      );
    }
    this.setGauge();
  }

  /** Up while every Redis in use answers; no Redis in use (a reload can drop the last) removes the series. */
  private setGauge(): void {
    this.metrics.setRedisUp(this.byUrl.size === 0 ? null : [...this.byUrl.values()].every((c) => c.up === true));
  }

  async close(): Promise<void> {
    for (const c of this.byUrl.values()) c.close();
    this.byUrl.clear();
  }
}
