/**
 * The public uptime room (SPEC 12): every uptime.probeIntervalMs it runs the two checks
 * (checks.ts), opens and closes incidents (tracker.ts), keeps results and incidents in the store
 * (store.ts, a SQLite file or memory) and makes the report the page, its JSON and the badge show
 * (report.ts, page.ts, badge.ts). Maintenance windows (maintenance.ts) excuse the failures inside
 * them; each probe's latency feeds the hourly chart and the store's days the 90 daily bars
 * (history.ts). Without a shared Redis it also keeps the cordons in its store (cordonKeeper); with
 * one, every replica shows one page: one probes (the lease holder) and all share the store (shared.ts).
 * Incident changes and windows starting or ending go to uptime.webhooks (notify.ts). The clock
 * is injected; tests drive probe() themselves.
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
import { HeadWatch, confirmChain, type FleetView } from './checks.js';
import {
  WINDOWS,
  fraction,
  history,
  incidentLines,
  uptimeWindows,
  observedWindows,
  buildReport,
  type ReportParts,
  type UptimeReport,
} from './report.js';
import type { UptimePages } from './routes.js';
import type { MaintenanceConfig } from '../config/maintenance-schema.js';
import type { CordonKeeper } from '../upstream/cordons.js';
import { storeCordons } from './cordon-keeper.js';
import { dailyLines, latencyReport, markMaintenance } from './history.js';
import { IncidentDesk } from './incidents.js';
import { LatencyHistory } from './history-store.js';
import { ComponentHistory, componentLines, tallyComponents, type ComponentLine } from './components.js';
import { DAYS } from './history.js';
import { DAY_MS, floorTo } from './store.js';
import { Maintenance, type MaintenanceAdmin } from './maintenance.js';
import { storeWindows } from './maintenance-store.js';
import { openUptimeStore, storeWrite } from './store-open.js';
import { FLUSH_EVERY, UptimeStore, type Incident, type IncidentKind } from './store.js';
import { lastProbeText, parseLastProbe, type LastProbe } from './last-probe.js';
import { SharedUptime, changeCount } from './shared.js';
import type { RedisConnections } from '../redis/connections.js';
import { incidentChanges, type Change } from './tracker.js';
import type { WebhookConfig } from '../config/uptime-schema.js';
import { pageContext, startWebhooks } from './notify.js';
import type { Webhooks } from './webhooks.js';
import type { SupportConfig } from '../config/support.js';
import { shownFraction } from './figures.js';

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

export interface Clock {
  now(): number;
}

export interface UptimeDeps {
  chainId: number;
  fleet: FleetView & {
    on?(event: 'head', listener: (head: number) => void): unknown;
    off?(event: 'head', listener: (head: number) => void): unknown;
  };
  metrics: Metrics;
  log: Logger;
  /** Per-attempt limit for a node's answer; a probe waits at most min(this, the probe interval). */
  upstreamTimeoutMs: number;
  clock?: Clock;
  /** The top-level redis: one page for every replica (shared.ts); absent or null: this replica's store. */
  shared?: { connections: RedisConnections; url: string } | null;
}

const SYSTEM_CLOCK: Clock = { now: () => Date.now() };

export class Uptime implements UptimePages {
  private settings: UptimeSettings;
  private upstreamTimeoutMs: number;
  private readonly store: UptimeStore;
  private readonly latency: LatencyHistory;
  private readonly components: ComponentHistory;
  /** Maintenance windows (maintenance.ts); subscribe() tells when one starts or ends. */
  readonly maintenance: Maintenance;
  /** The admin port's routes to the windows (server/admin-maintenance.ts). */
  readonly maintenanceAdmin: MaintenanceAdmin;
  /** Hand-opened incidents, updates, post-mortems, and who hears of incident changes (incidents.ts). */
  readonly desk: IncidentDesk;
  /** uptime.webhooks; `webhooks.send(event)` tells them anything else (queued, never waits). */
  readonly webhooks: Webhooks;
  private readonly watch: HeadWatch;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly open = new Map<IncidentKind, Incident>();
  private readonly shared: SharedUptime | null;
  /** A probe is being recorded: its writes are the prober's, not replayed elsewhere (shared.ts). */
  private recording = false;
  private last: LastProbe | null = null;
  /** When the nodes' current run of answering began (see tracker.ts: stalls need such a run). */
  private reachableSince = 0;
  private summary: ReportParts['summary'] | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly onHead = (head: number): void => this.watch.saw(head, this.clock.now());
  /** The first probe waits for the fleet's first head (or a second): see start(). */
  private readonly first = (): void => {
    this.deps.fleet.off?.('head', this.first);
    if (this.timer) clearTimeout(this.timer);
    this.schedule(0);
  };

  constructor(
    settings: UptimeSettings,
    private readonly deps: UptimeDeps,
  ) {
    this.settings = settings;
    this.upstreamTimeoutMs = deps.upstreamTimeoutMs;
    this.clock = deps.clock ?? SYSTEM_CLOCK;
    this.log = deps.log.child({ room: 'uptime' });
    const now = this.clock.now();
    // With Redis the shared image is the history: the local copy lives in memory (shared.ts).
    this.store = deps.shared ? UptimeStore.memory() : openUptimeStore(settings.store, now, this.log);
    this.latency = new LatencyHistory(this.store);
    this.components = new ComponentHistory(this.store);
    const keeper = storeWindows(
      this.store,
      (op) => this.write(op),
      () => this.clock.now(),
    );
    this.maintenance = new Maintenance(keeper, settings.maintenance ?? [], now);
    this.maintenanceAdmin = this.maintenance.admin(() => this.clock.now());
    this.desk = new IncidentDesk(this.store, this.clock, this.log, (op) => this.write(op), this.told);
    this.webhooks = startWebhooks(settings, { ...deps, log: this.log }, this.desk, this.maintenance);
    for (const i of this.store.openIncidents()) if (!this.open.has(i.kind)) this.open.set(i.kind, i);
    const head = Number(this.store.getMeta('head') ?? NaN);
    const roseAt = Number(this.store.getMeta('headRoseAt') ?? NaN);
    this.watch = new HeadWatch(
      settings.stallAfterSeconds * 1000,
      now,
      Number.isFinite(head) && Number.isFinite(roseAt) ? { head, roseAt } : null,
    );
    deps.metrics.setUptimeStorePersistent(this.store.persistent);
    this.deps.metrics.setUptimeIncidents(this.open);
    deps.fleet.on?.('head', this.onHead);
    const host = { ...deps, store: this.store, log: this.log, probeIntervalMs: () => this.settings.probeIntervalMs };
    this.shared = deps.shared
      ? new SharedUptime(deps.shared.connections, deps.shared.url, deps.chainId, {
          ...host,
          loaded: () => this.loaded(),
        })
      : null;
  }

  /** Starts probing: the first probe once the fleet knows a head (or after a second), then every probeIntervalMs. */
  start(): void {
    void this.shared?.start();
    this.deps.fleet.on?.('head', this.first);
    this.timer = setTimeout(this.first, Math.min(1_000, this.settings.probeIntervalMs));
  }

  private schedule(delayMs: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      const started = this.clock.now();
      this.probe()
        .catch((err: unknown) => this.log.error({ err }, 'uptime probe failed'))
        .finally(() => this.schedule(Math.max(0, started + this.settings.probeIntervalMs - this.clock.now())));
    }, delayMs);
  }

  /**
   * A reloaded configuration: the next probe runs with it. `enabled` and `store` are read at start
   * (config/restart.ts keeps their running values).
   */
  apply(config: Pick<Config, 'uptime' | 'routing'>): void {
    this.settings = config.uptime;
    this.upstreamTimeoutMs = config.routing.upstreamTimeoutMs;
    this.watch.setStallAfter(config.uptime.stallAfterSeconds * 1000);
    this.maintenance.configure(config.uptime.maintenance ?? [], this.clock.now());
    this.webhooks.apply(config.uptime.webhooks ?? [], pageContext(config.uptime, this.deps.chainId));
  }

  /** One probe now: both checks, the store, incidents, metrics, the report's summary. */
  async probe(): Promise<void> {
    // Another replica holds the lease: it probes, this one shows what it publishes.
    if (this.shared && !this.shared.prober) return;
    const s = this.settings;
    const { fleet, chainId } = this.deps;
    const timeoutMs = Math.max(1_000, Math.min(s.probeIntervalMs, this.upstreamTimeoutMs));
    // A shadow never answers a client: it does not make the service reachable.
    const confirmedMs = await confirmChain(
      fleet.upstreams.filter((u) => u.shadow !== true),
      chainId,
      timeoutMs,
    );
    await this.shared?.sync();
    if (this.closed) return;
    this.recording = true;
    try {
      this.record(confirmedMs);
    } finally {
      this.recording = false;
    }
  }

  /** A probe's result into the store, incidents, metrics and the report's summary. */
  private record(confirmedMs: number | null): void {
    const s = this.settings;
    const { fleet, chainId, metrics } = this.deps;
    const reachable = confirmedMs !== null;
    const t = this.clock.now();
    if (reachable && (this.last === null || !this.last.reachable)) this.reachableSince = t;
    this.watch.saw(fleet.head, t);
    const judged = this.watch.judge(t);
    // Not judged yet (the first moments after start): counted as advancing.
    const advancing = judged.advancing ?? true;
    // A failure while windows cover every node that could have answered is no data (not
    // downtime) and opens no incident; a window for some nodes never hides the others (SPEC 12.3).
    const window = this.maintenance.excusing(t, this.askedNames());
    this.maintenance.tick(t);
    const excused = window !== null && !(reachable && advancing);
    if (!excused) this.store.add({ t, reachable, advancing });
    if (confirmedMs !== null) this.latency.add(t, confirmedMs);
    this.tallyComponents(t, reachable, advancing, excused);
    metrics.recordUptimeProbe(reachable, advancing);
    const changes = incidentChanges(new Set(this.open.keys()), {
      t,
      reachable,
      reachableForMs: reachable ? t - this.reachableSince : 0,
      advancing: judged.advancing,
      head: judged.head,
      stallAfterSeconds: s.stallAfterSeconds,
      chainId,
    }).filter((c) => window === null || !('open' in c));
    for (const change of changes) this.change(change, t);
    this.deps.metrics.setUptimeIncidents(this.open);
    this.rememberHead();
    this.last = { t, reachable, advancing, excused };
    if (this.shared) this.store.setMeta('lastProbe', lastProbeText(this.last));
    if (this.shared) this.store.setMeta('windowsTold', this.maintenance.toldText());
    // Shared: every probe is published, so the other replicas show it now.
    if (this.store.pending >= FLUSH_EVERY || this.shared) this.write(() => this.flushHistory(t));
    this.summarize(t);
  }

  private flushHistory(t: number): void {
    this.latency.flush(t);
    this.components.flush(t);
  }

  /** Each component's outcome of this probe (components.ts). */
  private tallyComponents(t: number, reachable: boolean, advancing: boolean, excused: boolean): void {
    tallyComponents(this.components, this.deps.fleet, this.maintenance.inScope(t), t, {
      reachable,
      advancing,
      excused,
    });
  }

  /** The components as of the last probe: their state now and their 90 days (SPEC 12.3). */
  private componentLines(t: number): ComponentLine[] {
    const from = floorTo(t, DAY_MS) - (DAYS - 1) * DAY_MS;
    return componentLines(this.components, this.deps.fleet, this.maintenance.inScope(t), this.last, {
      showUpstreams: this.settings.showUpstreams,
      probeIntervalMs: this.settings.probeIntervalMs,
      from,
      days: DAYS,
    });
  }

  /** The nodes a probe asks (confirmChain): they could have answered. */
  private askedNames(): string[] {
    return this.deps.fleet.upstreams.filter((u) => u.shadow !== true && !u.retiring).map((u) => u.name);
  }

  /** Windows over [from, to) that cover every node: the bars mark only those as maintenance. */
  private coveringWindows(from: number, to: number) {
    const names = this.askedNames();
    return this.maintenance
      .between(from, to)
      .filter((w) => w.scope === 'all' || (names.length > 0 && names.every((n) => w.scope.includes(n))));
  }

  /** Opens or closes a probe incident at `t`, and tells the desk (feeds, webhooks). */
  private change(change: Change, t: number): void {
    if ('open' in change) {
      const incident = this.write(() => this.store.openIncident(change.open, t, change.summary, t));
      if (incident) this.open.set(change.open, incident);
      if (incident) this.desk.probeChanged('opened', incident.id);
      this.log.warn({ kind: change.open, summary: change.summary }, 'uptime incident opened');
      return;
    }
    const incident = this.open.get(change.close)!;
    this.write(() => this.store.closeIncident(incident.id, t, t));
    this.open.delete(change.close);
    this.desk.probeChanged('resolved', incident.id);
    this.log.info(
      { kind: change.close, id: incident.id, seconds: Math.round((t - incident.startedAt) / 1000) },
      'uptime incident closed',
    );
  }

  /** The report's figures as of the probe at `t` (kept as they were if even the memory store fails). */
  private summarize(t: number): void {
    const windows = (from: number, to: number) => this.coveringWindows(from, to);
    this.summary =
      this.write(() => ({
        uptime: uptimeWindows(this.store, t),
        observedSeconds: observedWindows(this.store, t, this.settings.probeIntervalMs),
        history: markMaintenance(history(this.store, t), windows),
        incidents: incidentLines(this.store, t),
        daily: dailyLines(this.store, windows, t, this.settings.probeIntervalMs),
        latency: latencyReport(this.latency, t),
        components: this.componentLines(t),
      })) ?? this.summary;
  }

  /** A store operation that survives the file failing (store-open.ts); undefined: it failed in memory too. */
  private write<T>(op: () => T): T | undefined {
    const before = this.shared && changeCount(this.store);
    const out = storeWrite(this.store, op, this.log, this.deps.metrics);
    if (this.shared && changeCount(this.store) !== before) this.shared.changed(this.recording ? null : op);
    return out;
  }

  /** Another replica's image replaced the local copy: what derives from the store, read again. */
  private loaded(): void {
    const now = this.clock.now();
    const prober = this.shared?.prober ?? true;
    this.open.clear();
    for (const i of this.write(() => this.store.openIncidents()) ?? [])
      if (!this.open.has(i.kind)) this.open.set(i.kind, i);
    this.maintenance.reload(now, prober, this.store.getMeta('windowsTold'));
    if (!prober) this.last = parseLastProbe(this.store.getMeta('lastProbe')) ?? this.last;
    this.deps.metrics.setUptimeIncidents(this.open);
    this.summarize(this.last?.t ?? now);
  }

  /** An incident changed by hand: the page shows it now, not at the next probe. */
  private readonly told = (): void => {
    const incidents = this.summary && this.write(() => incidentLines(this.store, this.clock.now()));
    if (this.summary && incidents) this.summary = { ...this.summary, incidents };
  };

  /** The head and when it last rose, kept across restarts (written with the next flush). */
  private rememberHead(): void {
    const seen = this.watch.remember();
    if (seen) this.store.setMeta('head', String(seen.head));
    if (seen) this.store.setMeta('headRoseAt', String(seen.roseAt));
  }

  /** Refreshes the gauges that move with time (before a scrape). */
  collect(): void {
    const { ageMs } = this.watch.judge(this.clock.now());
    if (ageMs !== null) this.deps.metrics.setUptimeHeadAge(ageMs / 1000);
  }

  /** The report of SPEC 12; null until the first probe has finished. */
  report(): UptimeReport | null {
    const last = this.last;
    const summary = this.summary;
    if (last === null || summary === null) return null;
    const now = this.clock.now();
    const parts = { last, summary, judged: this.watch.judge(now), maintenance: this.maintenance.lines(now) };
    return buildReport(this.settings, this.deps.chainId, parts, this.deps.fleet);
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
    if (this.summary) return shownFraction(this.summary.uptime['30d'], this.summary.observedSeconds['30d'], month);
    const tally = this.write(() => this.store.tally(this.clock.now() - WINDOWS['30d']));
    if (tally === undefined) return null;
    const seen = Math.min(month, (tally.probes * this.settings.probeIntervalMs) / 1000);
    return shownFraction(fraction(tally), seen, month);
  }

  /** Cordons kept in this store, without a shared Redis (cordon-keeper.ts). */
  cordonKeeper(): CordonKeeper {
    return storeCordons(
      this.store,
      (op) => this.write(op),
      () => this.clock.now(),
    );
  }

  /** For /status on the admin port. */
  status(): Record<string, unknown> {
    return {
      store: this.store.path,
      persistent: this.store.persistent,
      openIncidents: [...this.open.keys()],
      bufferedProbes: this.store.pending,
      webhooks: this.webhooks.status(),
      shared: this.shared?.status() ?? null,
    };
  }

  /** Stops probing and writes what is buffered. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.webhooks.close();
    await this.shared?.close();
    this.deps.fleet.off?.('head', this.onHead);
    this.deps.fleet.off?.('head', this.first);
    const now = this.clock.now();
    this.rememberHead();
    try {
      try {
        this.flushHistory(now);
      } finally {
        this.store.close(now);
      }
    } catch (err) {
      this.log.error({ store: this.store.path, err }, 'uptime.store: the last probes could not be written');
    }
  }
}
