/**
 * The uptime room's probe loop (SPEC 12): every uptime.probeIntervalMs it runs the two checks
 * (checks.ts), records the result (the store's probes, the latency hours and the component days:
 * history-store.ts, components.ts), opens and closes the probes' incidents (tracker.ts) and makes
 * the report's summary of that probe (report.ts, history.ts). Maintenance windows (maintenance.ts)
 * excuse the failures inside them. The clock is injected; tests drive probe() themselves.
 * Owns: the timer, the head watch, the open probe incidents, the last probe and its summary.
 * Refuses: the store's file and what happens when it fails (the room's write, store-open.ts),
 * which replica probes (shared.ts decides; the loop asks), the pages (report.ts, page.ts).
 */
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/registry.js';
import { HeadWatch, confirmChain, type FleetView } from './checks.js';
import { ComponentHistory, componentLines, tallyComponents, type ComponentLine } from './components.js';
import { LatencyHistory } from './store/history-store.js';
import { DAYS, dailyLines, latencyReport, markMaintenance } from './history.js';
import type { IncidentDesk } from './incidents.js';
import { lastProbeText, parseLastProbe, type LastProbe } from './last-probe.js';
import type { Maintenance } from './maintenance.js';
import { history, incidentLines, observedWindows, uptimeWindows, type ReportParts } from './report.js';
import { DAY_MS, FLUSH_EVERY, floorTo, type Incident, type IncidentKind, type UptimeStore } from './store/store.js';
import { incidentChanges, type Change } from './tracker.js';

export interface Clock {
  now(): number;
}

/** What a probe reads of uptime's settings (a reload changes them: read at each probe). */
export interface ProbeSettings {
  probeIntervalMs: number;
  stallAfterSeconds: number;
  showUpstreams: boolean;
}

/** The fleet as the loop reads it, with the head events that start the first probe early. */
export type ProbedFleet = FleetView & {
  on?(event: 'head', listener: (head: number) => void): unknown;
  off?(event: 'head', listener: (head: number) => void): unknown;
};

/** With a shared Redis (shared.ts): whether this replica probes, and taking in the others' writes first. */
export interface ProbeLease {
  readonly prober: boolean;
  sync(): Promise<void>;
}

export interface ProbeLoopInput {
  chainId: number;
  fleet: ProbedFleet;
  metrics: Metrics;
  log: Logger;
  clock: Clock;
  store: UptimeStore;
  maintenance: Maintenance;
  desk: IncidentDesk;
  settings(): ProbeSettings;
  /** Per-attempt limit for a node's answer (reloadable); a probe waits at most min(this, the probe interval). */
  upstreamTimeoutMs(): number;
  /** A store operation that survives the file failing (the room's, store-open.ts); undefined: it failed in memory too. */
  write<T>(op: () => T): T | undefined;
  /** null: this replica's store alone, it always probes. */
  lease(): ProbeLease | null;
}

export class ProbeLoop {
  private readonly latency: LatencyHistory;
  private readonly components: ComponentHistory;
  private readonly watch: HeadWatch;
  private readonly open = new Map<IncidentKind, Incident>();
  /** A probe is being recorded: its writes are the prober's, not replayed elsewhere (shared.ts). */
  private recordingNow = false;
  private lastProbe: LastProbe | null = null;
  /** When the nodes' current run of answering began (see tracker.ts: stalls need such a run). */
  private reachableSince = 0;
  private summaryNow: ReportParts['summary'] | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly onHead = (head: number): void => this.watch.saw(head, this.input.clock.now());
  /** The first probe waits for the fleet's first head (or a second): see start(). */
  private readonly first = (): void => {
    this.input.fleet.off?.('head', this.first);
    if (this.timer) clearTimeout(this.timer);
    this.schedule(0);
  };

  constructor(private readonly input: ProbeLoopInput) {
    const { store } = input;
    this.latency = new LatencyHistory(store);
    this.components = new ComponentHistory(store);
    for (const i of store.openIncidents()) if (!this.open.has(i.kind)) this.open.set(i.kind, i);
    const head = Number(store.getMeta('head') ?? NaN);
    const roseAt = Number(store.getMeta('headRoseAt') ?? NaN);
    this.watch = new HeadWatch(
      input.settings().stallAfterSeconds * 1000,
      input.clock.now(),
      Number.isFinite(head) && Number.isFinite(roseAt) ? { head, roseAt } : null,
    );
    input.metrics.setUptimeIncidents(this.open);
    input.fleet.on?.('head', this.onHead);
  }

  /** Starts probing: the first probe once the fleet knows a head (or after a second), then every probeIntervalMs. */
  start(): void {
    this.input.fleet.on?.('head', this.first);
    this.timer = setTimeout(this.first, Math.min(1_000, this.input.settings().probeIntervalMs));
  }

  private schedule(delayMs: number): void {
    if (this.closed) return;
    const { clock, log } = this.input;
    this.timer = setTimeout(() => {
      const started = clock.now();
      this.probe()
        .catch((err: unknown) => log.error({ err }, 'uptime probe failed'))
        .finally(() => this.schedule(Math.max(0, started + this.input.settings().probeIntervalMs - clock.now())));
    }, delayMs);
  }

  /** A reloaded stallAfterSeconds, from the next judgement on. */
  setStallAfter(ms: number): void {
    this.watch.setStallAfter(ms);
  }

  /** One probe now: both checks, the store, incidents, metrics, the report's summary. */
  async probe(): Promise<void> {
    const lease = this.input.lease();
    // Another replica holds the lease: it probes, this one shows what it publishes.
    if (lease && !lease.prober) return;
    const { fleet, chainId } = this.input;
    const timeoutMs = Math.max(1_000, Math.min(this.input.settings().probeIntervalMs, this.input.upstreamTimeoutMs()));
    // A shadow never answers a client: it does not make the service reachable.
    const confirmedMs = await confirmChain(
      fleet.upstreams.filter((u) => u.shadow !== true),
      chainId,
      timeoutMs,
    );
    await lease?.sync();
    if (this.closed) return;
    this.recordingNow = true;
    try {
      this.record(confirmedMs, lease !== null);
    } finally {
      this.recordingNow = false;
    }
  }

  /** Whether a probe's result is being written now (the room's write tells shared.ts). */
  get recording(): boolean {
    return this.recordingNow;
  }

  /** A probe's result into the store, incidents, metrics and the report's summary; `shared`: with a Redis image. */
  private record(confirmedMs: number | null, shared: boolean): void {
    const s = this.input.settings();
    const { fleet, chainId, metrics, maintenance, store } = this.input;
    const reachable = confirmedMs !== null;
    const t = this.input.clock.now();
    if (reachable && (this.lastProbe === null || !this.lastProbe.reachable)) this.reachableSince = t;
    this.watch.saw(fleet.head, t);
    const judged = this.watch.judge(t);
    // Not judged yet (the first moments after start): counted as advancing.
    const advancing = judged.advancing ?? true;
    // A failure while windows cover every node that could have answered is no data (not
    // downtime) and opens no incident; a window for some nodes never hides the others (SPEC 12.3).
    const window = maintenance.excusing(t, this.askedNames());
    maintenance.tick(t);
    const excused = window !== null && !(reachable && advancing);
    if (!excused) store.add({ t, reachable, advancing });
    if (confirmedMs !== null) this.latency.add(t, confirmedMs);
    tallyComponents(this.components, fleet, maintenance.inScope(t), t, { reachable, advancing, excused });
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
    metrics.setUptimeIncidents(this.open);
    this.rememberHead();
    this.lastProbe = { t, reachable, advancing, excused };
    if (shared) store.setMeta('lastProbe', lastProbeText(this.lastProbe));
    if (shared) store.setMeta('windowsTold', maintenance.toldText());
    // Shared: every probe is published, so the other replicas show it now.
    if (store.pending >= FLUSH_EVERY || shared) this.input.write(() => this.flushHistory(t));
    this.summarize(t);
  }

  private flushHistory(t: number): void {
    this.latency.flush(t);
    this.components.flush(t);
  }

  /** The components as of the last probe: their state now and their 90 days (SPEC 12.3). */
  private componentLines(t: number): ComponentLine[] {
    const from = floorTo(t, DAY_MS) - (DAYS - 1) * DAY_MS;
    const s = this.input.settings();
    return componentLines(this.components, this.input.fleet, this.input.maintenance.inScope(t), this.lastProbe, {
      showUpstreams: s.showUpstreams,
      probeIntervalMs: s.probeIntervalMs,
      from,
      days: DAYS,
    });
  }

  /** The nodes a probe asks (confirmChain): they could have answered. */
  private askedNames(): string[] {
    return this.input.fleet.upstreams.filter((u) => u.shadow !== true && !u.retiring).map((u) => u.name);
  }

  /** Windows over [from, to) that cover every node: the bars mark only those as maintenance. */
  private coveringWindows(from: number, to: number) {
    const names = this.askedNames();
    return this.input.maintenance
      .between(from, to)
      .filter((w) => w.scope === 'all' || (names.length > 0 && names.every((n) => w.scope.includes(n))));
  }

  /** Opens or closes a probe incident at `t`, and tells the desk (feeds, webhooks). */
  private change(change: Change, t: number): void {
    const { store, desk, log } = this.input;
    if ('open' in change) {
      const incident = this.input.write(() => store.openIncident(change.open, t, change.summary, t));
      if (incident) this.open.set(change.open, incident);
      if (incident) desk.probeChanged('opened', incident.id);
      log.warn({ kind: change.open, summary: change.summary }, 'uptime incident opened');
      return;
    }
    const incident = this.open.get(change.close)!;
    this.input.write(() => store.closeIncident(incident.id, t, t));
    this.open.delete(change.close);
    desk.probeChanged('resolved', incident.id);
    log.info(
      { kind: change.close, id: incident.id, seconds: Math.round((t - incident.startedAt) / 1000) },
      'uptime incident closed',
    );
  }

  /** The report's figures as of the probe at `t` (kept as they were if even the memory store fails). */
  private summarize(t: number): void {
    const { store } = this.input;
    const probeIntervalMs = this.input.settings().probeIntervalMs;
    const windows = (from: number, to: number) => this.coveringWindows(from, to);
    this.summaryNow =
      this.input.write(() => ({
        uptime: uptimeWindows(store, t),
        observedSeconds: observedWindows(store, t, probeIntervalMs),
        history: markMaintenance(history(store, t), windows),
        incidents: incidentLines(store, t),
        daily: dailyLines(store, windows, t, probeIntervalMs),
        latency: latencyReport(this.latency, t),
        components: this.componentLines(t),
      })) ?? this.summaryNow;
  }

  /** Another replica's image replaced the local copy: what derives from the store, read again. */
  reload(prober: boolean): void {
    const { store, maintenance, metrics } = this.input;
    const now = this.input.clock.now();
    this.open.clear();
    for (const i of this.input.write(() => store.openIncidents()) ?? [])
      if (!this.open.has(i.kind)) this.open.set(i.kind, i);
    maintenance.reload(now, prober, store.getMeta('windowsTold'));
    if (!prober) this.lastProbe = parseLastProbe(store.getMeta('lastProbe')) ?? this.lastProbe;
    metrics.setUptimeIncidents(this.open);
    this.summarize(this.lastProbe?.t ?? now);
  }

  /** An incident changed by hand: the page shows it now, not at the next probe. */
  told(): void {
    const incidents =
      this.summaryNow && this.input.write(() => incidentLines(this.input.store, this.input.clock.now()));
    if (this.summaryNow && incidents) this.summaryNow = { ...this.summaryNow, incidents };
  }

  /** The head and when it last rose, kept across restarts (written with the next flush). */
  private rememberHead(): void {
    const seen = this.watch.remember();
    if (seen) this.input.store.setMeta('head', String(seen.head));
    if (seen) this.input.store.setMeta('headRoseAt', String(seen.roseAt));
  }

  /** Refreshes the gauges that move with time (before a scrape). */
  collect(): void {
    const { ageMs } = this.watch.judge(this.input.clock.now());
    if (ageMs !== null) this.input.metrics.setUptimeHeadAge(ageMs / 1000);
  }

  /** What the report is made of as of `now`; null until the first probe has finished. */
  parts(now: number): Pick<ReportParts, 'last' | 'summary' | 'judged'> | null {
    const last = this.lastProbe;
    const summary = this.summaryNow;
    if (last === null || summary === null) return null;
    return { last, summary, judged: this.watch.judge(now) };
  }

  /** The summary of the last probe (null before the first). */
  get summary(): ReportParts['summary'] | null {
    return this.summaryNow;
  }

  /** The kinds of the probe incidents open now. */
  openKinds(): IncidentKind[] {
    return [...this.open.keys()];
  }

  /** No probe from now on (one under way records nothing). */
  stop(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** After stop(): lets go of the fleet's head events and writes the head and the buffered history. Throws on a write failure. */
  finish(now: number): void {
    this.input.fleet.off?.('head', this.onHead);
    this.input.fleet.off?.('head', this.first);
    this.rememberHead();
    this.flushHistory(now);
  }
}
