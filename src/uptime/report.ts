/**
 * The uptime arithmetic and the JSON twin of the page (SPEC 12, names binding).
 * Uptime over a window = probes with both checks ok / probes in the window; a window without
 * probes is null. Time without probes (Switchyard not running) is no data, never downtime.
 */
import { toQuantity } from '../jsonrpc/hex.js';
import type { FleetView } from './checks.js';
import type { HourLatency } from './store/history-store.js';
import type { IncidentRecord, IncidentSource, UpdateStatus } from './store/incident-store.js';
import type { MaintenanceLine } from './maintenance.js';
import { DAY_MS, floorTo, type Tally, type UptimeStore } from './store/store.js';
import { overallState, type OverallState } from './tracker.js';
import { stateOfImpact, worse, worstImpact, type Impact } from './store/impact.js';
import type { LastProbe } from './last-probe.js';

/** One daily bar of the history (history.ts dailyLines). */
export interface DayLine {
  /** The UTC day, YYYY-MM-DD. */
  date: string;
  uptime: number | null;
  observedSeconds: number;
  /** A maintenance window overlapped the day: its failed probes are no data. */
  maintenance: boolean;
  incidentCount: number;
  incidents: { id: number; kind: string; startedAt: string; endedAt: string | null }[];
}

export interface LatencyReport {
  from: string;
  hourSeconds: number;
  hours: HourLatency[];
}
import type { ComponentLine } from './components.js';

export const WINDOWS = { '24h': DAY_MS, '7d': 7 * DAY_MS, '30d': 30 * DAY_MS } as const;
export type WindowName = keyof typeof WINDOWS;

/** The history bar: the last day in 90 segments of 16 minutes, the last one still filling. */
export const HISTORY_SEGMENTS = 90;
export const SEGMENT_MS = DAY_MS / HISTORY_SEGMENTS;
/** Incidents listed: the open ones and those started in the last 30 days, newest first, at most this many. */
export const INCIDENTS_LISTED = 50;

export interface UpstreamLine {
  name: string;
  state: string;
  head: string | null;
  lag: number | null;
  latencyMs: number | null;
  /** While an operator has the node cordoned (state `cordoned`): why and since when. */
  cordon?: { reason: string | null; since: string };
}

/** An incident in uptime.json (SPEC 12, 12.2): `updates` newest first; `postmortem`: whether one is attached. */
export interface IncidentLine {
  id: number;
  kind: string;
  startedAt: string;
  endedAt: string | null;
  summary: string;
  source: IncidentSource;
  /** none, minor, major or critical (impact.ts): an open one of minor or worse sets the page's state. */
  impact: Impact;
  updates: { status: UpdateStatus; message: string; at: string }[];
  postmortem: boolean;
}

export interface UptimeReport {
  title: string;
  chainId: string;
  /**
   * The worst of the last probe and the open incidents (SPEC 12.3): an open `minor` incident makes
   * it at least `degraded`, a `major` or `critical` one `down`. `maintenance`: the last probe
   * failed inside a maintenance window covering every node, and no incident of any impact but
   * `none` is open.
   */
  state: OverallState | 'maintenance';
  checkedAt: string;
  checks: {
    reachable: { ok: boolean };
    advancing: { ok: boolean; head: string | null; headAgeSeconds: number | null };
  };
  uptime: Record<WindowName, number | null>;
  /** Seconds of each window with probe data: each probe stands for one probe interval, capped at the window. */
  observedSeconds: Record<WindowName, number>;
  /** `maintenance[i]`: a maintenance window overlaps segment i (its failed probes are no data). */
  history: { from: string; segmentSeconds: number; segments: (number | null)[]; maintenance?: boolean[] };
  /** The 90 daily bars, oldest first, the last one today (UTC). */
  daily: DayLine[];
  /** Probe latency of the last 24 hours (p50 and p95 per hour). */
  latency: LatencyReport;
  /** Upcoming and ongoing maintenance windows, soonest first (names binding, SPEC 12.2). */
  maintenance: MaintenanceLine[];
  incidents: IncidentLine[];
  /** Each check and (with showUpstreams) each upstream: its state and 90 days (components.ts). */
  components: ComponentLine[];
  upstreams?: UpstreamLine[];
  probeIntervalMs: number;
  stallAfterSeconds: number;
}

/** ok / probes rounded to 6 places; null without probes. */
export function fraction(t: Tally): number | null {
  return t.probes === 0 ? null : Math.round((t.ok / t.probes) * 1e6) / 1e6;
}

export function uptimeWindows(store: UptimeStore, now: number): Record<WindowName, number | null> {
  return {
    '24h': fraction(store.tally(now - WINDOWS['24h'])),
    '7d': fraction(store.tally(now - WINDOWS['7d'])),
    '30d': fraction(store.tally(now - WINDOWS['30d'])),
  };
}

/**
 * Seconds each window rests on. A probe stands for the interval up to the next one; time when
 * Switchyard was not running has no probe, so it is not counted.
 */
export function observedWindows(store: UptimeStore, now: number, probeIntervalMs: number): Record<WindowName, number> {
  const seconds = (w: WindowName): number =>
    Math.floor(Math.min(WINDOWS[w], store.tally(now - WINDOWS[w]).probes * probeIntervalMs) / 1000);
  return { '24h': seconds('24h'), '7d': seconds('7d'), '30d': seconds('30d') };
}

/** Segments aligned to SEGMENT_MS, so their borders stay put between two refreshes of the page. */
export function history(store: UptimeStore, now: number): UptimeReport['history'] {
  const from = floorTo(now, SEGMENT_MS) - (HISTORY_SEGMENTS - 1) * SEGMENT_MS;
  return {
    from: iso(from),
    segmentSeconds: SEGMENT_MS / 1000,
    segments: store.segments(from, SEGMENT_MS, HISTORY_SEGMENTS).map(fraction),
  };
}

/** The last lines made per store, and the recentKey they were made for. */
const linesMade = new WeakMap<UptimeStore, { key: string; lines: IncidentLine[] }>();

/**
 * The report's incidents: those of the last 30 days and any still open. Made again only when the
 * incidents' key says they changed: every probe asks (and a replica after every image it loads),
 * and the largest list (50 incidents of 50 updates of 2,000 characters) took 15-65 ms to read and
 * make, the event loop held each time; its key is read in well under a millisecond.
 */
export function incidentLines(store: UptimeStore, now: number): IncidentLine[] {
  const since = now - WINDOWS['30d'];
  const key = store.told.recentKey(since, INCIDENTS_LISTED);
  const made = linesMade.get(store);
  if (made !== undefined && made.key === key) return made.lines;
  const lines = store.told.recent(since, INCIDENTS_LISTED).map(incidentLine);
  linesMade.set(store, { key, lines });
  return lines;
}

export function incidentLine(i: IncidentRecord): IncidentLine {
  return {
    id: i.id,
    kind: i.kind,
    startedAt: iso(i.startedAt),
    endedAt: i.endedAt === null ? null : iso(i.endedAt),
    summary: i.summary,
    source: i.source,
    impact: i.impact,
    updates: i.updates.map((u) => ({ status: u.status, message: u.message, at: iso(u.at) })),
    postmortem: i.postmortem !== null,
  };
}

/** A head as a quantity; null while none is known (null, or -1 before the first). */
export function headQuantity(n: number | null): string | null {
  return n === null || n < 0 ? null : toQuantity(n);
}

export function iso(t: number): string {
  return new Date(t).toISOString();
}

/**
 * A node row agrees with the overall state: while the chain is not advancing, a node that answers
 * is not shown as `healthy` (its head stopped with the rest), but as `stalled`.
 */
export function rowState(state: string, advancing: boolean): string {
  return state === 'healthy' && !advancing ? 'stalled' : state;
}

/** The upstream rows of the page (showUpstreams): never a URL; a shadow or a retiring node is not shown. */
export function upstreamLines(fleet: FleetView, advancing: boolean): UpstreamLine[] {
  return fleet.upstreams
    .filter((u) => !u.retiring && u.shadow !== true)
    .map((u) => {
      const cordon = fleet.cordons?.get(u.name);
      return {
        name: u.name,
        state: cordon ? 'cordoned' : rowState(u.state, advancing),
        head: headQuantity(u.head),
        lag: u.state !== 'healthy' || fleet.head < 0 || u.head < 0 ? null : Math.max(0, fleet.head - u.head),
        latencyMs: u.state === 'healthy' ? Math.round(u.latencyMs * 10) / 10 : null,
        ...(cordon && { cordon: { reason: cordon.reason, since: iso(cordon.at) } }),
      };
    });
}

/** What the room hands buildReport: the last probe, the summary of the store, the head as judged now. */
export interface ReportParts {
  last: LastProbe;
  summary: Pick<
    UptimeReport,
    'uptime' | 'observedSeconds' | 'history' | 'incidents' | 'daily' | 'latency' | 'components'
  >;
  judged: { head: number | null; ageMs: number | null };
  maintenance: MaintenanceLine[];
}

/** The settings a report reads (UptimeSettings, index.ts, has them). */
export interface ReportSettings {
  title: string;
  probeIntervalMs: number;
  stallAfterSeconds: number;
  showUpstreams: boolean;
}

/** The worst of the probe and the open incidents; a window excuses the probe only (SPEC 12.3). */
export function pageState(
  last: Pick<LastProbe, 'reachable' | 'advancing' | 'excused'>,
  incidents: readonly Pick<IncidentLine, 'endedAt' | 'impact'>[],
): UptimeReport['state'] {
  const told = stateOfImpact(worstImpact(incidents.filter((i) => i.endedAt === null).map((i) => i.impact)));
  if (last.excused) return told === 'operational' ? 'maintenance' : told;
  return worse(overallState(last.reachable, last.advancing), told);
}

/** The report of SPEC 12 (index.ts report()). */
export function buildReport(
  s: ReportSettings,
  chainId: number,
  { last, summary, judged, maintenance }: ReportParts,
  fleet: FleetView,
): UptimeReport {
  const report: UptimeReport = {
    title: s.title,
    chainId: toQuantity(chainId),
    state: pageState(last, summary.incidents),
    checkedAt: iso(last.t),
    checks: {
      reachable: { ok: last.reachable },
      advancing: {
        ok: last.advancing,
        head: headQuantity(judged.head),
        headAgeSeconds: judged.ageMs === null ? null : Math.floor(judged.ageMs / 1000),
      },
    },
    ...summary,
    maintenance,
    probeIntervalMs: s.probeIntervalMs,
    stallAfterSeconds: s.stallAfterSeconds,
  };
  if (s.showUpstreams) report.upstreams = upstreamLines(fleet, last.advancing);
  return report;
}
