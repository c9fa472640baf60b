/**
 * The shared `newPendingTransactions` feed: while any client subscribes, every upstream that has a
 * `ws` address is subscribed to newPendingTransactions; hashes are relayed once each (the last
 * RECENT hashes are remembered). A node that fails is reconnected with backoff while the others keep
 * the feed going; a feed that stays open but silent while another delivered lately is replaced.
 * Owns: upstream pending subscriptions and de-duplication. Refuses: per-client delivery (session.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import WebSocket from 'ws';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { isHash } from '../jsonrpc/hex.js';
import type { Fleet } from '../upstream/fleet.js';
import { notificationResult } from '../upstream/ws-heads.js';

const RECENT = 10_000;
const MAX_BACKOFF_MS = 10_000;
/** A feed silent this long while another delivered within it is replaced. */
const SILENT_MS = 15_000;

interface UpstreamFeed {
  name: string;
  url: string;
  socket: WebSocket | null;
  lastAt: number;
  openedAt: number;
  backoff: number;
  timer: NodeJS.Timeout | null;
}

export class PendingFeed {
  private readonly listeners = new Set<(hash: string) => void>();
  private readonly seen = new Set<string>();
  private feeds: UpstreamFeed[] = [];
  private watchdog: NodeJS.Timeout | null = null;
  /** Feeds replaced because they went silent (for tests and /status). */
  replaced = 0;

  constructor(
    private readonly fleet: Fleet,
    private readonly log: Logger,
  ) {}

  add(fn: (hash: string) => void): void {
    this.listeners.add(fn);
    if (this.listeners.size === 1) this.open();
  }

  remove(fn: (hash: string) => void): void {
    this.listeners.delete(fn);
    if (this.listeners.size === 0) this.shut();
  }

  private open(): void {
    this.feeds = this.fleet.upstreams
      .filter((u) => u.config.ws !== undefined && !u.shadow)
      .map((u) => ({
        name: u.name,
        url: u.config.ws!,
        socket: null,
        lastAt: 0,
        openedAt: 0,
        backoff: 500,
        timer: null,
      }));
    for (const f of this.feeds) this.connect(f);
    this.watchdog = setInterval(() => this.checkSilent(), 1_000);
    this.watchdog.unref();
  }

  /**
   * A reloaded configuration (after the fleet applied it): while anyone listens and the upstreams'
   * `ws` addresses changed, the feeds start again from the new list; unchanged, they stay open.
   */
  apply(config: Pick<Config, 'upstreams'>): void {
    if (this.listeners.size === 0) return;
    const want = config.upstreams.filter((u) => u.ws !== undefined && !u.shadow).map((u) => `${u.name} ${u.ws}`);
    if (
      isDeepStrictEqual(
        want,
        this.feeds.map((f) => `${f.name} ${f.url}`),
      )
    )
      return;
    this.shut();
    this.open();
  }

  private shut(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
    const feeds = this.feeds;
    this.feeds = [];
    for (const f of feeds) {
      if (f.timer) clearTimeout(f.timer);
      f.socket?.terminate();
    }
  }

  private connect(f: UpstreamFeed): void {
    if (!this.feeds.includes(f)) return;
    const socket = new WebSocket(f.url, { handshakeTimeout: 5_000, maxPayload: 1024 * 1024 });
    f.socket = socket;
    socket.on('open', () => {
      f.backoff = 500;
      f.openedAt = Date.now();
      socket.send('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newPendingTransactions"]}');
    });
    socket.on('message', (data: WebSocket.RawData) => {
      const hash = notificationResult(data);
      if (typeof hash !== 'string' || !isHash(hash)) return;
      f.lastAt = Date.now();
      this.relay(hash.toLowerCase());
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (f.socket !== socket) return;
      f.socket = null;
      if (!this.feeds.includes(f)) return;
      f.timer = setTimeout(() => this.connect(f), f.backoff);
      f.backoff = Math.min(f.backoff * 2, MAX_BACKOFF_MS);
    });
  }

  private relay(hash: string): void {
    if (this.seen.has(hash)) return;
    this.seen.add(hash);
    if (this.seen.size > RECENT) this.seen.delete(this.seen.values().next().value!);
    for (const fn of this.listeners) fn(hash);
  }

  /** Another feed delivered lately, this one has been open and silent for SILENT_MS: replace it. */
  private checkSilent(): void {
    const now = Date.now();
    const newest = Math.max(0, ...this.feeds.map((f) => f.lastAt));
    for (const f of this.feeds) {
      const quietSince = Math.max(f.lastAt, f.openedAt);
      if (
        f.socket?.readyState === WebSocket.OPEN &&
        newest > quietSince &&
        now - quietSince > SILENT_MS &&
        now - newest < SILENT_MS
      ) {
        this.replaced++;
        this.log.warn({ upstream: f.name }, 'pending transaction feed silent while others deliver: replaced');
        f.openedAt = now;
        f.socket.terminate();
      }
    }
  }

  stop(): void {
    this.listeners.clear();
    this.shut();
  }
}
