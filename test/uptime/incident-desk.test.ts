/**
 * The incident desk in memory (uptime.store: null) with an injected clock: what listeners hear
 * (opened, updated, resolved; a probe's incident too), incidentsWithUpdates, reopening a
 * hand-opened incident, the bounds (open incidents by hand, updates per incident), and a store
 * file written by the schema before incidents had updates, migrated with its incidents kept.
 */
import t, { type Test } from 'tap';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createLogger } from '../../src/log/logger.js';
import { Metrics } from '../../src/metrics/registry.js';
import { ARCHIVE_KEPT_MS, MAX_OPEN_BY_HAND, MAX_UPDATES } from '../../src/uptime/store/incident-store.js';
import type { IncidentEvent } from '../../src/uptime/incidents.js';
import { Uptime } from '../../src/uptime/index.js';
import { SCHEMA_VERSION, UptimeStore } from '../../src/uptime/store/store.js';
import type { CallTiming } from '../../src/upstream/node.js';
import { pragma } from '../../src/uptime/store/sqlite.js';

const T0 = Date.UTC(2026, 10, 1, 12);

/** One node whose answers a test turns off: the probes' reachable check. */
class Node {
  state = 'healthy' as const;
  head = 100;
  latencyMs = 1;
  retiring = false;
  answers = true;
  readonly name = 'node-a';
  async call(): Promise<CallTiming> {
    return this.answers
      ? { verdict: { kind: 'result', result: '"0xba"' }, ms: 1 }
      : { verdict: { kind: 'retry', reason: 'transport', health: true }, ms: 1 };
  }
}

function room(t: Test): { uptime: Uptime; node: Node; clock: { now: number }; heard: IncidentEvent[] } {
  const node = new Node();
  const fleet = Object.assign(new EventEmitter(), { head: 100, upstreams: [node], lag: () => 0 });
  const clock = { now: T0 };
  const uptime = new Uptime(
    {
      chainId: 186,
      uptime: {
        enabled: true,
        probeIntervalMs: 5_000,
        stallAfterSeconds: 60,
        store: null,
        showUpstreams: false,
        title: 'T',
      },
      routing: { upstreamTimeoutMs: 1_000 },
    },
    { fleet, clock: { now: () => clock.now }, redis: null },
    { metrics: new Metrics({ processMetrics: false }), log: createLogger('silent') },
  );
  t.teardown(() => uptime.close());
  const heard: IncidentEvent[] = [];
  uptime.desk.onIncident((e) => heard.push(e));
  return { uptime, node, clock, heard };
}

const said = (heard: IncidentEvent[]): string[] =>
  heard.map((e) => `${e.type} ${e.incident.id} ${e.update?.status ?? '-'}`);

t.test('listeners hear every incident opened, updated and resolved, by hand or by the probes', async (t) => {
  const { uptime, node, clock, heard } = room(t);
  t.equal(uptime.desk.onIncident(() => undefined) instanceof Function, true, 'onIncident returns how to stop');
  uptime.desk.onIncident(() => {
    throw new Error('a listener that fails');
  });
  await uptime.probe();
  const a = uptime.desk.open('Slow eth_call', 'investigating', 'Looking.');
  if (a === null || 'refused' in a) throw new Error('not opened');
  clock.now += 1_000;
  uptime.desk.update(a.id, 'resolved', 'Fixed.');
  clock.now += 1_000;
  const reopened = uptime.desk.update(a.id, 'monitoring', 'It came back.');
  t.match(reopened, { endedAt: null }, 'an update other than resolved reopens a hand-opened incident');
  uptime.desk.update(a.id, 'resolved', 'Fixed again.');
  t.match(uptime.report()!.incidents[0], { id: a.id, source: 'operator' }, 'the report shows it before the next probe');

  node.answers = false;
  clock.now += 5_000;
  await uptime.probe();
  const probe = uptime.report()!.incidents.find((i) => i.kind === 'unreachable')!;
  uptime.desk.update(probe.id, 'resolved', 'We think it is back.');
  t.equal(uptime.desk.get(probe.id)!.endedAt, null, "a probe's incident stays open on a resolved update");
  node.answers = true;
  clock.now += 5_000;
  await uptime.probe();
  t.same(said(heard), [
    `opened ${a.id} investigating`,
    `resolved ${a.id} resolved`,
    `updated ${a.id} monitoring`,
    `resolved ${a.id} resolved`,
    `opened ${probe.id} -`,
    `updated ${probe.id} resolved`,
    `resolved ${probe.id} -`,
  ]);
  const all = uptime.desk.incidentsWithUpdates();
  t.same(
    all.map((i) => [i.id, i.source, i.updates.length]),
    [
      [probe.id, 'probe', 1],
      [a.id, 'operator', 4],
    ],
    'incidentsWithUpdates: newest first, with their updates',
  );
  t.same(uptime.desk.incidentsWithUpdates(clock.now), [], 'since a time after both');
  t.equal(uptime.status().persistent, false, 'all of it in memory');
});

t.test('bounds: hand-opened incidents open at once, updates per incident', async (t) => {
  const { uptime } = room(t);
  for (let n = 0; n < MAX_OPEN_BY_HAND; n++) uptime.desk.open(`i${n}`, 'investigating', 'm');
  t.match(uptime.desk.open('one more', 'investigating', 'm'), { refused: 'full', why: /resolve one first/ });
  const r = uptime.desk.open('over already', 'resolved', 'm');
  t.match(r, { refused: 'full' }, 'even one that opens resolved waits');
  const first = uptime.desk.incidentsWithUpdates().at(-1)!;
  for (let n = 1; n < MAX_UPDATES; n++) uptime.desk.update(first.id, 'monitoring', `u${n}`);
  t.match(uptime.desk.update(first.id, 'monitoring', 'one more'), { refused: 'full', why: /50 updates/ });
  t.match(uptime.desk.update(424242, 'monitoring', 'm'), { refused: 'unknown' });
});

t.test('a store file of the schema before updates: migrated, its incidents kept as the probes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-incidents-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'uptime.db');
  const old = new DatabaseSync(file);
  old.exec(`CREATE TABLE probes (t INTEGER PRIMARY KEY, reachable INTEGER NOT NULL, advancing INTEGER NOT NULL);
   CREATE TABLE rollups (size INTEGER NOT NULL, t INTEGER NOT NULL, probes INTEGER NOT NULL, ok INTEGER NOT NULL,
     reachable INTEGER NOT NULL, advancing INTEGER NOT NULL, PRIMARY KEY (size, t)) WITHOUT ROWID;
   CREATE TABLE incidents (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, started_at INTEGER NOT NULL,
     ended_at INTEGER, summary TEXT NOT NULL);
   CREATE INDEX incidents_started ON incidents (started_at);
   CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
   CREATE TABLE cordons (name TEXT PRIMARY KEY, value TEXT NOT NULL);
   INSERT INTO incidents (kind, started_at, ended_at, summary) VALUES ('stalled', ${T0}, ${T0 + 60_000}, 'old');`);
  old.exec('PRAGMA user_version = 2');
  old.close();
  const store = UptimeStore.open(file, T0 + 120_000);
  t.teardown(() => store.close(T0 + 120_000));
  const [kept] = store.told.recent(0, 10);
  t.match(kept, { id: 1, kind: 'stalled', source: 'probe', summary: 'old', updates: [], postmortem: null });
  t.match(store.told.update(1, 'resolved', 'Explained.', T0 + 120_000), { updates: [{ status: 'resolved' }] });
  const raw = new DatabaseSync(file, { readOnly: true });
  t.teardown(() => raw.close());
  t.ok(SCHEMA_VERSION >= 3, 'at the current schema');
  t.equal(pragma(raw, 'user_version'), SCHEMA_VERSION);
});

t.test('closed incidents are kept a year (with their updates); open ones stay', async (t) => {
  const store = UptimeStore.memory();
  t.teardown(() => store.close(T0));
  const over = store.told.open('over', 'resolved', 'done', T0);
  const open = store.told.open('still open', 'investigating', 'looking', T0);
  if ('refused' in over || 'refused' in open) throw new Error('not opened');
  store.flush(T0 + ARCHIVE_KEPT_MS - 1);
  t.equal(store.told.archive(0, 10).total, 2, 'just short of the year: both');
  store.flush(T0 + ARCHIVE_KEPT_MS + 1);
  t.same(
    store.told.archive(0, 10).incidents.map((i) => i.summary),
    ['still open'],
    'past it: the closed one is gone, the open one stays',
  );
  t.equal(store.told.get(over.id), null);
  t.equal(store.told.get(open.id)!.updates.length, 1);
});
