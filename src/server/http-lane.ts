/**
 * The plain lane: a connection's JSON-RPC POSTs read straight off its socket and answered with one
 * write each, for as long as every request on it is plain; the first that is not, and everything
 * after it on that connection, goes to node:http, which then owns the socket for good.
 *
 * Why: node:http's request and response objects (the IncomingMessage stream, ServerResponse, their
 * events and ticks) cost more than everything else in a cache hit. The same in-process front behind
 * node:http and behind a reader like this one, hits and misses under `wrk -c32`, 3 rounds each:
 * hits 36-40 against 17.4-17.9 us of CPU per request (27k against 58k req/s; a bare node:http
 * server answering a constant: 62k), misses 46-55 against 27-29 us (docs/benchmarks.md).
 *
 * A request is plain when its head and its whole body are in the bytes read so far and it is
 * `POST <path> HTTP/1.1` with headers that are tokens and printable ASCII, none repeated, none
 * folded, a Host, a Content-Length of digits (no tab) within `maxBodyBytes`, and no
 * Transfer-Encoding, Expect, Upgrade, Proxy-Connection or Connection other than keep-alive
 * (http-head.ts); a head whose Content-Length is over `maxBodyBytes` is answered (413) without its
 * body, and the connection closes with a linger. That is a strict subset of what node:http
 * reads alike (test/server/lane-against-node.test.ts holds it to node:http's parser): wherever node:http could answer otherwise (a refusal, 100-continue, an upgrade, a
 * chunked body, a request that arrives in pieces and its timeouts), the lane hands over instead of
 * deciding, with the bytes it read put back.
 *
 * Bounds: up to 32 pipelined requests of one connection are worked on at once, their answers
 * written in the order asked. Past 32, while the client leaves its answers unread (the socket's
 * buffer full), or with 64 KiB read and not yet worked on, the socket is not read until answers go
 * out, as node:http stops reading pipelined requests. Timeouts: a connection that sends nothing
 * within the header timeout gets node:http's 408 (as http.ts refuses node:http's), an idle one is
 * closed after the keep-alive timeout, both read from the server as node:http reads them (reloads
 * apply); a request that arrives in pieces is node:http's, with its header and body timeouts.
 */
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { Socket } from 'node:net';
import { type BodyResult, decodeBody } from './body.js';
import type { Exchange } from './exchange.js';
import { HeldBytes } from './held-bytes.js';
import { laneObserved, observedRequest } from './http-lane-channels.js';
import { readPlain } from './http-head.js';
import { LaneReply, type ReplyConnection } from './http-lane-reply.js';
import type { Lingering } from './linger.js';

/** A request the lane read: what the HTTP front reads of node's IncomingMessage, and no more. */
export interface PlainRequest {
  readonly method: 'POST';
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly socket: Socket;
  readonly httpVersionMajor: 1;
  readonly httpVersionMinor: 1;
}

export interface LaneOptions {
  /** Works on one plain request; answers it (exactly once, or the connection stalls). */
  serve: (x: Exchange) => void;
  maxBodyBytes: () => number;
  /** The connection owes no answer and holds no byte of another request (the connection caps may close it). */
  idle: (socket: Socket) => void;
  /** Where a connection closed under bytes not read goes (linger.ts). */
  lingering: Lingering;
  /** Nothing came within the header timeout: node:http's 408, written where node:http writes it (http.ts). */
  timedOut: (socket: Socket) => void;
  /** node:http takes the socket for good, with `rest` (bytes read, not worked on) put back. */
  handOver: (socket: Socket, rest: Buffer | null) => void;
}

/** The body of a request whose Content-Length is over maxBodyBytes: not read, answered 413. */
const TOO_LARGE: BodyResult = Object.freeze({ ok: false, why: 'too_large' });

/**
 * Bytes kept while answers are owed: the lane works only on requests read whole, and one that is
 * not goes to node:http once the answers before it are out; past this, the socket is not read.
 */
const MAX_PENDING_BYTES = 64 * 1024;
/** Requests of one connection worked on at once (pipelined); past this, the socket is not read. */
const MAX_WAITING = 32;

/** The lane's connections (the connection pipeline opens them: connection-pipeline.ts). */
export class Lane {
  readonly connections = new Set<LaneConnection>();
  constructor(
    readonly server: Server,
    readonly opts: LaneOptions,
  ) {}

  open(socket: Socket): void {
    this.connections.add(new LaneConnection(this, socket));
  }

  /** Closes the lane's idle connections, or all of them. */
  close(all: boolean): void {
    for (const c of this.connections) if (all || !c.busy) c.socket.destroy();
  }
}

class LaneConnection implements ReplyConnection {
  /** Bytes read and not yet worked on. */
  private readonly held = new HeldBytes();
  /** The requests worked on, in the order they came: the first one's answer goes out next. */
  private readonly waiting: LaneReply[] = [];
  /** Whether a request was answered (the idle timeout is then the keep-alive one). */
  private answeredOne = false;
  /** Inside next(): an answer given meanwhile lets its loop go on rather than recursing. */
  private looping = false;
  /** A request that is not plain was read: node:http takes over once the answers before it are out. */
  private handing = false;
  /** A drain is awaited before reading on (readOnDrain). */
  private awaitingDrain = false;
  /** The lane let go of the socket (detach): nothing here reads or writes it any more. */
  private handed = false;
  /**
   * A request whose body is not read (over maxBodyBytes) was taken: nothing after it is read; its
   * answer closes the connection, with a linger.
   */
  private closing = false;

  constructor(
    readonly lane: Lane,
    readonly socket: Socket,
  ) {
    socket.on('data', this.onData);
    socket.on('error', this.onError);
    socket.on('timeout', this.onTimeout);
    socket.on('end', this.onEnd);
    socket.once('close', this.onClose);
    socket.setTimeout(lane.server.headersTimeout);
  }

  get server(): Server {
    return this.lane.server;
  }

  /** Whether an answer is owed on this connection. */
  get busy(): boolean {
    return this.waiting.length > 0;
  }

  private readonly onData = (chunk: Buffer): void => {
    this.held.append(chunk);
    if (!this.looping) this.next();
  };

  /**
   * The peer closed its side: this side closes too, answers still owed unwritten, as node:http does
   * (the server's sockets allow half-open connections, which a peer must not hold open).
   */
  private readonly onEnd = (): void => {
    this.held.clear();
    this.socket.end();
  };

  /** A peer gone or reset: nothing to answer. */
  private readonly onError = (): void => {
    this.socket.destroy();
  };

  private readonly onTimeout = (): void => {
    if (this.busy) return;
    if (this.answeredOne || this.held.length > 0) return void this.socket.destroy();
    // Nothing sent within the header timeout: node:http's own answer (408), as node:http refuses it.
    this.detach();
    this.lane.opts.timedOut(this.socket);
  };

  /** The peer is gone: answers still owed have nowhere to go (a ServerResponse waiting its turn is let go). */
  private readonly onClose = (): void => {
    this.lane.connections.delete(this);
    for (const r of this.waiting) if (r.res !== null && r.res.socket === null) r.res.destroy();
  };

  /**
   * Works on the plain requests read so far, each as it is read (an answer need not wait for the
   * one before it to be worked out, only to be written); stops reading past the bounds.
   */
  private next(): void {
    this.looping = true;
    try {
      while (this.held.length > 0 && !this.handing && !this.closing && this.socket.writable) {
        if (this.waiting.length >= MAX_WAITING) return void this.socket.pause();
        if (this.socket.writableNeedDrain) return this.readOnDrain();
        const end = this.held.headEnd();
        if (end < 0) {
          // A head in pieces is node:http's, with its timeouts, unless answers are owed meanwhile.
          if (this.held.length > MAX_PENDING_BYTES || !this.busy) this.handing = true;
          break;
        }
        const buf = this.held.view();
        const r = readPlain(buf, this.lane.opts.maxBodyBytes(), end);
        if (r === null) {
          this.handing = true;
          break;
        }
        const body = r.tooLarge ? TOO_LARGE : decodeBody(buf.subarray(r.bodyStart, r.bodyEnd));
        if (r.tooLarge) this.held.clear();
        else this.held.take(r.bodyEnd);
        // An APM agent listening to node:http's channels gets node:http's objects (http-lane-channels.ts).
        const observed = laneObserved();
        const req: PlainRequest = observed
          ? (observedRequest(this.socket, r.url, r.headers) as PlainRequest)
          : {
              method: 'POST',
              url: r.url,
              headers: r.headers,
              socket: this.socket,
              httpVersionMajor: 1,
              httpVersionMinor: 1,
            };
        const reply = new LaneReply(this, req, body);
        this.waiting.push(reply);
        if (r.tooLarge) {
          // The body's bytes still to come are not a request: whatever answers this one (the 413,
          // or a refusal checked before the body) closes the connection, with a linger.
          this.closing = true;
          reply.closeConnection();
        }
        if (observed) reply.observed();
        this.lane.opts.serve(reply);
        if (r.tooLarge) break;
      }
    } finally {
      this.looping = false;
    }
    // Until its answer is out, the client is held by TCP's own flow control, not read.
    if (this.closing && !this.handed) return void this.socket.pause();
    if (this.handing) {
      if (!this.busy) this.handOver();
      else this.socket.pause();
    }
  }

  /** Writes the answers that are ready, in order; then reads on, or hands over. */
  flush(): void {
    const socket = this.socket;
    while (this.waiting.length > 0) {
      const first = this.waiting[0]!;
      if (first.res !== null) {
        // A ServerResponse writes when it has the socket; it gives it back when it finishes.
        if (first.res.socket === null && socket.writable) first.attach(socket);
        return;
      }
      if (first.out === null) return;
      this.waiting.shift();
      if (socket.writable) socket.write(first.out);
      if (first.close) return this.closeAfterAnswer();
    }
    if (!this.answeredOne) {
      this.answeredOne = true;
      socket.setTimeout(this.lane.server.keepAliveTimeout);
    }
    if (this.held.length === 0 && !this.handing && !this.closing && socket.writable) this.lane.opts.idle(socket);
    if (this.looping) return;
    if (socket.writableNeedDrain) return this.readOnDrain();
    this.readOn();
  }

  /** The client is not reading its answers: no more requests are read until the socket drains. */
  private readOnDrain(): void {
    this.socket.pause();
    if (this.awaitingDrain) return;
    this.awaitingDrain = true;
    this.socket.once('drain', this.onDrain);
  }

  private readonly onDrain = (): void => {
    this.awaitingDrain = false;
    this.readOn();
  };

  /**
   * A response given with Connection: close: what was read after it is not worked on, and the socket
   * is destroyed once the answer is out (as node:http does), not left half-open for the peer to keep.
   * With bytes read after it or a body not read, the client may still be sending: it closes with a
   * linger, or the reset of a close over unread bytes could reach the client before the answer.
   */
  closeAfterAnswer(): void {
    const unread = this.closing || this.held.length > 0;
    this.held.clear();
    this.waiting.length = 0;
    if (!unread) return void this.socket.destroySoon();
    this.detach();
    this.lane.opts.lingering.close(this.socket);
  }

  /** A ServerResponse finished (or its answer was written): the next answer may go out. */
  finished(reply: LaneReply): void {
    if (this.waiting[0] === reply) this.waiting.shift();
    this.flush();
  }

  private readOn(): void {
    if (this.handed) return;
    if (this.handing) {
      if (!this.busy) this.handOver();
      return;
    }
    if (this.socket.isPaused()) this.socket.resume();
    if (this.held.length > 0) this.next();
  }

  /** The lane lets go of the socket for good (node:http takes it, or refuses it). */
  private detach(): void {
    this.handed = true;
    this.socket.off('data', this.onData);
    this.socket.off('error', this.onError);
    this.socket.off('timeout', this.onTimeout);
    this.socket.off('end', this.onEnd);
    this.socket.off('close', this.onClose);
    this.socket.off('drain', this.onDrain);
    this.socket.setTimeout(0);
    this.lane.connections.delete(this);
  }

  /** node:http takes the connection from here, with the bytes not worked on put back. */
  private handOver(): void {
    if (this.handed) return;
    this.detach();
    const rest = this.held.clear();
    this.lane.opts.handOver(this.socket, rest);
  }
}
