/**
 * The shared chain feed behind `newHeads` and `logs`: one for the whole process, whatever the
 * number of clients. It follows the fleet head block by block: each number once, in order, each
 * block fetched by number from a node that has it (so a client told about block N can read it at
 * once), linked to its parent. A gap is backfilled up to `backfillBlocks`; a block whose parent is
 * not the block we announced is a reorg: the feed walks back (up to `reorgDepth`) to the fork,
 * publishes the dropped blocks' logs as removed, and goes on from the fork on the new chain.
 * Logs go to `logs` (logs-fanout.ts), in publication order; when it has a backlog of blocks the
 * feed waits for it before publishing more.
 * Owns: the canonical chain window (hash, parent, header, logs per height) and the order of events.
 * Refuses: sockets, per-client filtering and delivery (logs-fanout.ts, session.ts, server/ws.ts).
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { heightOf, toQuantity } from '../jsonrpc/hex.js';
import { textOf } from '../jsonrpc/raw.js';
import type { Metrics } from '../metrics/registry.js';
import { dispatch } from '../routing/dispatch.js';
import type { Requirement } from '../routing/select.js';
import type { Fleet } from '../upstream/fleet.js';
import type { LogEntry } from './log-filter.js';
import { LogsFanout, type FeedBlock } from './logs-fanout.js';

export type { FeedBlock } from './logs-fanout.js';

export interface FeedSettings {
  backfillBlocks: number;
  reorgDepth: number;
  maxAttempts: number;
  upstreamTimeoutMs: number;
  /** routing.verify.enabled: the blocks fetched for the feeds are verified as a client's are (docs/verification.md). */
  verify: boolean;
}

export function feedSettings(c: Config): FeedSettings {
  return {
    backfillBlocks: c.subscriptions.backfillBlocks,
    reorgDepth: c.subscriptions.reorgDepth,
    maxAttempts: c.routing.maxAttempts,
    upstreamTimeoutMs: c.routing.upstreamTimeoutMs,
    verify: c.routing.verify.enabled,
  };
}

/** Members of a block answer that geth's newHeads header does not carry. */
const NOT_HEADER = ['transactions', 'uncles', 'size', 'totalDifficulty', 'withdrawals'];
const RETRY_MS = 250;

/**
 * Events: 'head' (FeedBlock) for every published block. Logs are handed to `logs` after the head
 * for new blocks (removed false), and for each block a reorg dropped (removed true).
 */
export class ChainFeed extends EventEmitter {
  private readonly window = new Map<number, FeedBlock>();
  private top = -1;
  private seq = 0;
  private running = false;
  private again = false;
  private recheck = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  /** Every logs subscription of the process; logs are fetched only while it holds some. */
  readonly logs: LogsFanout;
  private readonly onHead = (): void => this.pump();
  private readonly onReorg = (): void => {
    this.recheck = true;
    this.pump();
  };

  constructor(
    private readonly fleet: Fleet,
    private settings: FeedSettings,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {
    super();
    this.setMaxListeners(0);
    this.logs = new LogsFanout(metrics, log);
  }

  start(): void {
    this.fleet.on('upstream-head', this.onHead);
    this.fleet.on('reorg', this.onReorg);
    // Heads also arrive by polling; this tick only covers a failed fetch waiting for its retry.
    this.timer = setInterval(() => this.pump(), 1_000);
    this.timer.unref();
    this.pump();
  }

  /** A reloaded configuration: the next block fetched and the next reorg walked use it. */
  apply(config: Config): void {
    this.settings = feedSettings(config);
  }

  stop(): void {
    this.stopped = true;
    this.logs.stop();
    this.fleet.off('upstream-head', this.onHead);
    this.fleet.off('reorg', this.onReorg);
    if (this.timer) clearInterval(this.timer);
  }

  /** The sequence number of the newest published block (a subscription starting now sees later ones). */
  get current(): number {
    return this.seq;
  }

  private pump(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void (async () => {
      try {
        do {
          this.again = false;
          await this.advance();
        } while (this.again && !this.stopped);
      } catch (err) {
        this.log.error({ err }, 'chain feed failed; retrying');
      } finally {
        this.running = false;
      }
    })();
  }

  private async advance(): Promise<void> {
    while (!this.stopped) {
      const target = this.fleet.head;
      if (target < 0) return;
      if (this.top < 0) {
        const b = await this.block(target);
        if (b === null) return;
        await this.publish(b);
        continue;
      }
      if (this.recheck) {
        this.recheck = false;
        const b = await this.block(this.top, { minHead: target });
        if (b !== null && b.hash !== this.window.get(this.top)?.hash) {
          await this.rewind();
          continue;
        }
      }
      if (target <= this.top) return;
      if (target - this.top > this.settings.backfillBlocks) {
        // Too far behind to backfill: go on from the last backfillBlocks blocks, unlinked.
        this.log.warn(
          { from: this.top, to: target, backfill: this.settings.backfillBlocks },
          'chain feed gap larger than backfillBlocks: skipping ahead',
        );
        this.window.clear();
        this.top = target - this.settings.backfillBlocks;
      }
      const next = this.top + 1;
      const b = await this.block(next);
      if (b === null) return;
      const parent = this.window.get(this.top);
      if (parent !== undefined && parent.hash !== b.parentHash) {
        await this.rewind();
        continue;
      }
      if (this.logs.size > 0) {
        const logs = await this.logsOf(b);
        if (logs === null) continue; // the block vanished meanwhile: look again
        b.logs = logs;
      }
      await this.publish(b);
    }
  }

  private async publish(b: FeedBlock): Promise<void> {
    if (this.logs.size > 0 && b.logs === undefined) {
      const logs = await this.logsOf(b);
      if (logs !== null) b.logs = logs;
    }
    b.seq = ++this.seq;
    this.window.set(b.number, b);
    this.top = b.number;
    for (const n of this.window.keys()) if (n <= this.top - this.settings.reorgDepth - 1) this.window.delete(n);
    this.emit('head', b);
    await this.logs.push(b, false);
  }

  /**
   * Our tip is not the chain's any more: find the highest height where a node at the fleet head
   * still has our block, publish the blocks above it as removed (newest first) and forget them.
   */
  private async rewind(): Promise<void> {
    const floor = this.top - this.settings.reorgDepth;
    let h = this.top;
    while (h > floor && this.window.has(h) && !this.stopped) {
      const b = await this.block(h, { minHead: this.fleet.head });
      if (b === null) return;
      if (b.hash === this.window.get(h)!.hash) break;
      h--;
    }
    if (h === this.top) {
      // Nodes disagree for a moment (some still on the old chain): look again shortly.
      await new Promise((r) => setTimeout(r, RETRY_MS));
      return;
    }
    this.log.warn({ fork: h + 1, top: this.top }, 'chain feed reorg: re-sending from the fork');
    for (let n = this.top; n > h; n--) {
      const dropped = this.window.get(n);
      this.window.delete(n);
      if (dropped !== undefined) await this.logs.push(dropped, true);
    }
    // Walked off the window: the new chain starts unlinked at the bottom of it.
    if (!this.window.has(h)) this.window.clear();
    this.top = h;
  }

  /** Block n from a node that has it (null after every attempt failed; the tick retries). */
  private async block(n: number, req: Requirement = { minHead: n }): Promise<FeedBlock | null> {
    const raw = await this.askFleet('eth_getBlockByNumber', `["${toQuantity(n)}",false]`, req);
    if (raw === null || raw === 'null') return null;
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return null;
    }
    if (typeof o.hash !== 'string' || typeof o.parentHash !== 'string') return null;
    const number = heightOf(o.number);
    if (number !== n) return null;
    for (const k of NOT_HEADER) delete o[k];
    return {
      number,
      hash: o.hash.toLowerCase(),
      parentHash: o.parentHash.toLowerCase(),
      header: JSON.stringify(o),
      seq: 0,
    };
  }

  /**
   * The block's logs by its hash, from any healthy node, retried until one answers: never skipped.
   * Null when the block is no longer at its height (a reorg took it): the caller looks again.
   */
  private async logsOf(b: FeedBlock): Promise<LogEntry[] | null> {
    for (let attempt = 1; !this.stopped; attempt++) {
      const raw = await this.askFleet('eth_getLogs', `[{"blockHash":"${b.hash}"}]`, {});
      if (raw !== null) {
        try {
          const logs = JSON.parse(raw) as unknown;
          if (Array.isArray(logs)) return logs as LogEntry[];
        } catch {
          // a broken answer: ask again
        }
      }
      if (attempt % 4 === 0) {
        const again = await this.block(b.number);
        if (again !== null && again.hash !== b.hash) return null;
      }
      await new Promise((r) => setTimeout(r, Math.min(RETRY_MS * attempt, 2_000)));
    }
    return null;
  }

  private async askFleet(method: string, paramsJson: string, requirement: Requirement): Promise<string | null> {
    const s = this.settings;
    const routing = {
      fleet: this.fleet,
      metrics: this.metrics,
      maxAttempts: s.maxAttempts,
      upstreamTimeoutMs: s.upstreamTimeoutMs,
      verify: s.verify,
    };
    const [answer] = await dispatch([{ method, label: method, paramsJson, requirement }], {
      routing,
      deadline: this.fleet.now() + s.upstreamTimeoutMs * s.maxAttempts,
      trail: [],
    });
    const result = answer?.outcome.result;
    return result === undefined ? null : textOf(result);
  }
}
