/**
 * Composition root: builds the rooms from a Config and wires them. main.ts owns the process.
 * What a request reads from the configuration is one frozen request path (server/path.ts); a
 * reload builds a new one and swaps `path`, and each long-lived room applies the new config in
 * its own `apply`. Options read only at start are config/restart.ts's RESTART_KEYS.
 */
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import { ConfigError, loadConfigFile } from './config/load.js';
import { changedSections, reloadedConfig } from './config/restart.js';
import { ResponseCache } from './cache/index.js';
import { Budgets } from './limits/budget.js';
import { Concurrency } from './limits/concurrency.js';
import { createLogger, redactUrls } from './log/logger.js';
import { Metrics } from './metrics/registry.js';
import { isReady, type AdminDeps } from './server/admin.js';
import { FirstRound } from './upstream/first-round.js';
import {
  applyTimeouts,
  closeListeners,
  createListeners,
  drainListeners,
  listen,
  portsOf,
  type Listeners,
  type Ports,
} from './server/listeners.js';
import { buildRequestPath, discardPath, type PathParts, type RequestPath } from './server/path.js';
import { Fleet } from './upstream/fleet.js';
import { fleetOptions } from './upstream/membership.js';
import { Discovery, discoverySettings } from './upstream/discovery.js';
import { SharedHeads } from './replicas/shared-heads.js';
import { SharedRedis } from './replicas/shared-state.js';
import { cordonFileBeside, keepCordons } from './replicas/cordon-keeper.js';
import { Cordons } from './upstream/cordons.js';
import { RedisConnections } from './redis/connections.js';
import { SYSTEM_CLOCK, Uptime } from './uptime/index.js';
import { ChainFeed, feedSettings } from './subscriptions/chain.js';
import { PendingFeed } from './subscriptions/pending.js';
import { VERSION } from './version.js';
import { largeAnswers } from './upstream/answer-bytes.js';
import { Tracing } from './tracing/index.js';
import { QuorumGate } from './routing/quorum-gate.js';
import { HedgeFigures } from './routing/hedge-figures.js';
import { ShadowReads } from './routing/shadow.js';

export type { Ports } from './server/listeners.js';

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

/** The long-lived rooms: they outlive every reload and apply a new config themselves. */
interface Rooms {
  log: Logger;
  metrics: Metrics;
  fleet: Fleet;
  /** What each upstream can serve, probed (upstreams[].discover). */
  discovery: Discovery;
  concurrency: Concurrency;
  /** One connection per Redis URL, shared by the cache, the rate limits and shared heads. */
  redis: RedisConnections;
  cache: ResponseCache;
  /** Heads shared with the other replicas through the top-level redis (null without one). */
  sharedHeads: SharedHeads | null;
  uptime: Uptime | null;
  /** Cordoned upstreams, kept in the top-level redis, else a file beside the uptime store, else memory. */
  cordons: Cordons;
  feed: ChainFeed;
  pending: PendingFeed;
  /** The span exporter (tracing.enabled at start); null when tracing is off. */
  tracing: Tracing | null;
  shadows: ShadowReads;
  quorum: QuorumGate;
  /** Hedged reads' figures (routing/hedge-figures.ts), kept across reloads. */
  hedges: HedgeFigures;
}

function buildRooms(config: Config, opts: AppOptions): Rooms {
  const log = opts.logger ?? createLogger(config.log.level);
  const metrics = new Metrics({ processMetrics: opts.processMetrics, version: VERSION, chainId: config.chainId });
  const redis = new RedisConnections(metrics, log.child({ room: 'redis' }), opts.now);
  const budgets = new Budgets(config.redis, config.chainId, redis, metrics);
  const fleet = new Fleet(fleetOptions(config), config.upstreams, metrics, log, undefined, opts.now, budgets.of);
  largeAnswers.resize(config.routing.maxLargeAnswerBytes);
  const cache = new ResponseCache({ ...config.cache, chainId: config.chainId }, metrics, log, redis);
  fleet.on('reorg', () => cache.onReorg());
  const sharedHeadsMs = Math.min(config.routing.headPollMs, 1_000);
  // Every state the replicas share (heads, cordons, the uptime page) goes through the top-level redis this way.
  const shared = config.redis === null ? null : new SharedRedis(redis, config.redis, config.chainId);
  // Uptime's whole input: the fleet view, a clock and the top-level redis (one page for every replica).
  const uptime = config.uptime.enabled
    ? new Uptime(config, { fleet, clock: SYSTEM_CLOCK, redis: shared }, { metrics, log })
    : null;
  // Without redis, cordons get a file beside the uptime store's (where the store kept them before).
  const cordonFile = uptime !== null && config.uptime.store !== null ? cordonFileBeside(config.uptime.store) : null;
  const keeper = keepCordons({
    redis: shared,
    names: () => fleet.upstreams.map((u) => u.name),
    file: cordonFile,
    carried: cordonFile === null ? null : (uptime?.oldCordons() ?? null),
    metrics,
    log: log.child({ room: 'cordons' }),
  });
  return {
    log,
    metrics,
    fleet,
    discovery: new Discovery(fleet, discoverySettings(config), log.child({ room: 'discovery' }), opts.now),
    concurrency: new Concurrency(config.server.maxInFlight, config.server.maxInFlightPerIp),
    redis,
    cache,
    sharedHeads: shared === null ? null : new SharedHeads(shared, fleet, metrics, sharedHeadsMs),
    uptime,
    cordons: new Cordons(fleet, keeper, metrics, log.child({ room: 'cordons' })),
    feed: new ChainFeed(fleet, feedSettings(config), metrics, log.child({ room: 'subscriptions' })),
    pending: new PendingFeed(fleet, log.child({ room: 'subscriptions' })),
    tracing: config.tracing.enabled ? new Tracing(config.tracing, metrics, log.child({ room: 'tracing' })) : null,
    shadows: new ShadowReads(fleet, metrics, log.child({ room: 'shadow' })),
    quorum: new QuorumGate(),
    hedges: new HedgeFigures(),
  };
}

export class App {
  /** The request path in force: each HTTP request and WebSocket frame reads it once; a reload swaps it. */
  private path: RequestPath;
  private readonly configFile: string | undefined;
  /** SIGTERM received: /ready is 503 and answers carry Connection: close (the shutdown delay). */
  private stopping = false;
  /** Until each node answered or failed its first poll (or a bound passed), /ready is 503. */
  private firstRound: FirstRound | null = null;
  /** After the shutdown delay: no new connections, requests on open ones get 503. */
  private draining = false;
  private readonly rooms: Rooms;
  private readonly parts: PathParts;
  private readonly listeners: Listeners;
  /** The admin port's log (refused writes). */
  private readonly adminLog: Logger;

  private constructor(config: Config, opts: AppOptions) {
    this.configFile = opts.configFile;
    this.rooms = buildRooms(config, opts);
    this.adminLog = this.rooms.log.child({ room: 'admin' });
    this.parts = {
      ...this.rooms,
      fdLimit: opts.fdLimit ?? null,
      isReady: () => this.ready,
      isDraining: () => this.draining,
      closeConnections: () => this.stopping,
    };
    this.path = buildRequestPath(config, this.parts);
    this.listeners = createListeners(
      () => this.path,
      this.rooms.metrics,
      () => this.adminDeps(),
    );
  }

  static async start(config: Config, opts: AppOptions = {}): Promise<App> {
    const app = new App(config, opts);
    const { fleet, discovery, sharedHeads, feed, uptime, cordons, log } = app.rooms;
    fleet.start();
    app.firstRound = new FirstRound(fleet, config.routing);
    discovery.start();
    // Before listening: a node cordoned before this replica started gets no call from it.
    await cordons.start();
    sharedHeads?.start();
    feed.start();
    uptime?.start();
    await listen(app.listeners, config);
    // `websocket`, not `ws`: the log redacts every `ws` key (upstream WebSocket URLs).
    const { http, admin, ws } = app.ports;
    log.info(
      {
        ports: { http, admin, websocket: ws },
        chainId: config.chainId,
        upstreams: config.upstreams.map((u) => u.name),
      },
      'switchyard listening',
    );
    return app;
  }

  private adminDeps(): AdminDeps {
    const { fleet, metrics, concurrency, cache, uptime } = this.rooms;
    const { config, rateLimits } = this.path;
    return {
      fleet,
      metrics,
      maxLagBlocks: config.routing.maxLagBlocks,
      isDraining: () => this.stopping,
      isStarting: () => this.starting,
      version: VERSION,
      extraStatus: () => ({
        inFlightCalls: concurrency.inFlight,
        limits: {
          rate: rateLimits.stats(),
          concurrency: concurrency.stats(),
          connections: this.listeners.connections.stats(),
        },
        cache: cache.stats(),
        uptime: uptime?.status() ?? null,
        websocket: this.listeners.ws.status(),
        // Hedged reads' token bucket (routing/hedge-figures.ts): hedges that may go out in a row now.
        hedge: { tokens: this.rooms.hedges.tokensLeft },
      }),
      reload: () => this.reloadFile(),
      hedgesWon: (u) => this.rooms.hedges.wonBy(u),
      cordons: this.rooms.cordons,
      maintenance: uptime?.maintenanceAdmin,
      incidents: uptime?.desk,
      host: config.admin.host,
      allowedHosts: config.admin.allowedHosts,
      token: config.admin.token,
      readyRequiresUpstream: config.admin.readyRequiresUpstream,
      log: this.adminLog,
      collect: () => {
        cache.collect();
        uptime?.collect();
        metrics.setBudgetsRemaining(fleet.upstreams.flatMap((u) => (u.budget ? [[u.name, u.budget.remaining()]] : [])));
        metrics.setInFlight(concurrency.inFlight);
        metrics.setMaxLagBlocks(config.routing.maxLagBlocks);
      },
    };
  }

  private get starting(): boolean {
    return !(this.firstRound?.done ?? false);
  }

  get ports(): Ports {
    return portsOf(this.listeners);
  }

  get ready(): boolean {
    return isReady({
      fleet: this.rooms.fleet,
      maxLagBlocks: this.path.config.routing.maxLagBlocks,
      isDraining: () => this.stopping,
      isStarting: () => this.starting,
      readyRequiresUpstream: this.path.config.admin.readyRequiresUpstream,
    });
  }

  /**
   * SIGHUP and POST /-/reload: reads the config file again and applies it, or refuses it (logged,
   * counted in switchyard_config_reloads_total) and keeps the running configuration.
   */
  async reloadFile(): Promise<ReloadResult> {
    const { metrics, log } = this.rooms;
    if (this.configFile === undefined)
      return { ok: false, problems: ['no configuration file to reload: started without one'] };
    let next: Config;
    try {
      next = loadConfigFile(this.configFile);
    } catch (err) {
      const problems = err instanceof ConfigError ? err.problems : [(err as Error).message];
      metrics.recordReload(false);
      log.error({ problems: problems.map(redactUrls) }, 'new configuration refused; the running configuration stays');
      return { ok: false, problems };
    }
    try {
      await this.reload(next);
    } catch (err) {
      metrics.recordReload(false);
      log.error({ err }, 'reload failed; the running configuration stays');
      // A node's error may quote the address it failed to reach: the answer is as scrubbed as the log.
      return { ok: false, problems: [redactUrls((err as Error).message)] };
    }
    metrics.recordReload(true);
    return { ok: true };
  }

  /**
   * Applies a new configuration without dropping in-flight calls or WebSocket connections: a new
   * request path is built and swapped in, and each long-lived room applies the config. Restart
   * keys keep their running values (a warning names those the file changed). All or nothing:
   * what can throw (rate limiters, upstream clients) is built before anything running changes.
   * Resolves once the upstreams the reload removed have finished their calls and closed.
   */
  async reload(file: Config): Promise<void> {
    const { log, fleet, discovery, concurrency, feed, pending, uptime } = this.rooms;
    const running = this.path;
    const { config: next, kept } = reloadedConfig(running.config, file);
    const path = buildRequestPath(next, this.parts, running);
    let retired: Promise<void>;
    try {
      retired = fleet.apply(next);
    } catch (err) {
      discardPath(path, running);
      throw err;
    }
    // From here on nothing throws: the new configuration goes in whole.
    if (kept.length > 0) log.warn({ settings: kept }, 'these settings cannot change on reload; restart to apply them');
    this.path = path;
    if (path.rateLimits !== running.rateLimits) void running.rateLimits.close();
    if (running.config.log.level !== next.log.level) log.level = next.log.level;
    applyTimeouts(this.listeners, next.server);
    concurrency.apply(next.server);
    largeAnswers.resize(next.routing.maxLargeAnswerBytes);
    discovery.apply(discoverySettings(next));
    feed.apply(next);
    pending.apply(next);
    uptime?.apply(next);
    log.debug({ changed: changedSections(running.config, next) }, 'reload: sections changed');
    log.info({ upstreams: next.upstreams.map((u) => u.name) }, 'configuration reloaded');
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
    const { log, concurrency } = this.rooms;
    const { shutdownGraceMs: graceMs, shutdownDelayMs } = this.path.config.server;
    const delayMs = opts.delay === false ? 0 : shutdownDelayMs;
    log.info({ delayMs, graceMs }, 'shutting down: unready, still serving for the shutdown delay');
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    this.draining = true;
    log.info({ graceMs, inFlightCalls: concurrency.inFlight }, 'draining');
    await drainListeners(this.listeners, concurrency, Date.now() + graceMs);
    await this.close();
  }

  async close(): Promise<void> {
    this.stopping = true;
    this.draining = true;
    const { feed, pending, uptime, sharedHeads, cordons, fleet, discovery, cache, redis, shadows } = this.rooms;
    this.firstRound?.stop();
    shadows.stop();
    feed.stop();
    discovery.stop();
    pending.stop();
    await closeListeners(this.listeners);
    await cordons.close();
    await uptime?.close();
    await sharedHeads?.close();
    await fleet.stop();
    await cache.close();
    await this.path.rateLimits.close();
    await redis.close();
    // Last: the spans of the calls drained above are sent, within Tracing.close's bound.
    await this.rooms.tracing?.close();
  }
}
