/**
 * The history cards of the page and uptime.json (SPEC 12.2 History): 90 daily bars (each UTC
 * day's uptime fraction, how much of it was observed, whether a maintenance window touched it,
 * and its incidents) and the probe latency of the last 24 hours (p50 and p95 per hour).
 * Owns: turning stored sums into report lines. Refuses: storing them (history-store.ts, store.ts).
 */
import { dailyTallies, type LatencyHistory } from './store/history-store.js';
import type { MaintenanceWindow } from './maintenance.js';
import { fraction, iso, type DayLine, type LatencyReport, type UptimeReport } from './report.js';
import { DAY_MS, HOUR_MS, floorTo, type Incident, type UptimeStore } from './store/store.js';

/** Daily bars: today (UTC, still filling) and the 89 days before it. */
export const DAYS = 90;
/** Incidents listed under one day, newest first; `incidentCount` says how many there were. */
export const INCIDENTS_PER_DAY = 10;
/** Incidents read for the daily bars (started in the last 90 days, or still open). */
export const INCIDENTS_READ = 500;
/** Hours of the latency chart: the current one (still filling) and the 23 before it. */
export const LATENCY_HOURS = 24;

export function dailyLines(
  store: UptimeStore,
  windows: (from: number, to: number) => MaintenanceWindow[],
  now: number,
  probeIntervalMs: number,
): DayLine[] {
  const from = floorTo(now, DAY_MS) - (DAYS - 1) * DAY_MS;
  const incidents = store.incidents(from, INCIDENTS_READ);
  const maint = windows(from, now + 1);
  return dailyTallies(store, from, DAYS).map((tally, i) => {
    const start = from + i * DAY_MS;
    const end = start + DAY_MS;
    const touching = incidents.filter((x) => x.startedAt < end && (x.endedAt ?? now) >= start);
    return {
      date: iso(start).slice(0, 10),
      uptime: fraction(tally),
      observedSeconds: Math.floor(Math.min(DAY_MS, tally.probes * probeIntervalMs) / 1000),
      maintenance: maint.some((w) => w.start < end && w.end > start),
      incidentCount: touching.length,
      incidents: touching.slice(0, INCIDENTS_PER_DAY).map(dayIncident),
    };
  });
}

function dayIncident(x: Incident): DayLine['incidents'][number] {
  return { id: x.id, kind: x.kind, startedAt: iso(x.startedAt), endedAt: x.endedAt === null ? null : iso(x.endedAt) };
}

/** The last LATENCY_HOURS hours, aligned to the hour, the last one still filling. */
export function latencyReport(latency: LatencyHistory, now: number): LatencyReport {
  const from = floorTo(now, HOUR_MS) - (LATENCY_HOURS - 1) * HOUR_MS;
  return { from: iso(from), hourSeconds: HOUR_MS / 1000, hours: latency.hours(from, LATENCY_HOURS) };
}

/** For each of `count` segments of `size` ms from `from`: whether a maintenance window overlaps it. */
export function maintenanceSegments(
  windows: MaintenanceWindow[],
  from: number,
  size: number,
  count: number,
): boolean[] {
  return Array.from({ length: count }, (_, i) => {
    const s = from + i * size;
    return windows.some((w) => w.start < s + size && w.end > s);
  });
}

/** The 24-hour bar with, per segment, whether a maintenance window overlaps it. */
export function markMaintenance(
  h: UptimeReport['history'],
  windows: (from: number, to: number) => MaintenanceWindow[],
): UptimeReport['history'] {
  const from = Date.parse(h.from);
  const size = h.segmentSeconds * 1000;
  const to = from + size * h.segments.length;
  return { ...h, maintenance: maintenanceSegments(windows(from, to), from, size, h.segments.length) };
}
