/**
 * The lingering close (nginx's lingering_close, Apache's lingering close): a connection closed
 * after an answer made before the request was read whole (413 over maxBodyBytes, 401, 415, 429,
 * a 408 or 400 refusal, a Connection: close answer with more bytes on their way) is not closed
 * at once. Closing a socket with unread bytes in its receive buffer makes the kernel send a reset,
 * and a reset can reach the client before it read the answer already on its way: it sees EPIPE or
 * ECONNRESET and no answer at all. So the answer is followed by this side's FIN, and the client's
 * bytes are read and dropped until it closes its side, or is silent for `idleMs`, or `ms` have
 * passed since the answer, or it sent `bytes`: only then is the socket destroyed.
 *
 * Owns: the reading and dropping, its bounds, and the sockets lingering (a shutdown destroys them:
 * connection-pipeline.ts).
 * Refuses: deciding when a connection closes (http-request.ts, http-lane.ts, refusal.ts).
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export interface LingerBounds {
  /** server.lingerMs: the longest a connection lingers after its answer. */
  ms: number;
  /** server.lingerBytes: the most it reads and drops. */
  bytes: number;
  /** How long the client may send nothing (server.keepAliveTimeoutMs, as for an idle connection). */
  idleMs: number;
}

/** Listeners of the socket's readers (node:http's parser, the lane) that must not see what is dropped. */
const READERS = ['data', 'end', 'timeout', 'drain', 'readable'] as const;

export class Lingering {
  private readonly sockets = new Set<Duplex>();

  constructor(private readonly bounds: () => LingerBounds) {}

  /** Whether `socket` already lingers: its answer went out, nothing more is written to it. */
  has(socket: Duplex): boolean {
    return this.sockets.has(socket);
  }

  /** Sockets lingering now. */
  get size(): number {
    return this.sockets.size;
  }

  /**
   * Ends `socket` after what was written to it and reads and drops what the client still sends,
   * within the bounds; then destroys it. Whatever read it before is cut off first.
   */
  close(socket: Duplex): void {
    if (this.sockets.has(socket)) return;
    if (socket.destroyed) return;
    if (!socket.readable || socket.readableEnded) return endThenDestroy(socket);
    const { ms, bytes, idleMs } = this.bounds();
    this.sockets.add(socket);
    for (const event of READERS) socket.removeAllListeners(event);
    let dropped = 0;
    const cut = (): void => void socket.destroy();
    const timer = setTimeout(cut, ms);
    timer.unref();
    socket.on('error', cut);
    socket.once('close', () => {
      clearTimeout(timer);
      this.sockets.delete(socket);
    });
    // The client closed its side: it has read or dropped what it will; nothing is left unread here.
    socket.on('end', () => endThenDestroy(socket));
    if ('setTimeout' in socket) (socket as Socket).setTimeout(idleMs, cut);
    // A 'data' listener on a node:http socket also takes the socket's bytes from node's parser
    // (node:http unconsumes it, as for an upgrade), so the parser sees nothing more.
    socket.on('data', (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > bytes) cut();
    });
    socket.resume();
    if (socket.writable) socket.end();
  }

  /**
   * node:http closes a connection after a `Connection: close` answer with `socket.destroySoon()`
   * (its resOnFinish): on `socket`, that closes with a linger instead.
   */
  onClose(socket: Socket): void {
    socket.destroySoon = () => this.close(socket);
  }

  /** A shutdown: every lingering socket goes now. */
  destroyAll(): void {
    for (const s of this.sockets) s.destroy();
  }
}

/** The socket's own destroySoon: end, and destroy once what was written is out. */
function endThenDestroy(socket: Duplex): void {
  if (socket.writable) socket.end();
  if (socket.writableFinished) socket.destroy();
  else socket.once('finish', () => socket.destroy());
}
