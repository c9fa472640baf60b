/**
 * Client connections: those open on the JSON-RPC listeners, those refused by a cap or by the PROXY
 * protocol check, idle ones closed to make room at a cap, and the WebSocket ones with their
 * subscriptions, notifications and closes.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import {
  CONNECTION_REFUSALS,
  SUBSCRIPTION_KINDS,
  WS_CLOSE_REASONS,
  type ConnectionRefusal,
  type ProxyRefusal,
  type SubscriptionKind as Kind,
  type WsCloseReason,
} from './labels.js';

export class ConnectionMetrics {
  private readonly proxyRefused: Counter;
  private readonly connections: Gauge;
  private readonly connectionsRefused: Counter;
  private readonly connectionsEvicted: Counter;
  private readonly wsConnections: Gauge;
  private readonly wsSubscriptions: Gauge;
  private readonly wsNotifications: Counter;
  private readonly wsCloses: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.wsConnections = new Gauge({
      name: 'switchyard_ws_connections',
      help: 'Open WebSocket connections',
      registers,
    });
    this.wsSubscriptions = new Gauge({
      name: 'switchyard_ws_subscriptions',
      help: 'Active subscriptions, by kind (newHeads, logs, newPendingTransactions)',
      labelNames: ['kind'],
      registers,
    });
    this.wsNotifications = new Counter({
      name: 'switchyard_ws_notifications_total',
      help: 'Subscription notifications sent to WebSocket clients, by kind',
      labelNames: ['kind'],
      registers,
    });
    this.proxyRefused = new Counter({
      name: 'switchyard_proxy_protocol_refused_total',
      help: 'Connections refused by server.proxyProtocol, by reason (untrusted_header, bad_header, timeout)',
      labelNames: ['reason'],
      registers,
    });
    this.connections = new Gauge({
      name: 'switchyard_connections',
      help: 'Client connections open on server.port and server.wsPort together, WebSockets included',
      registers,
    });
    this.connectionsRefused = new Counter({
      name: 'switchyard_connections_refused_total',
      help: 'Connections closed at once because a cap was reached, by reason (total: server.maxConnections, ip: server.maxConnectionsPerIp)',
      labelNames: ['reason'],
      registers,
    });
    this.connectionsEvicted = new Counter({
      name: 'switchyard_connections_evicted_total',
      help: 'Idle keep-alive connections closed to make room for a new connection at a cap, longest idle first, by reason (total: server.maxConnections, ip: server.maxConnectionsPerIp)',
      labelNames: ['reason'],
      registers,
    });
    this.wsCloses = new Counter({
      name: 'switchyard_ws_closes_total',
      help: 'WebSocket connections closed by Switchyard, by reason (slow_reader, too_large, dead_peer, shutdown)',
      labelNames: ['reason'],
      registers,
    });
    for (const kind of SUBSCRIPTION_KINDS) {
      this.wsSubscriptions.set({ kind }, 0);
      this.wsNotifications.inc({ kind }, 0);
    }
    for (const reason of WS_CLOSE_REASONS) this.wsCloses.inc({ reason }, 0);
    for (const reason of CONNECTION_REFUSALS) {
      this.connectionsRefused.inc({ reason }, 0);
      this.connectionsEvicted.inc({ reason }, 0);
    }
  }

  setConnections(open: number): void {
    this.connections.set(open);
  }

  recordConnectionRefused(reason: ConnectionRefusal): void {
    this.connectionsRefused.inc({ reason });
  }

  recordConnectionEvicted(reason: ConnectionRefusal): void {
    this.connectionsEvicted.inc({ reason });
  }

  recordProxyRefused(reason: ProxyRefusal): void {
    this.proxyRefused.inc({ reason });
  }

  setWsConnections(open: number): void {
    this.wsConnections.set(open);
  }

  recordWsClose(reason: WsCloseReason, connections = 1): void {
    this.wsCloses.inc({ reason }, connections);
  }

  recordSubscribed(kind: Kind): void {
    this.wsSubscriptions.inc({ kind });
  }

  recordUnsubscribed(kind: Kind): void {
    this.wsSubscriptions.dec({ kind });
  }

  recordNotifications(kind: Kind, notifications = 1): void {
    this.wsNotifications.inc({ kind }, notifications);
  }
}
