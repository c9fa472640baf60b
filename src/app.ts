/**
 * Composition root: builds the rooms from a Config and wires them. No logic of its own beyond
 * listening, reloading (swap what changed) and draining (SIGTERM). main.ts owns the process.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import { ConfigError, loadConfigFile } from './config/load.js';
import { ResponseCache } from './cache/index.js';
import { Concurrency } from './limits/concurrency.js';
import { ConnectionCaps, type ConnectionLimits } from './limits/connections.js';
import { fdBudget } from './limits/fd-limit.js';
import { RateLimits } from './limits/rate.js';
import { createLogger, redactUrls } from './log/logger.js';
import { MethodPolicy } from './methods/policy.js';
import { Metrics } from './metrics/registry.js';
import { Pipeline, type PipelineDeps } from './pipeline/index.js';
import { MethodTimeouts } from './routing/timeouts.js';
import { createAdminServer, isReady, type AdminDeps } from './server/admin.js';
import { ClientIp } from './server/client-ip.js';
import { Front, type FrontDeps } from './server/front.js';
import { createHttpServer, type HttpDeps } from './server/http.js';
import { acceptProxyProtocol } from './server/proxy-protocol.js';
import { Fleet, fleetOptions } from './upstream/fleet.js';
import { SharedHeads } from './replicas/shared-heads.js';
import { RedisConnections } from './redis/connections.js';
import { Uptime } from './uptime/index.js';
import { ChainFeed, type FeedSettings } from './subscriptions/chain.js';
import { PendingFeed } from './subscriptions/pending.js';
import { WsFront, type WsDeps } from './server/ws.js';
import { VERSION } from './version.js';
import { largeAnswers } from './upstream/answer-bytes.js';

export interface AppOptions {
  logger?: Logger;
  /** Process metrics are global to prom-client; tests running several apps in one process turn them off. */
  processMetrics?: boolean;
  /** The file the config came from: SIGHUP and POST /-/reload read it again. */
  configFile?: string;
  /** The routing clock (head times, breaker cooldowns, call deadlines); Date.now unless a test controls time. */
  now?: () => number;
  /**
   * The process's open-file limit (main.ts reads it); server.maxConnections is lowered to fit it,
   * with a warning. Absent or null: not checked.
   */
  fdLimit?: number | null;
}

/** What a reload from the file did: applied, or refused with the problems found. */
export type ReloadResult = { ok: true } | { ok: false; problems: string[] };

/**
 * Listens, or fails with an error naming the listener and its address. These are Switchyard's own
 * listen addresses, not upstream URLs, so they may be logged; the log scrubs `host:port` from
 * error text, hence "host port N".
 */
async function listenOn(server: Server, listener: 'http' | 'ws' | 'admin', host: string, port: number): Promise<void> {
  server.listen(port, host);
  try {
    await once(server, 'listening');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw Object.assign(new Error(`${listener} listener could not listen on ${host} port ${port}: ${code}`), { code, listener, host, port });
  }
}

export interface Ports {
  http: number;
  /** The separate WebSocket port (null when server.wsPort is null). */
  ws: number | null;
  admin: number;
}

export class App {
  private config: Config;
  private readonly configFile: string | undefined;
  /** SIGTERM received: /ready is 503 and answers carry Connection: close (the shutdown delay). */
  private stopping = false;
  /** After the shutdown delay: no new connections, requests on open ones get 503. */
  private draining = false;
  private readonly log: Logger;
  private readonly metrics: Metrics;
  private readonly fleet: Fleet;
  private readonly uptime: Uptime | null;
  /** Heads shared with the other replicas through the top-level redis (null without one). */
  private readonly sharedHeads: SharedHeads | null;
  /** One connection per Redis URL, shared by the cache, the rate limits and shared heads. */
  private readonly redis: RedisConnections;
  private readonly concurrency: Concurrency;
  private readonly connections: ConnectionCaps;
  private readonly fdLimit: number | null;
  private readonly cache: ResponseCache;
  private rateLimits: RateLimits;
  private readonly pipeline: Pipeline;
  private readonly front: Front;
  private httpDeps: HttpDeps;
  private readonly http: Server;
  private readonly admin: Server;
  private readonly wsHttp: Server | null;
  private readonly feed: ChainFeed;
  private readonly pending: PendingFeed;
  private readonly ws: WsFront;

  private constructor(config: Config, opts: AppOptions) {
    this.config = config;
    this.log = opts.logger ?? createLogger(config.log.level);
    this.configFile = opts.configFile;
    this.fdLimit = opts.fdLimit ?? null;
    this.metrics = new Metrics({ processMetrics: opts.processMetrics, version: VERSION, chainId: config.chainId });
    this.fleet = new Fleet(fleetOptions(config), config.upstreams, this.metrics, this.log, undefined, opts.now);
    this.concurrency = new Concurrency(config.server.maxInFlight, config.server.maxInFlightPerIp);
    largeAnswers.resize(config.routing.maxLargeAnswerBytes);
    this.redis = new RedisConnections(this.metrics, this.log.child({ room: 'redis' }), this.fleet.now);
    this.cache = new ResponseCache({ ...config.cache, chainId: config.chainId }, this.metrics, this.log, this.redis);
    this.rateLimits = new RateLimits(config.rateLimit, this.metrics, this.log, this.redis);
    this.fleet.on('reorg', () => this.cache.onReorg());
    this.sharedHeads =
      config.redis === null ? null : new SharedHeads(this.redis, config.redis, config.chainId, this.fleet, this.metrics, Math.min(config.routing.headPollMs, 1_000));
    this.uptime = config.uptime.enabled
      ? new Uptime(config.uptime, { chainId: config.chainId, fleet: this.fleet, metrics: this.metrics, log: this.log, upstreamTimeoutMs: config.routing.upstreamTimeoutMs })
      : null;
    this.pipeline = new Pipeline(this.pipelineDeps(config));
    this.front = new Front(this.frontDeps(config));
    this.httpDeps = this.makeHttpDeps(config);
    this.http = createHttpServer(() => this.httpDeps, config.server);
    this.admin = createAdminServer(() => this.adminDeps());
    this.feed = new ChainFeed(this.fleet, this.feedSettings(config), this.metrics, this.log.child({ room: 'subscriptions' }));
    this.pending = new PendingFeed(this.fleet, this.log.child({ room: 'subscriptions' }));
    this.ws = new WsFront(this.makeWsDeps(config));
    this.ws.attach(this.http);
    // The WebSocket port serves the same HTTP as server.port, and upgrades.
    this.wsHttp = config.server.wsPort === null ? null : createHttpServer(() => this.httpDeps, config.server);
    if (this.wsHttp) this.ws.attach(this.wsHttp);
    if (config.server.proxyProtocol) {
      for (const server of [this.http, this.wsHttp]) {
        if (server === null) continue;
        acceptProxyProtocol(server, {
          trusted: (peer) => this.httpDeps.clientIp.isTrusted(peer),
          timeoutMs: config.server.headersTimeoutMs,
          refused: (why) => this.metrics.recordProxyRefused(why),
        });
      }
    }
    // After the PROXY protocol check: the caps count every accepted connection, header or not.
    this.connections = new ConnectionCaps(
      this.connectionLimits(config),
      { address: (remote) => this.httpDeps.clientIp.resolve(remote, undefined), trusted: (ip) => this.httpDeps.clientIp.isTrusted(ip) },
      this.metrics,
    );
    this.connections.attach(this.http);
    if (this.wsHttp) this.connections.attach(this.wsHttp);
  }

  /** The connection caps in force: server.maxConnections lowered to what the open-file limit allows (warned). */
  private connectionLimits(c: Config): ConnectionLimits {
    const budget = fdBudget(
      c.server.maxConnections,
      c.upstreams.map((u) => u.maxConnections),
      this.fdLimit,
    );
    if (budget.short) {
      this.log.warn(
        { fdLimit: this.fdLimit, needed: budget.needed, maxConnections: c.server.maxConnections, cappedAt: budget.maxConnections },
        'open-file limit too low for server.maxConnections: client connections capped at cappedAt; raise the hard limit (systemd LimitNOFILE=, ulimit -n, docker --ulimit nofile=)',
      );
    }
    return { maxConnections: budget.maxConnections, maxConnectionsPerIp: c.server.maxConnectionsPerIp };
  }

  private feedSettings(c: Config): FeedSettings {
    return {
      backfillBlocks: c.subscriptions.backfillBlocks,
      reorgDepth: c.subscriptions.reorgDepth,
      maxAttempts: c.routing.maxAttempts,
      upstreamTimeoutMs: c.routing.upstreamTimeoutMs,
    };
  }

  /** Made after makeHttpDeps (at start and on reload): both fronts read client IPs with its ClientIp. */
  private makeWsDeps(c: Config): WsDeps {
    return {
      front: this.front,
      clientIp: this.httpDeps.clientIp,
      metrics: this.metrics,
      log: this.log,
      feed: this.feed,
      pending: this.pending,
      maxPerConnection: c.subscriptions.maxPerConnection,
      maxPerIp: c.subscriptions.maxPerIp,
      maxConnectionsPerIp: c.subscriptions.maxConnectionsPerIp,
      maxMessageBytes: c.subscriptions.maxMessageBytes,
      maxBufferBytes: c.subscriptions.maxBufferBytes,
      maxFramesInFlight: c.subscriptions.maxFramesInFlight,
      pingIntervalMs: c.subscriptions.pingIntervalMs,
      isDraining: () => this.draining,
      knowsKey: (key) => this.rateLimits.knowsKey(key),
      admitRequest: (ip) => this.rateLimits.admitRequest(ip),
    };
  }

  static async start(config: Config, opts: AppOptions = {}): Promise<App> {
    const app = new App(config, opts);
    app.fleet.start();
    app.sharedHeads?.start();
    app.feed.start();
    app.uptime?.start();
    await app.listen();
    return app;
  }

  private pipelineDeps(c: Config): PipelineDeps {
    return {
      fleet: this.fleet,
      metrics: this.metrics,
      policy: new MethodPolicy(c.methods),
      chainId: c.chainId,
      maxLagBlocks: c.routing.maxLagBlocks,
      recentBlocks: c.routing.recentBlocks,
      broadcastTransactions: c.routing.broadcastTransactions,
      cache: this.cache,
      maxAttempts: c.routing.maxAttempts,
      upstreamTimeoutMs: c.routing.upstreamTimeoutMs,
      logs: { maxBlockRange: c.routing.maxLogsBlockRange, split: c.routing.splitLogsRange, maxChunks: c.routing.maxLogsChunks, maxBytes: c.routing.maxLogsResponseBytes },
      sendSyncTimeoutMs: c.routing.sendRawTransactionSyncTimeoutMs,
      timeouts: new MethodTimeouts(c.routing.upstreamTimeoutMs, c.routing.methodTimeoutsMs),
      maxResponseBytes: c.server.maxResponseBytes,
    };
  }

  private frontDeps(c: Config): FrontDeps {
    return {
      pipeline: this.pipeline,
      concurrency: this.concurrency,
      rateLimits: this.rateLimits,
      metrics: this.metrics,
      maxBatchSize: c.server.maxBatchSize,
      requestTimeoutMs: c.server.requestTimeoutMs,
    };
  }

  private adminDeps(): AdminDeps {
    return {
      fleet: this.fleet,
      metrics: this.metrics,
      maxLagBlocks: this.config.routing.maxLagBlocks,
      isDraining: () => this.stopping,
      version: VERSION,
      extraStatus: () => ({
        inFlightCalls: this.concurrency.inFlight,
        limits: { rate: this.rateLimits.stats(), concurrency: this.concurrency.stats(), connections: this.connections.stats() },
        cache: this.cache.stats(),
        uptime: this.uptime?.status() ?? null,
        websocket: this.ws.status(),
      }),
      reload: () => this.reloadFile(),
      host: this.config.admin.host,
      allowedHosts: this.config.admin.allowedHosts,
      collect: () => {
        this.cache.collect();
        this.uptime?.collect();
        this.metrics.setInFlight(this.concurrency.inFlight);
        this.metrics.setMaxLagBlocks(this.config.routing.maxLagBlocks);
      },
    };
  }

  private makeHttpDeps(c: Config): HttpDeps {
    return {
      front: this.front,
      clientIp: new ClientIp(c.server.trustedProxies),
      metrics: this.metrics,
      log: this.log,
      maxBodyBytes: c.server.maxBodyBytes,
      corsOrigins: c.server.cors.origins,
      chainId: c.chainId,
      version: VERSION,
      isReady: () => this.ready,
      isDraining: () => this.draining,
      closeConnections: () => this.stopping,
      knowsKey: (key) => this.rateLimits.knowsKey(key),
      keyName: (key) => this.rateLimits.keyName(key),
      admitRequest: (ip) => this.rateLimits.admitRequest(ip),
      logRequests: c.log.requests,
      gzipMinBytes: c.server.gzipMinBytes,
      uptime: this.uptime,
    };
  }

  private async listen(): Promise<void> {
    const c = this.config;
    await Promise.all([
      listenOn(this.http, 'http', c.server.host, c.server.port),
      listenOn(this.admin, 'admin', c.admin.host, c.admin.port),
      ...(this.wsHttp ? [listenOn(this.wsHttp, 'ws', c.server.host, c.server.wsPort ?? 0)] : []),
    ]);
    // `websocket`, not `ws`: the log redacts every `ws` key (upstream WebSocket URLs).
    const { http, admin, ws } = this.ports;
    this.log.info({ ports: { http, admin, websocket: ws }, chainId: c.chainId, upstreams: c.upstreams.map((u) => u.name) }, 'switchyard listening');
  }

  get ports(): Ports {
    return {
      http: (this.http.address() as AddressInfo).port,
      admin: (this.admin.address() as AddressInfo).port,
      ws: this.wsHttp ? (this.wsHttp.address() as AddressInfo).port : null,
    };
  }

  get ready(): boolean {
    return isReady({ fleet: this.fleet, maxLagBlocks: this.config.routing.maxLagBlocks, isDraining: () => this.stopping });
  }

  /**
   * SIGHUP and POST /-/reload: reads the config file again and applies it, or refuses it (logged,
   * counted in switchyard_config_reloads_total) and keeps the running configuration.
   */
  async reloadFile(): Promise<ReloadResult> {
    if (this.configFile === undefined) return { ok: false, problems: ['no configuration file to reload: started without one'] };
    let next: Config;
    try {
      next = loadConfigFile(this.configFile);
    } catch (err) {
      const problems = err instanceof ConfigError ? err.problems : [(err as Error).message];
      this.metrics.recordReload(false);
      this.log.error({ problems: problems.map(redactUrls) }, 'new configuration refused; the running configuration stays');
      return { ok: false, problems };
    }
    try {
      await this.reload(next);
    } catch (err) {
      this.metrics.recordReload(false);
      this.log.error({ err }, 'reload failed; the running configuration stays');
      // A node's error may quote the address it failed to reach: the answer is as scrubbed as the log.
      return { ok: false, problems: [redactUrls((err as Error).message)] };
    }
    this.metrics.recordReload(true);
    return { ok: true };
  }

  /**
   * Applies a new configuration without dropping in-flight calls. Listening addresses, the cache
   * and the chain id are fixed for the life of the process; a change to them is logged and ignored.
   * The log level and the HTTP timeouts (of server.port and server.wsPort) apply at once (Node
   * reads the server's timeouts per connection, so open keep-alive connections keep theirs).
   * All or nothing: what can throw (upstream clients, rate limiters) is built before anything
   * running changes, so a reload that fails leaves the whole running configuration as it was.
   */
  async reload(next: Config): Promise<void> {
    const prev = this.config;
    const upstreams = this.fleet.prepare(fleetOptions(next), next.upstreams);
    const rateLimitsChanged = JSON.stringify(prev.rateLimit) !== JSON.stringify(next.rateLimit);
    let rateLimits = this.rateLimits;
    let pipelineDeps: PipelineDeps;
    let frontDeps: FrontDeps;
    let httpDeps: HttpDeps;
    let connectionLimits: ConnectionLimits;
    try {
      if (rateLimitsChanged) rateLimits = new RateLimits(next.rateLimit, this.metrics, this.log, this.redis);
      pipelineDeps = this.pipelineDeps(next);
      frontDeps = { ...this.frontDeps(next), rateLimits };
      httpDeps = this.makeHttpDeps(next);
      connectionLimits = this.connectionLimits(next);
    } catch (err) {
      upstreams.discard();
      if (rateLimits !== this.rateLimits) void rateLimits.close();
      throw err;
    }
    // From here on nothing throws: the new configuration goes in whole.
    const fixed: string[] = [];
    if (JSON.stringify(prev.cache) !== JSON.stringify(next.cache)) fixed.push('cache');
    if (prev.server.port !== next.server.port || prev.server.host !== next.server.host || prev.server.wsPort !== next.server.wsPort) fixed.push('server.host/port/wsPort');
    if (prev.server.proxyProtocol !== next.server.proxyProtocol) fixed.push('server.proxyProtocol');
    if (prev.admin.port !== next.admin.port || prev.admin.host !== next.admin.host) fixed.push('admin');
    if (prev.chainId !== next.chainId) fixed.push('chainId');
    if (prev.redis !== next.redis) fixed.push('redis');
    if (prev.uptime.enabled !== next.uptime.enabled || prev.uptime.store !== next.uptime.store) fixed.push('uptime.enabled/store');
    if (fixed.length > 0) this.log.warn({ settings: fixed }, 'these settings cannot change on reload; restart to apply them');
    if (prev.log.level !== next.log.level) this.log.level = next.log.level;
    // The wsPort listener serves the same JSON-RPC over HTTP, so it takes the same timeouts.
    for (const server of [this.http, this.wsHttp]) {
      if (server === null) continue;
      server.headersTimeout = next.server.headersTimeoutMs;
      server.requestTimeout = next.server.headersTimeoutMs + next.server.bodyTimeoutMs;
      server.keepAliveTimeout = next.server.keepAliveTimeoutMs;
    }
    this.uptime?.update(next.uptime);
    this.config = next;
    this.concurrency.update(next.server.maxInFlight, next.server.maxInFlightPerIp);
    this.connections.update(connectionLimits);
    largeAnswers.resize(next.routing.maxLargeAnswerBytes);
    if (rateLimits !== this.rateLimits) {
      const old = this.rateLimits;
      this.rateLimits = rateLimits;
      void old.close();
    }
    this.pipeline.update(pipelineDeps);
    this.front.update(frontDeps);
    this.httpDeps = httpDeps;
    this.feed.update(this.feedSettings(next));
    this.ws.update(this.makeWsDeps(next));
    const retired = upstreams.apply();
    this.pending.reconfigure();
    const changed = Object.keys(next).filter((k) => JSON.stringify(prev[k as keyof Config]) !== JSON.stringify(next[k as keyof Config]));
    this.log.debug({ changed }, 'reload: sections changed');
    this.log.info({ upstreams: next.upstreams.map((u) => u.name) }, 'configuration reloaded');
    await retired;
  }

  /**
   * SIGTERM (SPEC 9): /ready turns 503 at once and for server.shutdownDelayMs calls are still
   * served, each answer with Connection: close, so a balancer checking /ready takes this replica out
   * of rotation while nothing is refused. Then the listener closes, idle connections are closed,
   * requests on open connections get 503, and in-flight calls finish within server.shutdownGraceMs:
   * WebSocket frames already received are answered and written, later ones refused, then every
   * socket is closed with 1001.
   */
  async drain(opts: { delay?: boolean } = {}): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const { shutdownGraceMs: graceMs } = this.config.server;
    const delayMs = opts.delay === false ? 0 : this.config.server.shutdownDelayMs;
    this.log.info({ delayMs, graceMs }, 'shutting down: unready, still serving for the shutdown delay');
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    this.draining = true;
    this.log.info({ graceMs, inFlightCalls: this.concurrency.inFlight }, 'draining');
    const closed = new Promise<void>((resolve) => this.http.close(() => resolve()));
    this.http.closeIdleConnections();
    this.wsHttp?.close();
    this.wsHttp?.closeIdleConnections();
    const deadline = Date.now() + graceMs;
    // WebSocket frames already received are answered before their sockets get 1001 (SPEC 9).
    await this.ws.close(1001, deadline);
    while (this.concurrency.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    this.http.closeAllConnections();
    await closed;
    await this.close();
  }

  async close(): Promise<void> {
    this.stopping = true;
    this.draining = true;
    this.feed.stop();
    this.pending.stop();
    await this.ws.close(1001);
    this.http.closeAllConnections();
    if (this.wsHttp) {
      this.wsHttp.closeAllConnections();
      await new Promise<void>((r) => this.wsHttp!.close(() => r()));
    }
    await Promise.all([
      new Promise<void>((r) => this.http.close(() => r())),
      new Promise<void>((r) => {
        this.admin.closeAllConnections();
        this.admin.close(() => r());
      }),
    ]);
    await this.uptime?.close();
    await this.sharedHeads?.close();
    await this.fleet.stop();
    await this.cache.close();
    await this.rateLimits.close();
    await this.redis.close();
  }
}
