/**
 * The one way a connection on a JSON-RPC listener reaches HTTP, in this order: the connection caps
 * count it or destroy it (limits/connections.ts); with server.proxyProtocol, its PROXY header is
 * read off it (proxy-protocol.ts); the plain lane reads its plain requests (http-lane.ts); and
 * node:http takes it, for good, with the bytes read before and not used put back.
 *
 * node:http takes a connection through the listener its server puts on 'connection': the pipeline
 * holds that listener and takes the server's 'connection' event itself, once, here. Closing the
 * server's connections (the drain, the shutdown) closes the lane's and the lingering ones too.
 *
 * Owns: the order of the stages and the hand-over between them. Refuses: what each stage reads
 * or decides (its own file's) and what a request means (http-request.ts).
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionCaps } from '../limits/connections.js';
import { Lane, type LaneOptions } from './http-lane.js';
import type { Lingering } from './linger.js';
import { type ProxyProtocolOptions, readProxyHeader } from './proxy-protocol.js';

export interface PipelineStages {
  caps: ConnectionCaps;
  /** server.proxyProtocol's check, or null when it is off (a restart key: config/restart.ts). */
  proxy: ProxyProtocolOptions | null;
  /** server.plainLane, read per connection: off, every connection is node:http's at once. */
  plainLane: () => boolean;
  /** The plain lane's settings; the rest (`idle`, `handOver`, `lingering`) are the pipeline's. */
  lane: Omit<LaneOptions, 'idle' | 'handOver' | 'lingering'>;
  /** Where a connection closed under bytes not read goes (linger.ts); the lane's too. */
  lingering: Lingering;
}

export class ConnectionPipeline {
  private readonly lane: Lane;
  /** node:http's own 'connection' listener: the last stage. */
  private readonly nodeHttp: ((socket: Socket) => void)[];

  constructor(
    private readonly server: Server,
    private readonly stages: PipelineStages,
  ) {
    this.nodeHttp = server.listeners('connection') as ((socket: Socket) => void)[];
    server.removeAllListeners('connection');
    server.on('connection', this.accept);
    this.lane = new Lane(server, {
      ...stages.lane,
      lingering: stages.lingering,
      // The lane tells the caps when a connection goes idle (they may close it to make room).
      idle: stages.caps.idle,
      handOver: (socket, rest) => handOn(socket, rest, this.toNodeHttp),
    });
  }

  /** A new connection: counted first, so a refused one is destroyed before any byte is read. */
  private readonly accept = (socket: Socket): void => {
    if (!this.stages.caps.admit(socket)) return;
    const proxy = this.stages.proxy;
    if (proxy === null) this.toReader(socket);
    else readProxyHeader(socket, proxy, this.afterHeader);
  };

  private readonly afterHeader = (socket: Socket, rest: Buffer): void => handOn(socket, rest, this.toReader);

  private readonly toReader = (socket: Socket): void => {
    if (this.stages.plainLane()) this.lane.open(socket);
    else handOn(socket, null, this.toNodeHttp);
  };

  private readonly toNodeHttp = (socket: Socket): void => {
    for (const l of this.nodeHttp) l.call(this.server, socket);
  };

  /** node:http's idle connections and the lane's (owing no answer) close: the drain. */
  closeIdle(): void {
    this.server.closeIdleConnections();
    this.lane.close(false);
  }

  /** Every connection closes now, lingering ones too: the end of the drain, a shutdown. */
  closeAll(): void {
    this.server.closeAllConnections();
    this.stages.lingering.destroyAll();
    this.lane.close(true);
  }
}

/** Hands `socket` to the next stage with `rest` (bytes read, not used) put back. */
function handOn(socket: Socket, rest: Buffer | null, next: (socket: Socket) => void): void {
  socket.pause();
  if (rest !== null && rest.length > 0) socket.unshift(rest);
  next(socket);
  socket.resume();
}
