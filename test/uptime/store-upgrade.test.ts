/**
 * The store keeps its data across the move from better-sqlite3 to node:sqlite (issue 43):
 * fixtures/store-v4.db was written by Switchyard 0.1.0 at commit 10ffd7d, whose store ran on
 * better-sqlite3 (schema 4, WAL): ten days of 5-minute probes written in flushes (so the three
 * tiers hold rows), 31 probe incidents with one left open, an incident opened by hand with two
 * updates and a post-mortem, a maintenance window, latency hours, a cordon and the head facts.
 * The figures below are what that version read back from the file; this one must read the same,
 * from the file and from the file's bytes as a shared image (what its replicas put in Redis).
 */
import t from 'tap';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LatencyHistory } from '../../src/uptime/store/history-store.js';
import { storedWindows } from '../../src/uptime/store/maintenance-store.js';
import { openImage } from '../../src/uptime/share/store-image.js';
import { DAY_MS, HOUR_MS, UptimeStore } from '../../src/uptime/store/store.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/store-v4.db', import.meta.url));
const T0 = Date.UTC(2026, 0, 1);
const END = T0 + 10 * DAY_MS;

const EXPECTED = {
  counts: { probes: 288, minutes: 1728, hours: 72, incidents: 32 },
  tallyAll: { probes: 2880, ok: 2776 },
  tallyDay: { probes: 288, ok: 278 },
  segments: [12, 12, 12, 12].map((n) => ({ probes: n, ok: n })),
  incidents: 32,
  open: [
    { id: 31, kind: 'stalled', startedAt: 1768089000000, endedAt: null, summary: 'The head has not risen for 60 s' },
  ],
  first: {
    id: 1,
    kind: 'unreachable',
    startedAt: 1767225600000,
    endedAt: 1767226500000,
    summary: 'No node answered eth_chainId with 0xba',
  },
  told: {
    id: 32,
    kind: 'operator',
    startedAt: 1768078800000,
    endedAt: 1768082400000,
    summary: 'Degraded reads on node-b',
    source: 'operator',
    // The version that wrote the file had no impact: an operator's incident takes the default.
    impact: 'minor',
    updates: [
      { status: 'resolved', message: 'Fixed: a disk was full', at: 1768082400000 },
      { status: 'investigating', message: 'Looking into slow eth_getLogs', at: 1768078800000 },
    ],
    postmortem: { markdown: '# What happened\n\nA **full disk** on node-b.', at: 1768086000000 },
  },
  // Nor scopes: a window it kept covers every node, as every window then did.
  windows: [{ id: 1, title: 'Database migration', start: 1768093200000, end: 1768096800000, scope: 'all' }],
  latency: [
    { probes: 12, p50Ms: 11.7, p95Ms: 18.1 },
    { probes: 12, p50Ms: 23.5, p95Ms: 30.4 },
    { probes: 12, p50Ms: 36.2, p95Ms: 43.1 },
  ],
  cordons: [['node-b', '{"reason":"disk replacement","at":1768086000000}']],
  head: '123456',
  headRoseAt: '1768089595000',
};

function readBack(s: UptimeStore) {
  return {
    counts: s.counts(),
    tallyAll: s.tally(0),
    tallyDay: s.tally(END - DAY_MS),
    segments: s.segments(END - 4 * HOUR_MS, HOUR_MS, 4),
    incidents: s.incidents(0, 1000).length,
    open: s.openIncidents(),
    first: s.incidents(0, 1000).at(-1),
    told: s.told.get(32),
    windows: storedWindows(s, 0),
    latency: new LatencyHistory(s).hours(END - 3 * HOUR_MS, 3),
    cordons: [...s.cordons()],
    head: s.getMeta('head'),
    headRoseAt: s.getMeta('headRoseAt'),
  };
}

t.test('a store file written by the better-sqlite3 version opens with everything it held', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-upgrade-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'uptime.db');
  copyFileSync(FIXTURE, file);
  const s = UptimeStore.open(file, END + 1_000);
  t.equal(s.persistent, true, 'opened as a file, not refused into memory');
  t.same(JSON.parse(JSON.stringify(readBack(s))), EXPECTED);
  // And it goes on: a new probe and an incident land after the old rows, with the next id.
  s.add({ t: END + 5_000, reachable: true, advancing: true });
  const next = s.openIncident('unreachable', END + 5_000, 'again', END + 5_000);
  t.equal(next.id, 33, 'ids continue after the old ones');
  s.close(END + 6_000);
  const again = UptimeStore.open(file, END + 7_000);
  t.same(again.tally(END), { probes: 1, ok: 1 }, 'a probe written by this version is read back');
  again.close(END + 7_000);
});

t.test('its bytes as a shared image (what that version put in Redis) open in memory alike', async (t) => {
  const opened = openImage(readFileSync(FIXTURE));
  if (!('db' in opened)) throw new Error(`refused: ${opened.refused}`);
  const s = UptimeStore.memory();
  s.adopt(opened.db);
  t.equal(s.persistent, false);
  t.same(JSON.parse(JSON.stringify(readBack(s))), EXPECTED);
  t.equal(s.openIncident('unreachable', END + 5_000, 'again', END + 5_000).id, 33, 'AUTOINCREMENT carried over');
  s.close(END + 6_000);
});
