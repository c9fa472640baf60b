/**
 * What the history cards read beside the probe tiers of store.ts (SPEC 12.2 History): each UTC
 * day's tally over every tier, and the probe latency of each hour.
 *
 * Latency: a probe that confirmed the chain records how long the first confirming node took to
 * answer eth_chainId. Each hour keeps a histogram of that latency in fixed log-spaced buckets,
 * BUCKETS_PER_DOUBLING per doubling from LOWEST_MS: an hour costs at most MAX_BUCKET + 1 counts
 * whatever the probe interval, two parts of an hour (before and after a restart) merge by adding
 * counts, and p50/p95 are the upper bound of the bucket that holds the ceil(q * n)-th latency, so
 * a figure is at most 9.1% (2^(1/8)) above the true percentile and never below it. Hours are kept
 * RETAIN_MS, like the hourly rollups.
 * Owns: the latency table and the daily sums. Refuses: what a day or an hour means on the page (history.ts).
 */
import { DAY_MS, HOUR_MS, RETAIN_MS, floorTo, type Tally, type UptimeStore } from './store.js';

export const LOWEST_MS = 0.1;
export const BUCKETS_PER_DOUBLING = 8;
/** 0.1 ms * 2^(200/8): about 55 minutes, beyond any probe's timeout. */
export const MAX_BUCKET = 200;
/** Hours waiting to be written, at most (a store that keeps failing must not grow memory). */
const MAX_PENDING_HOURS = 48;

type Histogram = Map<number, number>;

export function bucketOf(ms: number): number {
  if (!(ms > LOWEST_MS)) return 0;
  return Math.min(MAX_BUCKET, Math.ceil(Math.log2(ms / LOWEST_MS) * BUCKETS_PER_DOUBLING));
}

/** The largest latency bucket `i` holds. */
export function bucketTop(i: number): number {
  return LOWEST_MS * 2 ** (i / BUCKETS_PER_DOUBLING);
}

/** The q-quantile (0 < q <= 1) of a histogram as its bucket's top, rounded to 0.1 ms; null when empty. */
export function quantile(h: Histogram, q: number): number | null {
  let n = 0;
  for (const c of h.values()) n += c;
  if (n === 0) return null;
  const rank = Math.max(1, Math.ceil(q * n));
  let seen = 0;
  for (const i of [...h.keys()].sort((a, b) => a - b)) {
    seen += h.get(i)!;
    if (seen >= rank) return Math.round(bucketTop(i) * 10) / 10;
  }
  return null;
}

/** A stored histogram; what is not one (the file is input) reads as empty. */
function parseHistogram(text: unknown): Histogram {
  const h: Histogram = new Map();
  let v: unknown;
  try {
    v = typeof text === 'string' ? JSON.parse(text) : null;
  } catch {
    return h;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return h;
  for (const [k, c] of Object.entries(v)) {
    const i = Number(k);
    if (Number.isInteger(i) && i >= 0 && i <= MAX_BUCKET && Number.isSafeInteger(c) && (c as number) > 0)
      h.set(i, c as number);
  }
  return h;
}

function merge(into: Histogram, from: Histogram): Histogram {
  for (const [i, c] of from) into.set(i, (into.get(i) ?? 0) + c);
  return into;
}

export interface HourLatency {
  probes: number;
  p50Ms: number | null;
  p95Ms: number | null;
}

/** Probe latency by hour: buffered like the probes, written in the same transaction. */
export class LatencyHistory {
  private pending = new Map<number, Histogram>();

  constructor(private readonly store: UptimeStore) {}

  add(t: number, ms: number): void {
    const hour = floorTo(t, HOUR_MS);
    let h = this.pending.get(hour);
    if (h === undefined) {
      h = new Map();
      this.pending.set(hour, h);
      if (this.pending.size > MAX_PENDING_HOURS) this.pending.delete(Math.min(...this.pending.keys()));
    }
    const b = bucketOf(ms);
    h.set(b, (h.get(b) ?? 0) + 1);
  }

  /** Writes the buffered hours with the buffered probes (store.flush's transaction); drops hours past RETAIN_MS. */
  flush(now: number): void {
    const pending = this.pending;
    this.store.tx(now, (db) => {
      const read = db.prepare('SELECT buckets FROM latency_hours WHERE t = ?');
      const write = db.prepare('INSERT OR REPLACE INTO latency_hours (t, probes, buckets) VALUES (?, ?, ?)');
      for (const [hour, h] of pending) {
        const row = read.get(hour) as { buckets: unknown } | undefined;
        const all = merge(parseHistogram(row?.buckets), h);
        let probes = 0;
        for (const c of all.values()) probes += c;
        write.run(hour, probes, JSON.stringify(Object.fromEntries(all)));
      }
      db.prepare('DELETE FROM latency_hours WHERE t < ?').run(now - RETAIN_MS);
    });
    // Let go only once written: a failed write keeps them for the next try.
    this.pending = new Map();
  }

  /** `count` hours from `from` (an hour start): stored and buffered. */
  hours(from: number, count: number): HourLatency[] {
    const rows = this.store.tx(
      null,
      (db) =>
        db.prepare('SELECT t, buckets FROM latency_hours WHERE t >= ? AND t < ?').all(from, from + count * HOUR_MS) as {
          t: number;
          buckets: unknown;
        }[],
    );
    const byHour = new Map<number, Histogram>();
    for (const r of rows) byHour.set(r.t, parseHistogram(r.buckets));
    for (const [hour, h] of this.pending) byHour.set(hour, merge(byHour.get(hour) ?? new Map(), h));
    return Array.from({ length: count }, (_, i) => {
      const h = byHour.get(from + i * HOUR_MS) ?? new Map();
      let probes = 0;
      for (const c of h.values()) probes += c;
      return { probes, p50Ms: quantile(h, 0.5), p95Ms: quantile(h, 0.95) };
    });
  }
}

/** `count` UTC days from `from` (a day start), each with its tally over every tier and the buffer. */
export function dailyTallies(store: UptimeStore, from: number, count: number): Tally[] {
  // The per-probe tier and the buffer; minute and hour rows never straddle a day (both divide it).
  const out = store.segments(from, DAY_MS, count);
  const rows = store.tx(
    null,
    (db) =>
      db
        .prepare(
          `SELECT (t - CAST(? AS INTEGER)) / ${DAY_MS} AS i, SUM(probes) AS probes, SUM(ok) AS ok
           FROM rollups WHERE t >= ? AND t < ? GROUP BY i`,
        )
        .all(from, from, from + count * DAY_MS) as { i: number; probes: number; ok: number }[],
  );
  for (const r of rows) {
    const d = out[r.i];
    if (d) {
      d.probes += r.probes;
      d.ok += r.ok;
    }
  }
  return out;
}
