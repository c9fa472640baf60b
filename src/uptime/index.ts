/**
 * The public uptime room (SPEC 12): it puts together the store (store.ts, a SQLite file or
 * memory), the probe loop that runs the two checks and records them (probe-loop.ts), maintenance
 * windows (maintenance.ts), incidents told by hand (incidents.ts) and uptime.webhooks (notify.ts),
 * and gives the report the page, its JSON and the badge show (report.ts, page.ts, badge.ts).
 * With a shared Redis every replica shows one page: one probes (the lease holder) and all share the store (shared.ts). The
 * clock is injected; tests drive probe() themselves.
 * Refuses: routing, health of upstreams for routing (upstream/), HTTP (server/http-request.ts asks
 * routes.ts for an answer).
 *
 * A store file that cannot be used at start (not a database, damaged, newer schema, unwritable)
 * or that fails later is never fatal: the error is logged naming `uptime.store`, the history
 * carries on in memory, and switchyard_uptime_store_persistent reads 0. The file is left as it is.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Metrics } from '../metrics/registry.js';
import { WINDOWS, fraction, buildReport, type UptimeReport } from './report.js';
import type { UptimePages } from './pages/routes.js';
import type { MaintenanceConfig } from '../config/maintenance-schema.js';
import { IncidentDesk } from './incidents.js';
import { Maintenance, type MaintenanceAdmin } from './maintenance.js';
import { storeWindows } from './store/maintenance-store.js';
import { openUptimeStore, storeWrite } from './store/store-open.js';
import { UptimeStore } from './store/store.js';
import { SharedUptime, changeCount } from './share/shared.js';
import type { SharedRedis } from '../replicas/shared-state.js';
import type { WebhookConfig } from '../config/uptime-schema.js';
import { pageContext, startWebhooks } from './notify/notify.js';
import type { Webhooks } from './notify/webhooks.js';
import type { SupportConfig } from '../config/support.js';
import { shownFraction } from './pages/figures.js';
import { ProbeLoop, type Clock, type ProbedFleet } from './probe-loop.js';

export interface UptimeSettings {
  enabled: boolean;
  probeIntervalMs: number;
  stallAfterSeconds: number;
  store: string | null;
  showUpstreams: boolean;
  title: string;
  /** uptime.maintenance; absent: none. */
  maintenance?: readonly MaintenanceConfig[];
  /** Where users report a problem (support.ts); null or absent: no such section. */
  support?: SupportConfig | null;
  publicUrl?: string | null;
  webhooks?: readonly WebhookConfig[];
}

/** Uptime's configuration: its own section, the chain, and the per-attempt limit of a node's answer. */
export interface UptimeConfig {
  chainId: number;
  uptime: UptimeSettings;
  /** routing.upstreamTimeoutMs: a probe waits at most min(this, the probe interval). */
  routing: { upstreamTimeoutMs: number };
}

/**
 * Uptime's whole input besides its configuration: what it reads of the fleet, its clock, and the
 * top-level redis (one page for every replica, share/shared.ts; null: this replica's own store).
 */
export interface UptimeInput {
  fleet: ProbedFleet;
  clock: Clock;
  redis: SharedRedis | null;
}

/** Where it reports: the process's metrics and logger. */
export interface UptimeReporting {
  metrics: Metrics;
  log: Logger;
}

/** The wall clock, for a process that runs the page for real (tests hand in their own). */
export const SYSTEM_CLOCK: Clock = { now: () => Date.now() };

export class Uptime implements UptimePages {
  private settings: UptimeSettings;
  private upstreamTimeoutMs: number;
  private readonly store: UptimeStore;
  /** Maintenance windows (maintenance.ts); subscribe() tells when one starts or ends. */
  readonly maintenance: Maintenance;
  /** The admin port's routes to the windows (server/admin-maintenance.ts). */
  readonly maintenanceAdmin: MaintenanceAdmin;
  /** Hand-opened incidents, updates, post-mortems, and who hears of incident changes (incidents.ts). */
  readonly desk: IncidentDesk;
  /** uptime.webhooks; `webhooks.send(event)` tells them anything else (queued, never waits). */
  readonly webhooks: Webhooks;
  private readonly loop: ProbeLoop;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly shared: SharedUptime | null;
  private closed = false;

  private readonly chainId: number;
  private readonly fleet: ProbedFleet;
  private readonly metrics: Metrics;

  constructor(config: UptimeConfig, input: UptimeInput, reporting: UptimeReporting) {
    const settings = config.uptime;
    this.settings = settings;
    this.chainId = config.chainId;
    this.upstreamTimeoutMs = config.routing.upstreamTimeoutMs;
    this.fleet = input.fleet;
    this.clock = input.clock;
    this.metrics = reporting.metrics;
    this.log = reporting.log.child({ room: 'uptime' });
    const deps = { chainId: this.chainId, metrics: this.metrics, log: this.log };
    const now = this.clock.now();
    // With Redis the shared image is the history: the local copy lives in memory (shared.ts).
    this.store = input.redis ? UptimeStore.memory() : openUptimeStore(settings.store, now, this.log);
    const keeper = storeWindows(
      this.store,
      (op) => this.write(op),
      () => this.clock.now(),
    );
    this.maintenance = new Maintenance(keeper, settings.maintenance ?? [], now);
    this.maintenanceAdmin = this.maintenance.admin(() => this.clock.now());
    this.desk = new IncidentDesk(
      this.store,
      this.clock,
      this.log,
      (op) => this.write(op),
      () => this.loop.told(),
    );
    this.webhooks = startWebhooks(settings, deps, this.desk, this.maintenance);
    this.loop = new ProbeLoop({
      chainId: this.chainId,
      fleet: this.fleet,
      metrics: this.metrics,
      log: this.log,
      clock: this.clock,
      store: this.store,
      maintenance: this.maintenance,
      desk: this.desk,
      settings: () => this.settings,
      upstreamTimeoutMs: () => this.upstreamTimeoutMs,
      write: (op) => this.write(op),
      lease: () => this.shared,
    });
    this.metrics.setUptimeStorePersistent(this.store.persistent);
    const host = { ...deps, store: this.store, probeIntervalMs: () => this.settings.probeIntervalMs };
    this.shared = input.redis
      ? new SharedUptime(input.redis, {
          ...host,
          loaded: () => this.loop.reload(this.shared?.prober ?? true),
        })
      : null;
  }

  /** Starts probing: the first probe once the fleet knows a head (or after a second), then every probeIntervalMs. */
  start(): void {
    void this.shared?.start();
    this.loop.start();
  }

  /**
   * A reloaded configuration: the next probe runs with it. `enabled` and `store` are read at start
   * (config/restart.ts keeps their running values).
   */
  apply(config: Pick<Config, 'uptime' | 'routing'>): void {
    this.settings = config.uptime;
    this.upstreamTimeoutMs = config.routing.upstreamTimeoutMs;
    this.loop.setStallAfter(config.uptime.stallAfterSeconds * 1000);
    this.maintenance.configure(config.uptime.maintenance ?? [], this.clock.now());
    this.webhooks.apply(config.uptime.webhooks ?? [], pageContext(config.uptime, this.chainId));
  }

  /** One probe now: both checks, the store, incidents, metrics, the report's summary (probe-loop.ts). */
  probe(): Promise<void> {
    return this.loop.probe();
  }

  /** A store operation that survives the file failing (store-open.ts); undefined: it failed in memory too. */
  private write<T>(op: () => T): T | undefined {
    const before = this.shared && changeCount(this.store);
    const out = storeWrite(this.store, op, this.log, this.metrics);
    if (this.shared && changeCount(this.store) !== before) this.shared.changed(this.loop.recording ? null : op);
    return out;
  }

  /** Refreshes the gauges that move with time (before a scrape). */
  collect(): void {
    this.loop.collect();
  }

  /** The report of SPEC 12; null until the first probe has finished. */
  report(): UptimeReport | null {
    const now = this.clock.now();
    const parts = this.loop.parts(now);
    if (parts === null) return null;
    return buildReport(this.settings, this.chainId, { ...parts, maintenance: this.maintenance.lines(now) }, this.fleet);
  }

  get title(): string {
    return this.settings.title;
  }

  get publicUrl(): string | null {
    return this.settings.publicUrl ?? null;
  }

  get support(): SupportConfig | null {
    return this.settings.support ?? null;
  }

  get probeIntervalMs(): number {
    return this.settings.probeIntervalMs;
  }

  /** The badge's figure under the page's data rule (figures.ts): null when the page says not enough data. */
  uptime30d(): number | null {
    const month = WINDOWS['30d'] / 1000;
    const summary = this.loop.summary;
    if (summary) return shownFraction(summary.uptime['30d'], summary.observedSeconds['30d'], month);
    const tally = this.write(() => this.store.tally(this.clock.now() - WINDOWS['30d']));
    if (tally === undefined) return null;
    const seen = Math.min(month, (tally.probes * this.settings.probeIntervalMs) / 1000);
    return shownFraction(fraction(tally), seen, month);
  }

  /**
   * Cordons an older version kept in this store (rows of name and JSON text), and how to empty
   * that table once they are kept elsewhere (replicas/cordon-keeper.ts carries them over).
   */
  oldCordons(): { rows: ReadonlyMap<string, string>; clear(): void } {
    return {
      rows: this.write(() => this.store.cordons()) ?? new Map(),
      clear: () => void this.write(() => this.store.clearCordons(this.clock.now())),
    };
  }

  /** For /status on the admin port. */
  status(): Record<string, unknown> {
    return {
      store: this.store.path,
      persistent: this.store.persistent,
      openIncidents: this.loop.openKinds(),
      bufferedProbes: this.store.pending,
      webhooks: this.webhooks.status(),
      shared: this.shared?.status() ?? null,
    };
  }

  /** Stops probing and writes what is buffered. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.loop.stop();
    await this.webhooks.close();
    await this.shared?.close();
    const now = this.clock.now();
    try {
      try {
        this.loop.finish(now);
      } finally {
        this.store.close(now);
      }
    } catch (err) {
      this.log.error({ store: this.store.path, err }, 'uptime.store: the last probes could not be written');
    }
  }
}
