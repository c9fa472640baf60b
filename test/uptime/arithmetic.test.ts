/**
 * The uptime arithmetic with an injected clock, no network: windows (24 h / 7 d / 30 d), time
 * without probes counted as no data (never downtime), compaction into minute and hour buckets
 * giving the same figures as the raw probes, the head watch (stall, restart, another chain), and
 * when incidents open and close.
 */
import t from 'tap';
import { HeadWatch } from '../../src/uptime/checks.js';
import { HISTORY_SEGMENTS, SEGMENT_MS, WINDOWS, fraction, history, uptimeWindows } from '../../src/uptime/report.js';
import { DAY_MS, HOUR_MS, MINUTE_MS, UptimeStore, type ProbeRow } from '../../src/uptime/store/store.js';
import { incidentChanges, overallState, type ProbeResult } from '../../src/uptime/tracker.js';

/** An hour boundary, so every window border falls on a bucket border and the figures are exact. */
const T0 = Date.UTC(2026, 0, 1);

/** Feeds probes to a store as the running room would: flushing (and so compacting) every `every` probes. */
function feed(store: UptimeStore, rows: Iterable<ProbeRow>, every = 12): void {
  let n = 0;
  let last = 0;
  for (const r of rows) {
    store.add(r);
    last = r.t;
    if (++n % every === 0) store.flush(r.t);
  }
  store.flush(last);
}

function* probes(
  from: number,
  to: number,
  stepMs: number,
  ok: (t: number) => boolean = () => true,
): Generator<ProbeRow> {
  for (let t = from; t < to; t += stepMs) yield { t, reachable: true, advancing: ok(t) };
}

t.test('windows count probes with both checks ok; no probes is null, not 0', async (t) => {
  const store = UptimeStore.memory();
  const now = T0 + 40 * DAY_MS;
  t.same(
    uptimeWindows(store, now),
    { '24h': null, '7d': null, '30d': null },
    'an empty store has no data in any window',
  );
  // 10 days ago: an hour with every probe failing reachability. Last hour: 1 in 4 failing advancing.
  feed(store, probes(now - 10 * DAY_MS, now - 10 * DAY_MS + HOUR_MS, 5_000), 12);
  store.add({ t: now - 10 * DAY_MS + HOUR_MS, reachable: false, advancing: true });
  feed(store, [...probes(now - HOUR_MS, now, 5_000, (t) => (t / 5_000) % 4 !== 0)]);
  const w = uptimeWindows(store, now);
  t.equal(w['24h'], 0.75, '24 h: only the last hour has probes; a quarter of them failed');
  t.equal(w['7d'], 0.75, '7 d: same probes; the 23 h without any are not downtime');
  // 30 d: 720 + 1 probes 10 days ago (1 failed) and 720 in the last hour (180 failed).
  t.equal(
    w['30d'],
    fraction({ probes: 1441, ok: 1441 - 1 - 180 }),
    '30 d: every probe of both periods, nothing for the gap',
  );
  t.equal(overallState(true, true), 'operational');
  t.equal(overallState(true, false), 'degraded');
  t.equal(overallState(false, true), 'down');
  t.equal(overallState(false, false), 'down');
});

t.test('the history bar: 90 aligned segments over the last day, null where nothing was probed', async (t) => {
  const store = UptimeStore.memory();
  const now = T0 + 3 * DAY_MS + 5 * 60_000;
  // Probes only in the last 3 segments; the one before the last has a failure in it.
  const first = Math.floor(now / SEGMENT_MS) * SEGMENT_MS - 2 * SEGMENT_MS;
  feed(
    store,
    probes(first, now, 10_000, (t) => t !== first + SEGMENT_MS + 30_000),
  );
  const h = history(store, now);
  t.equal(h.segments.length, HISTORY_SEGMENTS);
  t.equal(h.segmentSeconds, 960, '16-minute segments');
  t.equal(Date.parse(h.from) + HISTORY_SEGMENTS * SEGMENT_MS > now, true, 'the last segment holds now');
  t.same(
    h.segments.slice(0, HISTORY_SEGMENTS - 3),
    Array(HISTORY_SEGMENTS - 3).fill(null),
    'segments without probes are null',
  );
  t.same(h.segments.slice(-3), [1, fraction({ probes: 96, ok: 95 }), 1]);
});

t.test('compaction: a day of probes, a week of minutes, then hours; figures match the raw probes', async (t) => {
  const store = UptimeStore.memory();
  const now = T0 + 35 * DAY_MS;
  const raw: ProbeRow[] = [];
  // A probe every 30 s for 35 days; a failing hour each day at a different hour, and failing
  // minutes scattered, so each tier holds failures.
  const ok = (t: number): boolean => {
    const day = Math.floor((t - T0) / DAY_MS);
    const hourOfDay = Math.floor(((t - T0) % DAY_MS) / HOUR_MS);
    return hourOfDay !== day % 24 && Math.floor(t / MINUTE_MS) % 97 !== 0;
  };
  for (const r of probes(T0, now, 30_000, ok)) raw.push(r);
  feed(store, raw, 120);
  const expect = (fromMs: number): number | null => {
    const inWindow = raw.filter((r) => r.t >= fromMs);
    return fraction({ probes: inWindow.length, ok: inWindow.filter((r) => r.reachable && r.advancing).length });
  };
  const w = uptimeWindows(store, now);
  t.equal(w['24h'], expect(now - WINDOWS['24h']), '24 h from per-probe rows');
  t.equal(w['7d'], expect(now - WINDOWS['7d']), '7 d from probes + minute buckets');
  t.equal(w['30d'], expect(now - WINDOWS['30d']), '30 d from probes + minutes + hour buckets');
  t.ok(w['30d']! < 1 && w['30d']! > 0.9, `30 d uptime ${w['30d']}`);
  const c = store.counts();
  t.ok(c.probes <= DAY_MS / 30_000 + 2 + 2, `per-probe rows only for a day (${c.probes})`);
  t.ok(c.minutes >= 6 * 1440 && c.minutes <= 6 * 1440 + 60, `minute rows for the six days before (${c.minutes})`);
  t.ok(c.hours >= 24 * 27 && c.hours <= 24 * 28 + 1, `hour rows for the rest, all 35 days kept (${c.hours})`);
  // Aggregates are sums: compacting again later changes nothing already counted.
  store.flush(now);
  t.same(uptimeWindows(store, now), w, 'a second compaction at the same time changes nothing');
});

t.test('the head watch: rises, stalls, restarts, another chain', async (t) => {
  const w = new HeadWatch(60_000, T0, null);
  t.same(
    w.judge(T0 + 1_000),
    { advancing: null, head: null, ageMs: null },
    'no head yet, within the grace: not judged',
  );
  t.equal(w.judge(T0 + 61_000).advancing, false, 'no head for stallAfterSeconds after start: not advancing');
  w.saw(10, T0 + 2_000);
  t.same(w.judge(T0 + 30_000), { advancing: true, head: 10, ageMs: 28_000 });
  t.same(
    w.judge(T0 + 62_000),
    { advancing: true, head: 10, ageMs: 60_000 },
    'exactly stallAfterSeconds is still advancing',
  );
  t.equal(w.judge(T0 + 62_001).advancing, false, 'past it: stalled');
  w.saw(9, T0 + 63_000);
  t.equal(w.judge(T0 + 63_000).advancing, false, 'a lower head (a node left) is not a rise');
  w.saw(10, T0 + 64_000);
  t.equal(w.judge(T0 + 64_000).advancing, false, 'coming back to the same head is not a rise either');
  w.saw(11, T0 + 65_000);
  t.same(w.judge(T0 + 65_000), { advancing: true, head: 11, ageMs: 0 });

  const remembered = w.remember();
  t.same(remembered, { head: 11, roseAt: T0 + 65_000 });
  const same = new HeadWatch(60_000, T0 + 200_000, remembered);
  same.saw(11, T0 + 200_100);
  t.equal(
    same.judge(T0 + 200_100).advancing,
    false,
    'after a restart, a head that has not moved since before it is still stalled',
  );
  const moved = new HeadWatch(60_000, T0 + 200_000, remembered);
  moved.saw(12, T0 + 200_100);
  t.same(moved.judge(T0 + 200_100), { advancing: true, head: 12, ageMs: 0 });
  const fresh = new HeadWatch(60_000, T0 + 200_000, remembered);
  fresh.saw(3, T0 + 200_100);
  t.same(
    fresh.judge(T0 + 200_100),
    { advancing: true, head: 3, ageMs: 0 },
    'a lower head on first sight is another chain: start over',
  );
});

t.test('incidents open on failure and close on recovery', async (t) => {
  const r = (reachable: boolean, advancing: boolean | null, reachableForMs = reachable ? 600_000 : 0): ProbeResult => ({
    t: T0,
    reachable,
    reachableForMs,
    advancing,
    head: 7,
    stallAfterSeconds: 60,
    chainId: 186,
  });
  const none = new Set<'unreachable' | 'stalled'>();
  t.same(incidentChanges(none, r(true, true)), []);
  t.match(incidentChanges(none, r(false, true)), [{ open: 'unreachable', summary: /eth_chainId with 0xba/ }]);
  t.same(
    incidentChanges(none, r(false, false)),
    [{ open: 'unreachable', summary: 'No node answered eth_chainId with 0xba' }],
    'unreachable: no stall is opened on top',
  );
  t.match(incidentChanges(none, r(true, false)), [
    { open: 'stalled', summary: /more than 60 s \(fleet head at block 7\)/ },
  ]);
  t.same(incidentChanges(none, r(true, null)), [], 'not judged yet: nothing opens');
  t.same(
    incidentChanges(new Set(['unreachable'] as const), r(true, false, 0)),
    [{ close: 'unreachable' }],
    'the first probe after an outage closes it and opens no stall yet',
  );
  t.same(
    incidentChanges(none, r(true, false, 59_999)),
    [],
    'nodes answering for less than stallAfterSeconds: no stall yet',
  );
  t.match(
    incidentChanges(none, r(true, false, 60_000)),
    [{ open: 'stalled' }],
    'answering for stallAfterSeconds with no new head: stalled',
  );
  const stalled = new Set(['stalled'] as const);
  t.same(
    incidentChanges(stalled, r(false, false)),
    [{ open: 'unreachable', summary: 'No node answered eth_chainId with 0xba' }],
    'a stall stays open when the nodes go away',
  );
  t.same(incidentChanges(stalled, r(true, null)), [], 'not judged: an open stall stays open');
  t.same(incidentChanges(stalled, r(true, true)), [{ close: 'stalled' }]);
  const both = new Set(['stalled', 'unreachable'] as const);
  t.same(incidentChanges(both, r(true, true)), [{ close: 'unreachable' }, { close: 'stalled' }]);
});
