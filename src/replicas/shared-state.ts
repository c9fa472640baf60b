/**
 * State the replicas share through the top-level `redis`, one way for all of it: the heads
 * (shared-heads.ts), the cordons (shared-cordons.ts) and the uptime page (uptime/share/shared.ts).
 * Each is a SharedState: an `exchange` that sends this replica's part, if it has one, and takes in
 * the shared whole (a snapshot); and, when the others announce changes on a channel, what a message
 * heard there means. `SharedRedis.open` gives it a SharedChannel that runs it the same way for all:
 * - keys under `switchyard:<chainId>:<name>`, and the announcements on one channel beside them;
 * - an exchange at start, every `everyMs` (the safety net for an announcement missed while the
 *   subscription was reconnecting), when Redis is usable again, after each announcement heard
 *   (unless the state reads the message itself), and whenever the state asks (`sync`);
 * - one exchange at a time: asked again meanwhile, one more runs after it, however often asked;
 * - Redis down: the link (redis/connections.ts) logs it once for every user and is skipped for a
 *   second after a failure; each state goes on with its own view in its own way.
 * What goes in Redis and what comes back stays each state's own (its keys' layout, its scripts,
 * what it refuses as input), so no wire format changed with this module.
 * Owns: the link, the key prefix, the channel, the timer, the coalescing. Refuses: what is shared.
 */
import type { Redis } from 'ioredis';
import type { RedisConnections, RedisLink } from '../redis/connections.js';

/** One piece of state the replicas share. */
export interface SharedState {
  /**
   * Sends this replica's part (if it has one) and takes in the shared whole. True when done; false
   * when Redis was not usable or failed (the channel has noted it).
   */
  exchange(): Promise<boolean>;
  /** A message on the channel; absent: an announcement only says "changed", and an exchange follows. */
  heard?(message: string): void;
}

export interface SharedSpec {
  /** The keys' name under `switchyard:<chainId>:` ("heads", "cordons", "uptime"). */
  key: string;
  /** The link's user name and what the state does while Redis is down (redis/connections.ts). */
  use: string;
  whileDown: string;
  /** The safety-net exchange. */
  everyMs: number;
  /** The announcement channel's suffix after the key (":rose"); absent: no channel. */
  channel?: string;
}

/** The top-level redis of one chain: where every replica's shared state is. */
export class SharedRedis {
  constructor(
    private readonly connections: RedisConnections,
    private readonly url: string,
    readonly chainId: number,
  ) {}

  open(spec: SharedSpec, state: SharedState): SharedChannel {
    return new SharedChannel(this.connections, this.url, this.chainId, spec, state);
  }
}

/** One shared state's way to Redis. */
export class SharedChannel {
  private readonly link: RedisLink;
  private readonly sub: Redis | null;
  private readonly prefix: string;
  /** The announcement channel, or null. */
  readonly channel: string | null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<boolean> | null = null;
  private again = false;
  private closed = false;
  private readonly onMessage = (channel: string, message: string): void => {
    if (channel !== this.channel || this.closed) return;
    if (this.state.heard) this.state.heard(message);
    else void this.sync();
  };

  constructor(
    connections: RedisConnections,
    url: string,
    chainId: number,
    private readonly spec: SharedSpec,
    private readonly state: SharedState,
  ) {
    this.prefix = `switchyard:${chainId}:${spec.key}`;
    this.channel = spec.channel === undefined ? null : this.prefix + spec.channel;
    this.link = connections.link(url, {
      name: spec.use,
      whileDown: spec.whileDown,
      onUp: () => void this.sync(),
    });
    this.sub = this.channel === null ? null : this.link.subscriber();
    this.sub?.on('message', this.onMessage);
  }

  /** The state's key: `switchyard:<chainId>:<key><part>`. */
  key(part = ''): string {
    return this.prefix + part;
  }

  /** The shared command connection (never closed by a user: close() releases it). */
  get client(): Redis {
    return this.link.client;
  }

  /** Connected, and no command failed in the last second. */
  get usable(): boolean {
    return this.link.usable;
  }

  /** A command answered (true) or failed (false): the link's up/down state. */
  note(answered: boolean): void {
    this.link.note(answered);
  }

  /** Subscribes and starts the timer; the first exchange is the state's to ask for (sync). */
  start(): void {
    if (this.closed || this.timer !== null) return;
    if (this.sub !== null && this.channel !== null) void this.sub.subscribe(this.channel).catch(() => undefined);
    this.timer = setInterval(() => void this.sync(), this.spec.everyMs);
    this.timer.unref();
  }

  /** An exchange now, or right after the one running. Resolves with the one it joined's outcome. */
  sync(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (this.running !== null) {
      this.again = true;
      return this.running;
    }
    this.running = this.state
      .exchange()
      .catch(() => {
        this.link.note(false);
        return false;
      })
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          void this.sync();
        }
      });
    return this.running;
  }

  /** Nothing more runs or is heard; an exchange in flight settles on its own (each state keeps its own `closed`). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.sub !== null && this.channel !== null) {
      this.sub.off('message', this.onMessage);
      // Not awaited: while Redis is down the command waits in the subscriber's queue.
      void this.sub.unsubscribe(this.channel).catch(() => undefined);
    }
    this.link.release();
  }
}
