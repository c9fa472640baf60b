/**
 * Delivery of the chain feed's logs to every `logs` subscription of the process. Each log of a
 * block is serialised once and shared: a notification is the subscription's envelope around that
 * text. Subscriptions with the same filter share one matching pass per block. The work runs in
 * slices of at most SLICE_MS, each followed by a turn of the event loop, so a block that makes a
 * million notifications delays other clients by one slice, never by the whole block.
 * A client is written to while it holds under half its unsent-bytes cap; past that it is "behind":
 * what it is owed waits here (a subscription, a block, a position: the texts are shared) and goes
 * out, oldest first, as it takes what it has. A client that still owes a block once
 * MAX_BLOCKS_BEHIND newer blocks have come is closed as a slow reader; so memory per client stays
 * under its cap and the delivery never waits for one client.
 * Order: blocks go out in the order the feed published them (a reorg's removed logs included);
 * each subscription gets a block's matching logs in the block's order, and a block only after
 * the blocks before it. At most MAX_BLOCKS_QUEUED blocks wait: past that the feed waits.
 * Owns: log serialisation, grouping by filter, slicing, what clients behind are owed. Refuses:
 * the chain (chain.ts), sockets and their caps (server/ws.ts), subscription ids (session.ts).
 */
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/registry.js';
import { logKeys, matches, type LogEntry, type LogFilter } from './log-filter.js';

/** One block as the chain feed (chain.ts) publishes it. */
export interface FeedBlock {
  number: number;
  hash: string;
  parentHash: string;
  /** The header as geth sends it in a newHeads notification (JSON text). */
  header: string;
  /** The block's logs, fetched by hash while any logs subscription exists. */
  logs?: LogEntry[];
  /** Increases with every block the feed publishes: subscriptions compare it with when they started. */
  seq: number;
}

/** ready: may be written to now; full: holds half its unsent-bytes cap or more; closed: takes nothing more. */
export type Room = 'ready' | 'full' | 'closed';

/** The socket side of subscriptions: one per WebSocket session. */
export interface LogsClient {
  room(): Room;
  /** Too far behind: closed as a slow reader (1013); its subscriptions are removed. */
  overflow(): void;
}

export interface LogsSubscription {
  readonly filter: LogFilter;
  /** Feed sequence when it started: blocks published later are sent to it, and only those are re-sent as removed. */
  readonly since: number;
  /** The notification up to its result: `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0x…","result":`. */
  readonly prefix: string;
  readonly client: LogsClient;
  /** Writes one notification (the session holds it until the answer carrying the id is written). */
  write(text: string): void;
}

/** Longest stretch of delivery work before other clients get a turn of the event loop. */
export const SLICE_MS = 5;
/** Blocks (with logs) queued for delivery before the feed has to wait. */
export const MAX_BLOCKS_QUEUED = 8;
/** A client still owed a block when this many newer blocks have come is closed as a slow reader. */
export const MAX_BLOCKS_BEHIND = 8;
/** How often clients behind are looked at when there is nothing else to do. */
const POLL_MS = 10;
const SUFFIX = '}}';
/** The clock is read once every this many steps (a step: one log serialised, one notification written). */
const STEPS_PER_CLOCK = 64;

interface Group {
  filter: LogFilter;
  subs: Set<LogsSubscription>;
}

interface Job {
  /** Counts the blocks given to the fanout: how far behind a client is. */
  number: number;
  block: FeedBlock;
  removed: boolean;
  /** Each log's notification result, serialised once for everyone. */
  texts: string[];
}

/** What one subscription is owed of one block: the matching logs (indices into texts) from `next` on. */
interface Owed {
  job: Job;
  sub: LogsSubscription;
  /** The subscription's group: it is still subscribed while the set has it. */
  subs: Set<LogsSubscription>;
  indices: number[];
  next: number;
}

export class LogsFanout {
  private readonly groups = new Map<string, Group>();
  private subscriptions = 0;
  private readonly jobs: Job[] = [];
  private jobsGiven = 0;
  /** Clients behind, each with what it is owed, oldest first. */
  private readonly behind = new Map<LogsClient, Owed[]>();
  private readonly waiting: (() => void)[] = [];
  private running = false;
  private stopped = false;
  private steps = 0;
  private clockAt = 0;
  private sliceEnds = 0;
  /** Notifications written and not yet counted in the metric (counted once per slice). */
  private uncounted = 0;

  constructor(
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {}

  /** How many logs subscriptions exist: the feed fetches logs only while there are some. */
  get size(): number {
    return this.subscriptions;
  }

  add(sub: LogsSubscription): void {
    let group = this.groups.get(sub.filter.key);
    if (group === undefined) {
      group = { filter: sub.filter, subs: new Set() };
      this.groups.set(sub.filter.key, group);
    }
    group.subs.add(sub);
    this.subscriptions++;
  }

  remove(sub: LogsSubscription): void {
    const group = this.groups.get(sub.filter.key);
    if (group === undefined || !group.subs.delete(sub)) return;
    this.subscriptions--;
    if (group.subs.size === 0) this.groups.delete(sub.filter.key);
  }

  /**
   * Queues a block's logs for delivery (`removed`: a reorg dropped the block). Resolves at once
   * while at most MAX_BLOCKS_QUEUED blocks wait, else once delivery is back to that.
   */
  push(block: FeedBlock, removed: boolean): Promise<void> {
    if (this.stopped || this.subscriptions === 0 || block.logs === undefined || block.logs.length === 0)
      return Promise.resolve();
    this.jobs.push({ number: ++this.jobsGiven, block, removed, texts: [] });
    if (!this.running) void this.run();
    if (this.jobs.length <= MAX_BLOCKS_QUEUED) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    this.jobs.length = 0;
    this.behind.clear();
    for (const resolve of this.waiting.splice(0)) resolve();
  }

  private async run(): Promise<void> {
    this.running = true;
    this.sliceEnds = performance.now() + SLICE_MS;
    try {
      while (!this.stopped && (this.jobs.length > 0 || this.behind.size > 0)) {
        const wrote = await this.resume();
        const job = this.jobs.shift();
        if (job === undefined) {
          if (!wrote) await this.pause();
          continue;
        }
        while (this.waiting.length > 0 && this.jobs.length <= MAX_BLOCKS_QUEUED) this.waiting.shift()!();
        try {
          await this.deliver(job);
        } catch (err) {
          this.log.error({ err, block: job.block.number }, 'logs delivery failed for a block');
        }
      }
    } finally {
      this.count();
      this.running = false;
    }
  }

  private async deliver(job: Job): Promise<void> {
    const { block, removed, texts } = job;
    for (const log of block.logs!) {
      texts.push(JSON.stringify(removed ? { ...log, removed: true } : log));
      if (this.due()) await this.breathe();
    }
    for (const [client, owed] of this.behind) {
      if (job.number - owed[0]!.job.number < MAX_BLOCKS_BEHIND) continue;
      this.behind.delete(client);
      client.overflow();
    }
    const keys = block.logs!.map(logKeys);
    // Groups made from now on hold only subscriptions that start after this block.
    for (const group of [...this.groups.values()]) {
      const indices: number[] = [];
      for (let i = 0; i < keys.length; i++) if (matches(group.filter, keys[i]!)) indices.push(i);
      if (this.due(1 + keys.length / 16)) await this.breathe();
      if (indices.length === 0) continue;
      for (const sub of group.subs) {
        if (sub.since >= block.seq) continue;
        await this.give({ job, sub, subs: group.subs, indices, next: 0 });
        if (this.behind.size > 0) await this.resume();
      }
    }
  }

  /** Writes what the subscription is owed, unless its client is behind: then it waits its turn. */
  private async give(owed: Owed): Promise<void> {
    const queue = this.behind.get(owed.sub.client);
    if (queue !== undefined) queue.push(owed);
    else if (!(await this.write(owed))) this.behind.set(owed.sub.client, [owed]);
  }

  /** Clients behind that have room again get what they are owed, oldest first. True if any did. */
  private async resume(): Promise<boolean> {
    let wrote = false;
    for (const [client, queue] of this.behind) {
      const room = client.room();
      if (room === 'full') continue;
      wrote ||= room === 'ready';
      while (queue.length > 0 && (await this.write(queue[0]!))) queue.shift();
      if (queue.length === 0) this.behind.delete(client);
    }
    return wrote;
  }

  /** Writes while the client has room: true when the whole of it is written (or no longer wanted). */
  private async write(owed: Owed): Promise<boolean> {
    const { job, sub, subs, indices } = owed;
    while (owed.next < indices.length) {
      // Unsubscribed, or its socket closed, meanwhile: what is left is not sent.
      if (!subs.has(sub)) return true;
      const room = sub.client.room();
      if (room === 'closed') return true;
      if (room === 'full') return false;
      sub.write(sub.prefix + job.texts[indices[owed.next]!] + SUFFIX);
      owed.next++;
      this.uncounted++;
      if (this.due()) await this.breathe();
    }
    return true;
  }

  /** After `work` more steps: is the slice's time up? (The clock is read every STEPS_PER_CLOCK steps.) */
  private due(work = 1): boolean {
    this.steps += work;
    if (this.steps < this.clockAt) return false;
    this.clockAt = this.steps + STEPS_PER_CLOCK;
    return performance.now() >= this.sliceEnds;
  }

  /** Lets the event loop serve everything else (sockets, timers, other clients) before the next slice. */
  private async breathe(): Promise<void> {
    this.count();
    await nextTurn();
    this.sliceEnds = performance.now() + SLICE_MS;
  }

  /** Nothing to write until a client behind takes some of what it holds. */
  private async pause(): Promise<void> {
    this.count();
    await sleep(POLL_MS);
    this.sliceEnds = performance.now() + SLICE_MS;
  }

  private count(): void {
    if (this.uncounted === 0) return;
    this.metrics.recordNotifications('logs', this.uncounted);
    this.uncounted = 0;
  }
}
