/**
 * The WebSocket front: upgrades on server.port and server.wsPort (any path HTTP serves), one
 * Session per socket, every text or binary frame worked on by the transport-neutral Front exactly
 * like an HTTP body (one frame = one request or batch). Limits: sockets per client IP (upgrade
 * refused with 429), subscriptions per client IP (subscriptions/session.ts refuses past it), frame
 * size (close 1009, by the ws library's maxPayload), frames in flight per socket (the socket is
 * not read: subscriptions/frames.ts), unsent bytes per client, answers waiting and notifications a
 * session holds included (close 1013), and a ping every pingIntervalMs (no pong by the next one:
 * terminated).
 * Owns: sockets and their lifetime. Refuses: JSON-RPC semantics (front.ts), the feeds.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, WebSocket } from 'ws';
import { RpcError } from '../jsonrpc/errors.js';
import { limitKey } from '../net/cidrs.js';
import type { Admission } from '../limits/rate.js';
import { textOf } from '../jsonrpc/raw.js';
import { errorText } from '../jsonrpc/response.js';
import { INVALID_METHOD, type Metrics } from '../metrics/registry.js';
import type { ClientIp } from './client-ip.js';
import { ignoreUpgradeDirectives } from './directives.js';
import { peerAddress } from './proxy-protocol.js';
import type { Front, FrontResult } from './front.js';
import { rpcTarget } from './rpc-target.js';
import { rawRefusal, refuseSocket } from './refusal.js';
import type { Lingering } from './linger.js';
import { KeyCounts } from '../limits/key-counts.js';
import type { ChainFeed } from '../subscriptions/chain.js';
import type { PendingFeed } from '../subscriptions/pending.js';
import { Frames, type Started } from '../subscriptions/frames.js';
import { Session } from '../subscriptions/session.js';
import { startTrace, type RequestTrace, type RequestTracing } from '../tracing/index.js';

export interface WsDeps {
  front: Front;
  clientIp: ClientIp;
  metrics: Metrics;
  log: Logger;
  feed: ChainFeed;
  pending: PendingFeed;
  maxPerConnection: number;
  maxPerIp: number;
  maxConnectionsPerIp: number;
  maxMessageBytes: number;
  maxBufferBytes: number;
  maxFramesInFlight: number;
  pingIntervalMs: number;
  isDraining: () => boolean;
  knowsKey: (key: string) => boolean;
  /** Charges a guess at an API key to the client IP's rate budget (limits/rate.ts admitRequest). */
  admitRequest: (ip: string) => Admission | Promise<Admission>;
  /** Tracing with the path's sampling (tracing/): a SERVER span per frame; null or absent when off. */
  tracing?: RequestTracing | null;
}

/** A slow reader's socket gets this long to take the close frame before it is cut. */
const CLOSE_GRACE_MS = 5_000;
const decoder = new TextDecoder('utf-8', { fatal: true });

interface Client {
  ip: string;
  alive: boolean;
  session: Session;
  /** Its frames and their answers; shutdown waits for the frames received to be answered. */
  frames: Frames;
  /** Notifications are being gathered until the end of this turn of the event loop. */
  corked: boolean;
}

export class WsFront {
  private readonly wss: WebSocketServer;
  private readonly clients = new Map<WebSocket, Client>();
  private readonly perIp = new Map<string, number>();
  private readonly ipSubscriptions = new KeyCounts();
  private pinger: NodeJS.Timeout | null = null;
  /** Shutdown began: frames that arrive from now on are refused with SHUTTING_DOWN. */
  private closing = false;

  /** `current`: the request path's deps in force, read per frame (a reload swaps them: app.ts). */
  constructor(private readonly current: () => WsDeps) {
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: current().maxMessageBytes,
      perMessageDeflate: false,
      clientTracking: false,
    });
    this.schedulePing();
  }

  private get deps(): WsDeps {
    return this.current();
  }

  get connections(): number {
    return this.clients.size;
  }

  /** Takes `server`'s upgrades; a refused one closes with the server's linger (http.ts). */
  attach(server: Server, lingering: Lingering): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.upgrade(req, socket, head, lingering),
    );
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, lingering: Lingering): void {
    const d = this.deps;
    socket.on('error', () => socket.destroy());
    // An upgrade is a GET: it counts in HTTP requests by status, never as a call (as over HTTP).
    const refuse = (reason: 'SHUTTING_DOWN' | 'NOT_FOUND' | 'INVALID_API_KEY' | 'RATE_LIMITED'): void => {
      const e = new RpcError(reason);
      d.metrics.recordHttp(e.http, null);
      refuseSocket(socket, rawRefusal(e), lingering);
    };
    if (d.isDraining()) return refuse('SHUTTING_DOWN');
    const target = rpcTarget(req);
    if (target === null) return refuse('NOT_FOUND');
    const ip = d.clientIp.resolve(peerAddress(req.socket), req.headers['x-forwarded-for']);
    // An unknown key costs the guesser its IP's budget, as over HTTP: 401 while it lasts, then 429.
    if (target.apiKey !== undefined && !d.knowsKey(target.apiKey)) {
      const refused = (wait: Admission): void => refuse(wait === null ? 'INVALID_API_KEY' : 'RATE_LIMITED');
      return void Promise.resolve(d.admitRequest(ip)).then(refused, () => refused(null));
    }
    const ipKey = limitKey(ip);
    if ((this.perIp.get(ipKey) ?? 0) >= d.maxConnectionsPerIp) return refuse('RATE_LIMITED');
    const answerable = socket.readable && socket.writable;
    let opened = false;
    // Counted only once the handshake succeeded: a handshake ws rejects (no key, wrong version,
    // socket already gone) never reaches the callback, so nothing would ever take the count back.
    // Without verifyClient the callback runs synchronously, so no other upgrade slips in between.
    // Read by the library for each new socket: open sockets keep the cap they started with.
    this.wss.options.maxPayload = d.maxMessageBytes;
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      opened = true;
      d.metrics.recordHttp(101, null);
      ignoreUpgradeDirectives(req.headers, d.metrics);
      this.connection(ws, ip, ipKey, target.apiKey);
    });
    // Refused by ws itself: 405 for a method other than GET, 400 for a missing or malformed
    // handshake header. A client already gone got no answer and is not counted.
    if (!opened && answerable) d.metrics.recordHttp(req.method === 'GET' ? 400 : 405, null);
  }

  /** `ipKey`: what maxConnectionsPerIp counts (limitKey: the IPv4 address, an IPv6 /64). */
  private connection(ws: WebSocket, ip: string, ipKey: string, apiKey: string | undefined): void {
    const d = this.deps;
    this.perIp.set(ipKey, (this.perIp.get(ipKey) ?? 0) + 1);
    const session = new Session({
      feed: d.feed,
      pending: d.pending,
      metrics: d.metrics,
      maxPerConnection: () => this.deps.maxPerConnection,
      takeIpSlot: () => this.ipSubscriptions.take(ipKey, this.deps.maxPerIp),
      giveIpSlot: () => this.ipSubscriptions.give(ipKey),
      send: (text) => this.notify(ws, text),
      // Answers waiting their turn are unsent data too: the logs pacing sees them.
      unsent: () => (ws.readyState === WebSocket.OPEN ? ws.bufferedAmount + this.waiting(ws) : null),
      maxBufferBytes: () => this.deps.maxBufferBytes,
      overflow: () => this.slowReader(ws),
    });
    const log = d.log.child({ ws: ip });
    const frames = new Frames({
      limits: () => this.deps,
      start: (bytes) => this.start(bytes, session, ip, apiKey, log),
      // Answers waiting their turn were counted when they were queued: only unsent data counts here.
      write: (answer) => this.send(ws, answer, 0),
      unsent: () => ws.bufferedAmount,
      overflow: () => this.slowReader(ws),
      pause: () => ws.pause(),
      resume: () => ws.resume(),
    });
    const client: Client = { ip, alive: true, session, frames, corked: false };
    this.clients.set(ws, client);
    d.metrics.setWsConnections(this.clients.size);
    ws.on('pong', () => (client.alive = true));
    ws.on('error', (err: Error & { code?: string }) => {
      if (err.code !== 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') return;
      // A frame over maxMessageBytes is a body refused whole: one call of method invalid, as over HTTP.
      this.deps.metrics.recordWsClose('too_large');
      this.deps.metrics.recordRefused(INVALID_METHOD, 'BODY_TOO_LARGE');
    });
    ws.on('close', () => {
      session.close();
      frames.close();
      this.clients.delete(ws);
      const n = (this.perIp.get(ipKey) ?? 1) - 1;
      if (n <= 0) this.perIp.delete(ipKey);
      else this.perIp.set(ipKey, n);
      this.deps.metrics.setWsConnections(this.clients.size);
    });
    ws.on('message', (data: WebSocket.RawData) =>
      frames.received(Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer)),
    );
  }

  /** The work on one frame, exactly as on an HTTP body; its subscriptions notify once its answer is written. */
  private start(bytes: Buffer, session: Session, ip: string, apiKey: string | undefined, log: Logger): Started {
    let text: string;
    try {
      text = decoder.decode(bytes);
    } catch {
      text = '\u0000'; // not JSON: the front answers it with -32700, in its turn
    }
    const frame = session.frame();
    // A frame carries no headers: each is a trace of its own.
    const trace = this.deps.tracing ? startTrace(this.deps.tracing, 'websocket', null) : null;
    let out: FrontResult | Promise<FrontResult>;
    try {
      out = this.closing
        ? this.shuttingDown()
        : this.deps.front.process(text, { ip, apiKey, session: frame }, log, trace);
    } catch (err) {
      trace?.end(500, 1, null);
      return { answer: this.crashed(err), written: () => frame.written() };
    }
    const answer =
      out instanceof Promise
        ? out.then(
            (r) => bodyOf(r, trace),
            (err: unknown) => {
              trace?.end(500, 1, null);
              return this.crashed(err);
            },
          )
        : bodyOf(out, trace);
    return { answer, written: () => frame.written() };
  }

  /** A frame that arrived after shutdown began: refused whole, as an HTTP body is then (503). */
  private shuttingDown(): FrontResult {
    this.deps.metrics.recordRefused(INVALID_METHOD, 'SHUTTING_DOWN');
    return {
      status: 503,
      body: errorText('null', new RpcError('SHUTTING_DOWN')),
      calls: null,
      methods: () => [],
      upstreams: [],
      errors: 1,
    };
  }

  private crashed(err: unknown): string {
    this.deps.log.error({ err }, 'websocket handler crashed');
    return errorText('null', new RpcError('INTERNAL_ERROR'));
  }

  /**
   * Writes one frame unless the client already holds maxBufferBytes unsent (`held`: other bytes
   * held for it): then it is closed with 1013. Only data queued and not yet taken counts, not the
   * frame at hand, so one answer larger than the cap still reaches a reader that keeps up; memory
   * stays under the cap plus one answer.
   */
  private send(ws: WebSocket, text: string | Buffer, held: number): void {
    if (this.full(ws, held)) return;
    // An answer that waited its turn is its UTF-8 copy: still a text frame.
    ws.send(text, { binary: false });
  }

  /**
   * A notification, under the same cap. Those written to one socket in the same turn (a slice of
   * logs notifications) leave in one write instead of one system call each: the socket is corked
   * until the turn's synchronous work and promise callbacks are done (ws has no cork of its own;
   * its per-frame cork nests inside this one). Each is handed over as bytes: a string waiting in a
   * corked socket stays on the JS heap, where the collector copies it again at every scavenge.
   * Measured on 400,000 notifications of one block: 5.2 s of CPU with one write each, 2.8 s
   * corked as strings, 1.3 s corked as bytes.
   */
  private notify(ws: WebSocket, text: string): void {
    // A notification is written ahead of answers waiting their turn: they count as held too.
    if (this.full(ws, this.waiting(ws))) return;
    const client = this.clients.get(ws);
    const raw = (ws as unknown as { _socket?: Duplex | null })._socket;
    if (client !== undefined && !client.corked && raw) {
      raw.cork();
      client.corked = true;
      process.nextTick(() => {
        client.corked = false;
        raw.uncork();
      });
    }
    // Bytes, but a text frame: clients that follow the WebSocket API (browsers, Node's own
    // WebSocket, viem on it) hand a binary frame over as a Blob, which is no JSON-RPC message.
    ws.send(Buffer.from(text), { binary: false });
  }

  /**
   * True when nothing more may be written: the socket is closing, or it holds the cap (then it is
   * closed with 1013). `held`: other bytes held for it outside the socket.
   */
  private full(ws: WebSocket, held: number): boolean {
    if (ws.readyState !== WebSocket.OPEN) return true;
    // Notifications its session holds for subscriptions not yet answered are unsent data too.
    if (ws.bufferedAmount + held + (this.clients.get(ws)?.session.heldBytes ?? 0) < this.deps.maxBufferBytes)
      return false;
    this.slowReader(ws);
    return true;
  }

  /** Bytes of the answers waiting for an earlier frame's answer. */
  private waiting(ws: WebSocket): number {
    return this.clients.get(ws)?.frames.waitingBytes ?? 0;
  }

  /** A client holding maxBufferBytes it has not taken: closed with 1013, nothing more is queued for it. */
  private slowReader(ws: WebSocket): void {
    if (ws.readyState !== WebSocket.OPEN) return;
    this.deps.metrics.recordWsClose('slow_reader');
    const client = this.clients.get(ws);
    // The session first: frames closed release their subscriptions, which must send nothing now.
    client?.session.close();
    client?.frames.close();
    ws.close(1013, 'slow reader: too much unsent data');
    setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  /** One round of pings every pingIntervalMs, read for each round (a reload changes the next one). */
  private schedulePing(): void {
    if (this.closing) return;
    this.pinger = setTimeout(() => {
      this.schedulePing();
      for (const [ws, c] of this.clients) {
        // Not read by choice (its frames wait for answers): its pong may sit unread. Judged again
        // from the first ping after reading resumes.
        if (c.frames.isPaused) {
          c.alive = true;
          continue;
        }
        if (!c.alive) {
          this.deps.metrics.recordWsClose('dead_peer');
          ws.terminate();
          continue;
        }
        c.alive = false;
        ws.ping();
      }
    }, this.deps.pingIntervalMs);
    this.pinger.unref();
  }

  /**
   * SIGTERM: frames already received are answered and their answers written, until `deadline`
   * (epoch ms; none by default), while later frames are refused with SHUTTING_DOWN; then every
   * socket is closed with 1001 (going away), after what was queued for it. Sockets that do not
   * answer the close are cut.
   */
  async close(code = 1001, deadline = 0): Promise<void> {
    this.closing = true;
    if (this.pinger) clearTimeout(this.pinger);
    const wait = Math.max(0, deadline - Date.now());
    if (wait > 0) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, wait)));
      await Promise.race([Promise.all([...this.clients.values()].map((c) => c.frames.allAnswered())), late]);
      clearTimeout(timer);
    }
    const all = [...this.clients.keys()];
    if (all.length > 0 && code === 1001) this.deps.metrics.recordWsClose('shutdown', all.length);
    await Promise.all(
      all.map(
        (ws) =>
          new Promise<void>((resolve) => {
            if (ws.readyState === WebSocket.CLOSED) return resolve();
            ws.once('close', () => resolve());
            ws.close(code, 'server shutting down');
            setTimeout(() => ws.terminate(), 2_000).unref();
          }),
      ),
    );
  }

  status(): { connections: number; subscriptions: number } {
    let subscriptions = 0;
    for (const c of this.clients.values()) subscriptions += c.session.size;
    return { connections: this.clients.size, subscriptions };
  }
}

/**
 * A frame's answer; its trace ends with it. An answer passed on as bytes is decoded whole here
 * (ws frames a message whole, and the frames' order is kept by texts: subscriptions/frames.ts).
 */
function bodyOf(r: FrontResult, trace: RequestTrace | null): string {
  trace?.end(r.status, r.errors, r.calls);
  return textOf(r.body);
}
