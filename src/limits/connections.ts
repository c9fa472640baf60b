/**
 * Connection caps (SPEC 6): client connections open at once on the JSON-RPC listeners, in all
 * (`server.maxConnections`) and per client IP (`server.maxConnectionsPerIp`, an IPv4 address or an
 * IPv6 /64, as the other per-IP limits count). Checked when a connection is accepted, before any
 * byte is read: past either cap it is closed at once (destroyed, never answered: an answer would
 * cost what the cap saves) and counted. A WebSocket keeps the connection it was upgraded on, so it
 * counts here for as long as it is open. A peer in `server.trustedProxies` (a balancer) carries
 * many clients: it counts only in the total.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Metrics } from '../metrics/registry.js';
import { limitKey } from '../net/cidrs.js';
import { KeyCounts } from './key-counts.js';

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

export class ConnectionCaps {
  private total = 0;
  private readonly perIp = new KeyCounts();
  private readonly refused = { total: 0, ip: 0 };

  constructor(
    /** Read on every connection: the app hands in the request path's, so a reload applies to the next one. */
    private readonly limits: ConnectionLimits,
    private readonly peers: ConnectionPeers,
    private readonly metrics: Metrics,
  ) {
    metrics.setConnections(0);
  }

  /**
   * Counts `server`'s connections. Its listener runs first, so a refused socket is destroyed
   * before HTTP (or the PROXY protocol check) reads from it; attach after acceptProxyProtocol.
   */
  attach(server: Server): void {
    server.prependListener('connection', (socket: Socket) => this.admit(socket));
  }

  /** Counts `socket` and keeps it, or destroys it when a cap is reached. */
  admit(socket: Socket): boolean {
    const address = this.peers.address(socket.remoteAddress);
    const key = this.peers.trusted(address) ? null : limitKey(address);
    const why =
      this.total >= this.limits.maxConnections
        ? 'total'
        : key !== null && !this.perIp.take(key, this.limits.maxConnectionsPerIp)
          ? 'ip'
          : null;
    if (why !== null) {
      this.refused[why]++;
      this.metrics.recordConnectionRefused(why);
      socket.destroy();
      return false;
    }
    this.total++;
    this.metrics.setConnections(this.total);
    socket.once('close', () => {
      this.total--;
      if (key !== null) this.perIp.give(key);
      this.metrics.setConnections(this.total);
    });
    return true;
  }

  /** Figures for /status: connections open against both caps, client IPs holding some, connections refused. */
  stats(): {
    open: number;
    maxConnections: number;
    maxConnectionsPerIp: number;
    clients: number;
    refused: { total: number; ip: number };
  } {
    return { open: this.total, ...this.limits, clients: this.perIp.size, refused: { ...this.refused } };
  }
}
