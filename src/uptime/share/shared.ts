/**
 * One uptime page for every replica (SPEC 12 Replicas), through the top-level `redis`. Each replica
 * keeps its store (store.ts) in memory as its local copy; Redis holds the shared image of it
 * (store-image.ts) under `switchyard:<chainId>:uptime:` — `image`, `version` (raised on every
 * publish), `lease` (lease.ts).
 * - Every SYNC_MS a replica renews or tries the lease and reads `version`; when it moved, it loads
 *   the image in place of its copy (the host refreshes what it derives from the store). So a write
 *   at one replica shows at the others within about SYNC_MS plus the image's transfer.
 * - A write to the local copy (Uptime.write) is published: WATCH version, check it is the version
 *   the copy derives from, then SET image and version in one MULTI/EXEC. If another replica wrote
 *   first, its image is loaded and this replica's admin writes since (kept as replayable operations)
 *   run again on it; a lost race costs a retry (and an incident or window made at two replicas at
 *   the same moment may end with another id than its first answer gave). The prober's own probe
 *   writes are not replayed: it loads others' writes right before recording a probe, so only a
 *   write landing within those few milliseconds costs it that probe's row.
 * - The lease's time to live is 2 probe intervals less 4 SYNC_MS steps (at least one interval),
 *   renewed every SYNC_MS (beside, not behind, image transfers): a replica that dies is replaced
 *   within 2 probe intervals, with a second to spare for a late renewal. A clean stop releases it.
 * - Redis unusable (the link of redis/connections.ts, which logs each transition once and sets
 *   switchyard_redis_up): every replica probes and writes its own copy alone. Back: the lease
 *   holder publishes its copy; the others load it, keeping their admin writes (replayed) and
 *   dropping their own probe rows of the outage.
 * Image and version are input: a version that is not a number reads as 0, an image over
 * MAX_IMAGE_BYTES or not a store of ours is refused (logged once per version, counted), and the
 * local copy goes on.
 * The way to Redis (link, timer, one exchange at a time) is the one every shared state takes
 * (replicas/shared-state.ts): the exchange steps the lease and starts a catch-up beside it.
 * Owns: the keys, publishing and loading. Refuses: what the store holds (store.ts),
 * probing (probe-loop.ts).
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Metrics } from '../../metrics/registry.js';
import type { ImageOp } from '../../metrics/uptime-shared.js';
import type { SharedChannel, SharedRedis, SharedState } from '../../replicas/shared-state.js';
import { Lease } from './lease.js';
import { imageOf, MAX_IMAGE_BYTES, openImage } from './store-image.js';
import type { UptimeStore } from '../store/store.js';

/** How often a replica reads the version (and steps the lease): writes show elsewhere within about this. */
export const SYNC_MS = 250;
/** Image GET and SET get this long (the shared connection's 200 ms is for small commands). */
export const IMAGE_TIMEOUT_MS = 5_000;
/** Admin writes kept to run again on another replica's image; beyond it the oldest is dropped (logged). */
const MAX_REPLAY = 200;
const PUBLISH_TRIES = 3;

export interface SharedHost {
  readonly store: UptimeStore;
  readonly log: Logger;
  readonly metrics: Metrics;
  probeIntervalMs(): number;
  /** The local copy's database was replaced (another replica's image): refresh what derives from it. */
  loaded(): void;
}

type Op = () => unknown;

export class SharedUptime implements SharedState {
  private readonly shared: SharedChannel;
  /** Its own connection, for images (MB-sized values need more than 200 ms) and WATCH/MULTI. */
  private readonly images: Redis;
  private readonly key: { image: string; version: string };
  private readonly lease: Lease;
  /** The version the local copy derives from (0: none yet). */
  private base = 0;
  /** The local copy has writes not yet published. */
  private dirty = false;
  /** Some of them are probe rows of this replica alone (not replayable). */
  private unshared = false;
  private replay: Op[] = [];
  private closed = false;
  private running: Promise<void> = Promise.resolve();
  private refusedVersion = -1;
  private renewing = false;
  private catchingUp = false;

  constructor(
    redis: SharedRedis,
    private readonly host: SharedHost,
  ) {
    this.shared = redis.open(
      {
        key: 'uptime',
        use: 'uptime',
        whileDown: 'each replica probes and keeps its uptime page alone',
        everyMs: SYNC_MS,
      },
      this,
    );
    this.key = { image: this.shared.key(':image'), version: this.shared.key(':version') };
    this.images = this.shared.client.duplicate({
      connectionName: 'switchyard-uptime',
      commandTimeout: IMAGE_TIMEOUT_MS,
    });
    this.images.on('error', () => undefined);
    this.lease = new Lease(this.shared.client, this.shared.key(':lease'));
    host.log.info('uptime history shared by the replicas through redis (uptime.store is not used)');
    host.metrics.declareUptimeShared();
    host.metrics.setUptimeProber(false);
  }

  /** This replica runs the probes: it holds the lease, or Redis is unusable and it goes on alone. */
  get prober(): boolean {
    return this.lease.held || !this.shared.usable;
  }

  /** Steps the lease, loads what Redis holds (if anything), and starts the loop. */
  async start(): Promise<void> {
    await this.renew();
    await this.serial(() => this.catchUp());
    this.shared.start();
  }

  /** A write was made to the local copy; `op` runs it again on another replica's image (null: a probe's). */
  changed(op: Op | null): void {
    this.dirty = true;
    if (op === null) this.unshared = true;
    else this.replay.push(op);
    if (this.replay.length > MAX_REPLAY) {
      this.replay.shift();
      this.host.log.warn({ kept: MAX_REPLAY }, 'uptime: too many writes waiting for redis; the oldest is dropped');
    }
    void this.serial(() => this.publish(), 'publish');
  }

  /** Before the prober records a probe: take in what other replicas wrote since. */
  async sync(): Promise<void> {
    await this.serial(async () => {
      if (!this.shared.usable) return;
      const v = await this.version(this.shared.client);
      if (v !== this.base && !this.dirty) await this.load(v);
    });
  }

  /** One thing at a time on the local copy's shared state: a catch-up, a publish, a sync. */
  private serial(task: () => Promise<void>, op: ImageOp = 'load'): Promise<void> {
    const next = this.running.then(task).catch((err: unknown) => {
      this.shared.note(false);
      this.host.metrics.recordUptimeImage(op, 'failed');
      this.host.log.debug({ err }, 'uptime: redis did not answer');
    });
    this.running = next;
    return next;
  }

  /** Every SYNC_MS: the lease is renewed on time even while an image is still on its way (up to IMAGE_TIMEOUT_MS). */
  async exchange(): Promise<boolean> {
    if (this.closed) return false;
    if (!this.catchingUp) {
      this.catchingUp = true;
      void this.serial(() => this.catchUp()).finally(() => (this.catchingUp = false));
    }
    await this.renew();
    return this.shared.usable;
  }

  /** Renews or tries the lease (lease.ts); without a usable Redis nobody holds it here. */
  private async renew(): Promise<void> {
    if (this.renewing || this.closed) return;
    this.renewing = true;
    try {
      if (!this.shared.usable) this.lease.held = false;
      else await this.lease.step(Math.max(this.host.probeIntervalMs(), 2 * this.host.probeIntervalMs() - 4 * SYNC_MS));
    } catch {
      this.shared.note(false);
    } finally {
      this.renewing = false;
    }
    this.host.metrics.setUptimeProber(this.prober);
  }

  /** Publishes what waits, else loads the shared image if its version moved. */
  private async catchUp(): Promise<void> {
    if (!this.shared.usable) return;
    const v = await this.version(this.shared.client);
    this.shared.note(true);
    if (this.dirty) await this.publish();
    else if (v !== this.base) await this.load(v);
  }

  /** The version in Redis; what is not a count reads as 0 (and the next publish sets it right). */
  private async version(client: Redis): Promise<number> {
    const v = Number(await client.get(this.key.version));
    return Number.isSafeInteger(v) && v > 0 ? v : 0;
  }

  /** Takes the image of version `v` in place of the local copy; without a usable one the copy stays. */
  private async load(v: number): Promise<void> {
    const size = v === 0 ? 0 : await this.images.strlen(this.key.image);
    const image = size === 0 || size > MAX_IMAGE_BYTES ? null : await this.images.getBuffer(this.key.image);
    const opened =
      image === null ? { refused: size === 0 ? 'none' : `${size} bytes, over ${MAX_IMAGE_BYTES}` } : openImage(image);
    this.base = v;
    this.unshared = false;
    if (!('db' in opened)) {
      // The local copy stays, with every write it holds: published as it is if it has any.
      if (opened.refused !== 'none') this.refused(v, opened.refused);
      return;
    }
    this.host.store.adopt(opened.db);
    this.host.metrics.recordUptimeImage('load', 'ok', image!.length);
    // This replica's admin writes not yet published go on top of what it loaded.
    for (const op of this.replay) {
      try {
        op();
      } catch (err) {
        this.host.log.error({ err }, 'uptime: a write could not be made again on the shared image');
      }
    }
    this.dirty = this.replay.length > 0;
    this.host.loaded();
  }

  private refused(v: number, why: string): void {
    this.host.metrics.recordUptimeImage('load', 'refused');
    if (this.refusedVersion !== v)
      this.host.log.error(
        { version: v, why },
        'uptime: the shared image in redis is refused; this replica keeps its own copy',
      );
    this.refusedVersion = v;
  }

  /** Publishes the local copy if it has writes (WATCH/MULTI/EXEC on the version, a few tries). */
  private async publish(): Promise<void> {
    if (!this.dirty || !this.shared.usable) return;
    for (let i = 0; i < PUBLISH_TRIES; i++) {
      await this.images.watch(this.key.version);
      const v = await this.version(this.images);
      // Another replica wrote since; or this one's probe rows of an outage are not the page's.
      if (v !== this.base || (this.unshared && !this.lease.held)) {
        await this.images.unwatch();
        await this.load(v);
        if (!this.dirty) return;
        continue;
      }
      const image = this.host.store.tx(null, imageOf);
      if (image.length > MAX_IMAGE_BYTES) {
        await this.images.unwatch();
        this.host.metrics.recordUptimeImage('publish', 'refused', image.length);
        this.host.log.error(
          { bytes: image.length, max: MAX_IMAGE_BYTES },
          'uptime: the store image is too large to share',
        );
        return;
      }
      const done = await this.images
        .multi()
        .set(this.key.image, image)
        .set(this.key.version, v + 1)
        .exec();
      if (done === null) {
        this.host.metrics.recordUptimeImage('publish', 'conflict');
        continue;
      }
      this.base = v + 1;
      this.dirty = false;
      this.unshared = false;
      this.replay = [];
      this.host.metrics.recordUptimeImage('publish', 'ok', image.length);
      return;
    }
  }

  /** For /status on the admin port. */
  status(): Record<string, unknown> {
    return { prober: this.prober, version: this.base, unpublished: this.dirty, redisUsable: this.shared.usable };
  }

  /** Publishes what is left (best effort), lets the lease go, and closes the image connection. */
  async close(): Promise<void> {
    this.closed = true;
    await this.serial(async () => {
      if (this.shared.usable) await this.publish();
      if (this.shared.usable) await this.lease.release();
    });
    this.images.disconnect();
    this.shared.close();
  }
}

/** Rows the store's database has changed so far: a write changes it, a read does not. */
export function changeCount(store: UptimeStore): number {
  return store.tx(null, (db) => (db.prepare('SELECT total_changes() AS n').get() as { n: number }).n);
}
