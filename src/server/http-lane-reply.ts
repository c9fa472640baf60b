/**
 * The plain lane's exchanges (http-lane.ts, exchange.ts): a request read whole and its answer, made
 * whole and written in its request's turn, or, for an answer written in pieces or compressed, a
 * ServerResponse on the same socket.
 */
import { type IncomingMessage, type OutgoingHttpHeaders, type Server, ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { BodyResult } from './body.js';
import type { AnswerHeaders, BodyReceiver, Exchange, ExchangeRequest } from './exchange.js';
import { publishRequestStart, publishResponseFinish } from './http-lane-channels.js';

/** What an answer needs of its connection: it writes the answers that are ready, in order. */
export interface ReplyConnection {
  readonly server: Server;
  /** Writes the answers that are ready, in order. */
  flush(): void;
  /** A `Connection: close` answer went out: nothing after it is worked on or written. */
  closeAfterAnswer(): void;
  /** `reply`'s ServerResponse finished: the next answer may go out. */
  finished(reply: LaneReply): void;
}

/** A header value the lane writes as it is; anything else goes through ServerResponse, which checks it. */
const PLAIN_VALUE = /^[\t\x20-\x7e]*$/;

/**
 * One plain request and its answer (the lane's side of the exchange, exchange.ts): one write of
 * the whole answer when it is a small one with plain headers (the path of nearly every answer),
 * else a ServerResponse on the same socket (`full`), for an answer written in pieces or
 * compressed. Answers go out in the order their requests came.
 */
export class LaneReply implements Exchange {
  headersSent = false;
  /** The whole answer, once `send` made it; null before. */
  out: string | Buffer | null = null;
  /** The answer's ServerResponse, once `full` made one. */
  res: ServerResponse | null = null;
  close = false;

  constructor(
    private readonly conn: ReplyConnection,
    readonly req: ExchangeRequest,
    /** Read with the head (http-lane.ts). */
    private readonly body: BodyResult,
  ) {}

  readBody(_maxBytes: number, to: BodyReceiver): void {
    to.received(this.body);
  }

  /** The only header set apart from an answer's own: the drain's Connection: close. */
  closeConnection(): void {
    this.close = true;
    if (this.res !== null) this.res.shouldKeepAlive = false;
  }

  /** The lane answers only requests it read whole, or closes with a linger itself (http-lane.ts). */
  beforeAnswer(): void {}

  sendWhole(status: number, headers: AnswerHeaders, body: string | Buffer): void {
    if (this.send(status, headers, body)) return;
    const res = this.full();
    res.writeHead(status, headers as OutgoingHttpHeaders | string[]);
    res.end(body);
  }

  response(): ServerResponse {
    return this.full();
  }

  /**
   * An APM agent listens to node:http's channels (http-lane-channels.ts): the answer's
   * ServerResponse is made now, before the request is handled, and the request announced with it.
   */
  observed(): void {
    publishRequestStart(this.req, this.full(), this.conn.server);
  }

  /**
   * Makes the whole answer and writes it when its turn comes; false (nothing made) when a header
   * value is not plain ASCII, for `full` to write it.
   */
  private send(status: number, headers: AnswerHeaders, body: string | Buffer): boolean {
    // An observed request's answer goes through its ServerResponse (observed()), as `full` writes it.
    if (this.res !== null) {
      if (!Array.isArray(headers) && (headers as Record<string, unknown>).connection === 'close')
        this.res.shouldKeepAlive = false;
      return false;
    }
    let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
    if (Array.isArray(headers)) {
      const pairs = headers as readonly string[];
      for (let i = 0; i + 1 < pairs.length; i += 2) {
        if (!PLAIN_VALUE.test(pairs[i + 1]!)) return false;
        head += `${pairs[i]}: ${pairs[i + 1]}\r\n`;
      }
    } else {
      for (const [name, value] of Object.entries(headers)) {
        if (!PLAIN_VALUE.test(String(value))) return false;
        // The answer's own Connection (a refusal's `close`) is the one line written below.
        if (name === 'connection') {
          if (value === 'close') this.close = true;
          continue;
        }
        head += `${name}: ${value}\r\n`;
      }
    }
    head += `Date: ${httpDate()}\r\n`;
    head += this.close
      ? 'Connection: close\r\n\r\n'
      : `Connection: keep-alive\r\n${keepAliveLine(this.conn.server)}\r\n`;
    this.headersSent = true;
    this.out = typeof body === 'string' ? head + body : Buffer.concat([Buffer.from(head, 'latin1'), body]);
    this.conn.flush();
    return true;
  }

  /** A ServerResponse for this request, for an answer `send` does not write; it writes when its turn comes. */
  full(): ServerResponse {
    if (this.res !== null) return this.res;
    const res = new ServerResponse(this.req as unknown as IncomingMessage);
    res.shouldKeepAlive = !this.close;
    this.res = res;
    this.headersSent = true;
    res.once('finish', () => {
      publishResponseFinish(this.req, res, this.conn.server);
      this.detach?.();
      // As node:http's server does once an answer is out: its 'close' on the next tick.
      process.nextTick(() => res.emit('close'));
      if (!res.shouldKeepAlive) this.conn.closeAfterAnswer();
      else this.conn.finished(this);
    });
    this.conn.flush();
    return res;
  }

  /** Set while the ServerResponse has the socket: gives it back. */
  private detach: (() => void) | null = null;

  /** Gives the ServerResponse the socket: what it buffered meanwhile is written, and then the rest. */
  attach(socket: Socket): void {
    const res = this.res!;
    // node:http's server passes the socket's drain to its response; here the lane does (pieces, pipes).
    const drain = (): boolean => res.emit('drain');
    socket.on('drain', drain);
    this.detach = () => {
      socket.off('drain', drain);
      res.detachSocket(socket);
      this.detach = null;
    };
    res.assignSocket(socket);
  }
}

/** `Keep-Alive: timeout=N` as node:http writes it (whole seconds of the server's keep-alive timeout). */
function keepAliveLine(server: Server): string {
  const seconds = Math.floor(server.keepAliveTimeout / 1000);
  return seconds > 0 ? `Keep-Alive: timeout=${seconds}\r\n` : '';
}

let date = '';
let dateSecond = -1;

/** The Date header's value, made once a second. */
function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    date = new Date(now).toUTCString();
  }
  return date;
}
