/**
 * Connection caps (SPEC 6): client connections open at once on the JSON-RPC listeners, in all
 * (`server.maxConnections`) and per client IP (`server.maxConnectionsPerIp`, an IPv4 address or an
 * IPv6 /64, as the other per-IP limits count). Checked when a connection is accepted, before any
 * byte is read. At a cap, the idle keep-alive connection that has been idle longest is closed to
 * make room (at the per-IP cap, the longest idle of that IP), as Envoy's overload manager does: an
 * attacker holding idle connections from many addresses cannot lock new clients out. Only when
 * none is idle is the new connection closed at once (destroyed, never answered: an answer would
 * cost what the cap saves) and counted. A WebSocket keeps the connection it was upgraded on, so it
 * counts here for as long as it is open, and is never idle. A peer in `server.trustedProxies` (a
 * balancer) carries many clients: it counts only in the total.
 *
 * Idle: a keep-alive connection whose every request is answered and flushed, with no byte read
 * since (a request begun, whole or in part, makes it busy). The HTTP front says when a connection
 * became idle (`idle`, after each answer); bytes read since are seen from `socket.bytesRead` when a
 * place is needed, so reading a request costs nothing here.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Metrics } from '../metrics/registry.js';
import type { ConnectionRefusal } from '../metrics/labels.js';
import { limitKey } from '../net/cidrs.js';
import { IdleList, Link } from './idle-list.js';

/**
 * Idle-listed connections still writing an answer (a reader slower than its answer) passed over
 * for one new connection before it is refused: such a one moves to the newest end of the list, so
 * the next new connection looks further. Entries that read a request since they went idle are
 * dropped from the list on the way, which each answer paid for, so they are not counted.
 */
const MAX_PASSED_OVER = 16;

export interface ConnectionLimits {
  maxConnections: number;
  maxConnectionsPerIp: number;
}

export interface ConnectionPeers {
  /** The peer's address as the limits count it (`::ffff:a.b.c.d` as `a.b.c.d`). */
  address: (remote: string | undefined) => string;
  /** Whether the peer is a trusted proxy (read on every connection: reloads apply). */
  trusted: (address: string) => boolean;
}

/** One client IP (limit key) holding connections. */
interface Peer {
  readonly key: string;
  open: number;
  readonly idle: IdleList<Held>;
}

/** A connection the caps count. */
class Held {
  /** `socket.bytesRead` when it last became idle: any byte read since means a request begun. */
  readAt = 0;
  /** node:http's requests on it not yet answered (the plain lane keeps its own). */
  inFlight = 0;
  /** Counted in the caps; false once closed or evicted (its 'close' then counts nothing). */
  counted = true;
  readonly inAll = new Link<Held>(this);
  readonly inPeer: Link<Held> | null;

  constructor(
    readonly socket: Socket,
    readonly peer: Peer | null,
  ) {
    this.inPeer = peer === null ? null : new Link<Held>(this);
  }
}

/** A counted socket carries its Held: `idle` runs on every answered request, and finds it with no lookup. */
const HELD = Symbol('connection caps');
type CountedSocket = Socket & { [HELD]?: Held };

export class ConnectionCaps {
  private total = 0;
  private readonly peers = new Map<string, Peer>();
  /** Every idle connection, longest idle first. */
  private readonly idleAll = new IdleList<Held>();
  private readonly refused = { total: 0, ip: 0 };
  private readonly evicted = { total: 0, ip: 0 };

  constructor(
    /** Read on every connection: the app hands in the request path's, so a reload applies to the next one. */
    private readonly limits: ConnectionLimits,
    private readonly addresses: ConnectionPeers,
    private readonly metrics: Metrics,
  ) {
    metrics.setConnections(0);
  }

  /**
   * Follows one of node:http's requests on a counted connection to its answer (the plain lane's
   * say so through `idle`). Called before the request is handled: an answer it ends at once must
   * find the 'finish' listener.
   */
  follow(socket: Socket, res: ServerResponse): void {
    const h = (socket as CountedSocket)[HELD];
    if (h === undefined) return;
    h.inFlight++;
    res.once('finish', () => {
      h.inFlight--;
      // An answer that closes its connection leaves nothing idle; a pipelined request still owes one.
      if (h.inFlight === 0 && res.shouldKeepAlive) this.idle(socket);
    });
  }

  /**
   * `socket` answered every request it read and has no byte of another: it may be closed to make
   * room at a cap, longest idle first. Called after each answer (a bound method: the HTTP front
   * holds it).
   */
  readonly idle = (socket: Socket): void => {
    const h = (socket as CountedSocket)[HELD];
    if (h === undefined || !h.counted) return;
    h.readAt = socket.bytesRead;
    this.idleAll.push(h.inAll);
    if (h.inPeer !== null) h.peer!.idle.push(h.inPeer);
  };

  /**
   * Counts `socket` and keeps it, making room by closing an idle one at a cap, or destroys it. The
   * first stage of a new connection (server/connection-pipeline.ts): a refused one is destroyed
   * before HTTP or the PROXY protocol check reads from it.
   */
  admit(socket: Socket): boolean {
    const address = this.addresses.address(socket.remoteAddress);
    const key = this.addresses.trusted(address) ? null : limitKey(address);
    const peer = key === null ? null : (this.peers.get(key) ?? null);
    const why = this.makeRoom(peer);
    if (why !== null) {
      this.refused[why]++;
      this.metrics.recordConnectionRefused(why);
      socket.destroy();
      return false;
    }
    // Read again: closing the IP's only idle connection may have let its Peer go.
    const h = new Held(socket, key === null ? null : (this.peers.get(key) ?? this.newPeer(key)));
    (socket as CountedSocket)[HELD] = h;
    if (h.peer !== null) h.peer.open++;
    this.total++;
    this.metrics.setConnections(this.total);
    socket.once('close', () => this.release(h));
    return true;
  }

  /**
   * Null when a new connection of `peer` fits, closing an idle one if that is what it takes; else
   * the cap that refuses it. One closed connection frees a place in both caps, so at the per-IP
   * cap only that IP's idle ones are candidates. Over a cap (lowered by a reload) nothing is
   * closed: one close would not make room.
   */
  private makeRoom(peer: Peer | null): ConnectionRefusal | null {
    const { maxConnections, maxConnectionsPerIp } = this.limits;
    const atTotal = this.total >= maxConnections;
    if (peer !== null && peer.open >= maxConnectionsPerIp) {
      if (peer.open === maxConnectionsPerIp && this.total <= maxConnections && this.evict(peer.idle, 'ip')) return null;
      return atTotal ? 'total' : 'ip';
    }
    if (!atTotal) return null;
    return this.total === maxConnections && this.evict(this.idleAll, 'total') ? null : 'total';
  }

  /** Closes the longest idle connection on `list`; false when none is idle. */
  private evict(list: IdleList<Held>, cap: ConnectionRefusal): boolean {
    let passedOver = 0;
    for (let link = list.oldest; link !== null; link = list.oldest) {
      const h = link.value;
      const socket = h.socket;
      if (socket.destroyed) {
        // Closing already: its place is free now, before its 'close' event says so.
        this.release(h);
        return true;
      }
      if (socket.bytesRead !== h.readAt) {
        // A request begun since it went idle: busy until its answer lists it again.
        this.unlist(h);
        continue;
      }
      if (socket.writableLength > 0) {
        // Its last answer is still being written: not idle yet.
        if (++passedOver > MAX_PASSED_OVER) return false;
        list.push(link);
        continue;
      }
      this.release(h);
      socket.destroy();
      this.evicted[cap]++;
      this.metrics.recordConnectionEvicted(cap);
      return true;
    }
    return false;
  }

  private newPeer(key: string): Peer {
    const peer: Peer = { key, open: 0, idle: new IdleList<Held>() };
    this.peers.set(key, peer);
    return peer;
  }

  private unlist(h: Held): void {
    this.idleAll.remove(h.inAll);
    if (h.inPeer !== null) h.peer!.idle.remove(h.inPeer);
  }

  /** Gives back `h`'s places in the caps, once (at its close, or when it is evicted). */
  private release(h: Held): void {
    if (!h.counted) return;
    h.counted = false;
    this.unlist(h);
    this.total--;
    const peer = h.peer;
    if (peer !== null && --peer.open === 0) this.peers.delete(peer.key);
    this.metrics.setConnections(this.total);
  }

  /**
   * Figures for /status: connections open against both caps, client IPs holding some, connections
   * refused, and idle ones closed to make room, by cap.
   */
  stats(): {
    open: number;
    maxConnections: number;
    maxConnectionsPerIp: number;
    clients: number;
    refused: { total: number; ip: number };
    evicted: { total: number; ip: number };
  } {
    return {
      open: this.total,
      maxConnections: this.limits.maxConnections,
      maxConnectionsPerIp: this.limits.maxConnectionsPerIp,
      clients: this.peers.size,
      refused: { ...this.refused },
      evicted: { ...this.evicted },
    };
  }
}
