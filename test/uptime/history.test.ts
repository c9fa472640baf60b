/**
 * The history behind the 90 daily bars and the latency chart: each day's figure over every tier
 * (probes, minutes, hours) matches the raw probes for all 90 days, incidents land on the days they
 * touch, latency percentiles come from bounded histograms within their stated error and survive a
 * restart, and a store file of the previous schema version opens migrated with its rows.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { dailyLines, DAYS, latencyReport } from '../../src/uptime/history.js';
import { bucketOf, bucketTop, dailyTallies, LatencyHistory, quantile } from '../../src/uptime/store/history-store.js';
import { fraction } from '../../src/uptime/report.js';
import { DAY_MS, HOUR_MS, SCHEMA_VERSION, UptimeStore, type ProbeRow } from '../../src/uptime/store/store.js';
import { pragma } from '../../src/uptime/store/sqlite.js';

const T0 = Date.UTC(2026, 0, 1);

t.test('90 daily figures over every tier match the raw probes; incidents on the days they touch', async (t) => {
  const store = UptimeStore.memory();
  const now = T0 + 95 * DAY_MS + 13 * HOUR_MS;
  const raw: ProbeRow[] = [];
  // A probe a minute for 95 days and a half; day d fails for d % 7 hours' worth of minutes.
  for (let ts = T0; ts <= now; ts += 60_000) {
    const day = Math.floor((ts - T0) / DAY_MS);
    const minuteOfDay = Math.floor((ts - T0 - day * DAY_MS) / 60_000);
    raw.push({ t: ts, reachable: minuteOfDay >= (day % 7) * 60, advancing: true });
  }
  let n = 0;
  for (const r of raw) {
    store.add(r);
    if (++n % 500 === 0) store.flush(r.t);
  }
  store.flush(now);
  const counts = store.counts();
  t.ok(counts.hours > 80 * 24, `hour rows for the 90 days kept (${counts.hours}), not only 31`);
  const from = now - (now % DAY_MS) - (DAYS - 1) * DAY_MS;
  const days = dailyTallies(store, from, DAYS);
  const expected = Array.from({ length: DAYS }, (_, i) => {
    const inDay = raw.filter((r) => r.t >= from + i * DAY_MS && r.t < from + (i + 1) * DAY_MS);
    return { probes: inDay.length, ok: inDay.filter((r) => r.reachable).length };
  });
  t.same(days, expected, 'each of the 90 days exact');
  const inc = store.openIncident('unreachable', now - 2 * DAY_MS - HOUR_MS, 'x', now - 2 * DAY_MS);
  store.closeIncident(inc.id, now - DAY_MS + HOUR_MS, now - DAY_MS);
  const lines = dailyLines(store, () => [], now, 60_000);
  t.equal(lines.length, DAYS);
  t.equal(lines.at(-1)!.date, new Date(now).toISOString().slice(0, 10));
  t.equal(lines.at(-1)!.uptime, fraction(expected.at(-1)!));
  t.same(
    lines.map((l) => l.incidentCount).slice(-4),
    [0, 1, 1, 0],
    'an incident from the evening of one day to the morning of the next is on both days',
  );
  t.same(lines.at(-3)!.incidents, [
    {
      id: inc.id,
      kind: 'unreachable',
      startedAt: new Date(now - 2 * DAY_MS - HOUR_MS).toISOString(),
      endedAt: new Date(now - DAY_MS + HOUR_MS).toISOString(),
    },
  ]);
  t.equal(lines[0]!.observedSeconds, 86_400, 'a full day observed');
});

t.test('latency percentiles: bounded histograms, within 9.1% above, never below', async (t) => {
  for (const v of [0.05, 0.1, 0.37, 1, 2.5, 9.99, 42, 250, 1_000, 29_999]) {
    const top = bucketTop(bucketOf(v));
    t.ok(top >= v - 1e-9 && top <= Math.max(0.1, v * 1.0906), `${v} ms -> ${top.toFixed(3)} ms`);
  }
  t.equal(bucketOf(1e9), 200, 'a huge value lands in the last bucket');
  const h = new Map<number, number>();
  for (let ms = 1; ms <= 100; ms++) h.set(bucketOf(ms), (h.get(bucketOf(ms)) ?? 0) + 1);
  const p50 = quantile(h, 0.5)!;
  const p95 = quantile(h, 0.95)!;
  t.ok(p50 >= 50 && p50 <= 50 * 1.0906, `p50 of 1..100 ms: ${p50}`);
  t.ok(p95 >= 95 && p95 <= 95 * 1.0906, `p95 of 1..100 ms: ${p95}`);
  t.equal(quantile(new Map(), 0.5), null);
});

t.test('latency by hour: buffered, written with the probes, merged across a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-history-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'uptime.db');
  const now = T0 + 10 * HOUR_MS + 30 * 60_000;
  const a = UptimeStore.open(file, now);
  const la = new LatencyHistory(a);
  // Two hours ago: 1..50 ms; this hour: 1..50 before the restart, 51..100 after.
  for (let i = 1; i <= 50; i++) la.add(now - 2 * HOUR_MS + i, i);
  for (let i = 1; i <= 50; i++) la.add(now - 20 * 60_000 + i, i);
  la.flush(now);
  a.close(now);
  const b = UptimeStore.open(file, now);
  t.teardown(() => b.close(now));
  const lb = new LatencyHistory(b);
  for (let i = 51; i <= 100; i++) lb.add(now + i, i);
  const r = latencyReport(lb, now + 1_000);
  t.equal(r.hours.length, 24);
  t.equal(r.from, new Date(now - (now % HOUR_MS) - 23 * HOUR_MS).toISOString());
  const last = r.hours.at(-1)!;
  t.equal(last.probes, 100, 'the stored part and the buffered part of the hour together');
  t.ok(last.p50Ms! >= 50 && last.p50Ms! <= 54.6, `p50 ${last.p50Ms}`);
  t.ok(last.p95Ms! >= 95 && last.p95Ms! <= 103.7, `p95 ${last.p95Ms}`);
  t.equal(r.hours.at(-3)!.probes, 50, 'two hours ago');
  t.same(r.hours[0], { probes: 0, p50Ms: null, p95Ms: null }, 'an hour without probes');
});

t.test('a store file of the previous schema version opens migrated, its rows kept', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-history-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'uptime.db');
  const s = UptimeStore.open(file, T0);
  s.add({ t: T0, reachable: true, advancing: true });
  s.openIncident('stalled', T0, 'x', T0);
  s.close(T0);
  // Back to the version before the last two (history, then impact and scope): their tables and
  // columns gone, its number set.
  const db = new DatabaseSync(file);
  db.exec(
    'DROP TABLE maintenance; DROP TABLE latency_hours; DROP TABLE component_days; ALTER TABLE incidents DROP COLUMN impact;',
  );
  db.exec(`PRAGMA user_version = ${SCHEMA_VERSION - 2}`);
  db.close();
  const old = new DatabaseSync(file, { readOnly: true });
  t.equal(pragma(old, 'user_version'), SCHEMA_VERSION - 2, 'an earlier version');
  old.close();
  const m = UptimeStore.open(file, T0 + 1_000);
  t.same(m.tally(T0), { probes: 1, ok: 1 }, 'probes kept');
  t.equal(m.openIncidents().length, 1, 'incidents kept');
  t.equal(m.told.recent(0, 10)[0]!.impact, 'minor', "a probe's stall from before impacts: minor");
  const lh = new LatencyHistory(m);
  lh.add(T0 + 1_000, 3);
  lh.flush(T0 + 1_000);
  t.equal(lh.hours(T0, 1)[0]!.probes, 1, 'the new latency table works');
  m.close(T0 + 1_000);
  const raw = new DatabaseSync(file, { readOnly: true });
  t.equal(pragma(raw, 'user_version'), SCHEMA_VERSION);
  raw.close();
});
