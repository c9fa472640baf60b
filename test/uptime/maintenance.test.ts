/**
 * Maintenance windows in the uptime room, with an injected clock and a fleet set by hand: a
 * failure inside a window is `maintenance`, opens no incident and is no data; the window's end
 * opens the incident a failure deserves; windows from the configuration follow a reload with
 * stable ids; admin-made ones are checked, bounded and kept in the store file across a restart;
 * subscribers hear each window start and end.
 */
import t, { type Test } from 'tap';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../../src/config/schema.js';
import { createLogger } from '../../src/log/logger.js';
import { Metrics } from '../../src/metrics/registry.js';
import type { UpstreamView } from '../../src/uptime/checks.js';
import { Uptime, type UptimeSettings } from '../../src/uptime/index.js';
import { Maintenance } from '../../src/uptime/maintenance.js';
import { MAX_ADMIN_WINDOWS, type MaintenanceChange } from '../../src/uptime/maintenance.js';
import type { CallTiming, UpstreamState } from '../../src/upstream/node.js';

const T0 = Date.UTC(2026, 3, 1, 12);
const iso = (t: number): string => new Date(t).toISOString();

class FakeUpstream implements UpstreamView {
  state: UpstreamState = 'healthy';
  head = 100;
  latencyMs = 3;
  retiring = false;
  answers = true;
  ms = 2;
  constructor(readonly name: string) {}
  async call(): Promise<CallTiming> {
    return this.answers
      ? { verdict: { kind: 'result', result: '"0xba"' }, ms: this.ms }
      : { verdict: { kind: 'retry', reason: 'transport', health: true }, ms: 1 };
  }
}

class FakeFleet extends EventEmitter {
  head = 100;
  upstreams = [new FakeUpstream('node-a')];
}

const SETTINGS: UptimeSettings = {
  enabled: true,
  probeIntervalMs: 5_000,
  stallAfterSeconds: 60,
  store: null,
  showUpstreams: false,
  title: 'Test status',
};

function room(t: Test, settings: Partial<UptimeSettings> = {}, now = T0) {
  const fleet = new FakeFleet();
  const clock = { now };
  const uptime = new Uptime(
    { chainId: 186, uptime: { ...SETTINGS, ...settings }, routing: { upstreamTimeoutMs: 1_000 } },
    { fleet, clock: { now: () => clock.now }, redis: null },
    { metrics: new Metrics({ processMetrics: false }), log: createLogger('silent') },
  );
  t.teardown(() => uptime.close());
  const at = async (ms: number): Promise<void> => {
    clock.now = ms;
    await uptime.probe();
  };
  return { uptime, fleet, clock, at };
}

t.test('a window from the configuration: failures inside it are maintenance, no incident, no data', async (t) => {
  const window = { start: iso(T0 + 10_000), end: iso(T0 + 60_000), title: 'Node upgrade' };
  const { uptime, fleet, at } = room(t, { maintenance: [window] });
  const heard: MaintenanceChange[] = [];
  uptime.maintenance.subscribe((c) => heard.push(c));
  await at(T0);
  t.equal(uptime.report()!.state, 'operational');
  t.match(uptime.report()!.maintenance, [{ id: /^config-[0-9a-f]{12}$/, ...window }], 'upcoming: listed');
  fleet.upstreams[0]!.answers = false;
  await at(T0 + 5_000);
  t.equal(uptime.report()!.state, 'down', 'before the window: a failure is a failure');
  t.equal(uptime.report()!.incidents.length, 1);
  fleet.upstreams[0]!.answers = true;
  await at(T0 + 9_000);
  t.equal(uptime.report()!.incidents[0]!.endedAt, iso(T0 + 9_000), 'that outage closed');
  fleet.upstreams[0]!.answers = false;
  for (let s = 10; s < 60; s += 5) await at(T0 + s * 1000);
  const r = uptime.report()!;
  t.equal(r.state, 'maintenance', 'inside: `maintenance`');
  t.same(r.checks.reachable, { ok: false }, 'the check still says what it saw');
  t.equal(r.incidents.length, 1, 'no incident opened inside the window');
  t.same(r.uptime, { '24h': 0.666667, '7d': 0.666667, '30d': 0.666667 }, 'the 10 failed probes inside are no data');
  t.equal(r.observedSeconds['24h'], 15, 'and not observed time');
  t.equal(r.history.maintenance!.filter(Boolean).length, 1, 'the 24 h bar marks the segment');
  t.equal(r.daily.at(-1)!.maintenance, true, 'today is marked');
  t.same(
    heard.map((c) => [c.event, c.window.title, c.at]),
    [['started', 'Node upgrade', iso(T0 + 10_000)]],
  );
  await at(T0 + 60_000);
  const after = uptime.report()!;
  t.equal(after.state, 'down', 'at its end (exclusive): a failure counts again');
  t.match(after.incidents[0], { kind: 'unreachable', startedAt: iso(T0 + 60_000), endedAt: null });
  t.same(after.maintenance, [], 'an ended window is not listed');
  t.same(
    heard.map((c) => c.event),
    ['started', 'ended'],
  );
});

t.test('reload: windows replaced, ids stable, a window taken out while ongoing ends', async (t) => {
  const a = { start: iso(T0 - 1_000), end: iso(T0 + 3_600_000), title: 'A' };
  const b = { start: iso(T0 + 7_200_000), end: iso(T0 + 9_000_000), title: 'B' };
  const { uptime, at, clock } = room(t, { maintenance: [a] });
  const other = room(t, { maintenance: [b, a] });
  const heard: string[] = [];
  uptime.maintenance.subscribe((c) => heard.push(`${c.event} ${c.window.title}`));
  await at(T0);
  await other.at(T0);
  const idA = uptime.report()!.maintenance[0]!.id;
  t.equal(other.uptime.report()!.maintenance[0]!.id, idA, 'the same window has the same id in another room');
  t.same(heard, [], 'a window already under way at start is not told again');
  clock.now = T0 + 1_000;
  uptime.apply({
    uptime: { ...SETTINGS, maintenance: [b] },
    routing: { upstreamTimeoutMs: 1_000 },
  } as unknown as Config);
  t.same(heard, ['ended A'], 'taken out of the configuration while ongoing: ended at once');
  t.same(
    uptime.report()!.maintenance.map((m) => m.title),
    ['B'],
  );
  t.equal(uptime.report()!.maintenance[0]!.id, other.uptime.report()!.maintenance[1]!.id);
});

t.test('admin-made windows: checked, bounded, kept in the store file, ended or removed', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-maint-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = join(dir, 'uptime.db');
  const first = room(t, { store, maintenance: [{ start: iso(T0), end: iso(T0 + 60_000), title: 'cfg' }] });
  await first.at(T0);
  const admin = first.uptime.maintenanceAdmin;
  const body = (start: number, end: number, title = 'work'): unknown => ({ start: iso(start), end: iso(end), title });
  t.match(admin.add(body(T0 + 60_000, T0 + 60_000)), { status: 400, error: /ends before \(or when\) it starts/ });
  t.match(admin.add(body(T0 + 60_000, T0 + 1_000)), { status: 400, error: /ends before/ });
  t.match(admin.add(body(T0 - 60_000, T0 - 1_000)), { status: 400, error: /in the past/ });
  t.match(admin.add(body(T0, T0 + 1_000, 'x'.repeat(201))), { status: 400, error: /at most 200/ });
  t.match(admin.add({ start: '2026-04-01 12:00', end: iso(T0 + 1), title: 'x' }), { status: 400, error: /ISO 8601/ });
  t.match(admin.add({ ...(body(T0, T0 + 1) as object), url: 'x' }), { status: 400, error: /unknown key "url"/ });
  t.match(admin.add([1]), { status: 400 });
  const later = admin.add(body(T0 + 3_600_000, T0 + 7_200_000, 'later'));
  const now = admin.add(body(T0 - 1_000, T0 + 600_000, 'now'));
  t.match(later, { window: { id: /^admin-\d+$/, state: 'upcoming', source: 'admin' } });
  t.match(now, { window: { state: 'ongoing' } });
  t.same(
    first.uptime.report()!.maintenance.map((m) => m.title),
    ['now', 'cfg', 'later'],
    'listed at once, soonest first',
  );
  const cfgId = first.uptime.report()!.maintenance[1]!.id;
  t.match(admin.end(cfgId), { status: 409, error: /uptime\.maintenance/ });
  t.match(admin.end('admin-999'), { status: 404 });
  await first.uptime.close();

  const second = room(t, { store }, T0 + 1_000);
  await second.at(T0 + 1_000);
  const admin2 = second.uptime.maintenanceAdmin;
  t.same(
    second.uptime.report()!.maintenance.map((m) => m.title),
    ['now', 'later'],
    'admin-made windows survive a restart; the configured one went with the configuration',
  );
  const [nowId, laterId] = second.uptime.report()!.maintenance.map((m) => m.id);
  t.match(admin2.end(laterId!), { change: 'removed' }, 'not started: removed');
  t.match(
    admin2.end(nowId!),
    { change: 'ended', window: { end: iso(T0 + 1_000), state: 'over' } },
    'ongoing: ends now',
  );
  t.match(admin2.end(nowId!), { change: 'none' }, 'over: nothing to do');
  t.same(second.uptime.report()!.maintenance, []);
  t.same(
    admin2.list().map((w) => [w.title, w.state]),
    [['now', 'over']],
    'the ended one stays known (the bars still show it); the removed one is gone',
  );
  for (let i = 0; i < MAX_ADMIN_WINDOWS; i++)
    t.ok('window' in admin2.add(body(T0 + 3_600_000 + i, T0 + 7_200_000)), `window ${i}`, { diagnostic: false });
  t.match(admin2.add(body(T0 + 3_600_000, T0 + 7_200_000)), { status: 409, error: /at most 50/ });
});

t.test('a window excuses a failure only when the windows under way cover every node', async (t) => {
  const none = { load: () => [], insert: () => undefined, change: () => false };
  const m = new Maintenance(
    none,
    [
      { start: iso(T0), end: iso(T0 + 60_000), title: 'node-2', scope: ['node-2'] },
      { start: iso(T0 + 30_000), end: iso(T0 + 60_000), title: 'node-0 and node-1', scope: ['node-0', 'node-1'] },
      { start: iso(T0 + 120_000), end: iso(T0 + 180_000), title: 'all' },
    ],
    T0,
  );
  const fleet = ['node-0', 'node-1', 'node-2'];
  t.equal(m.excusing(T0 + 1_000, fleet), null, 'node-2 alone never hides the others');
  t.equal(m.excusing(T0 + 1_000, ['node-2']), m.at(T0 + 1_000), 'a fleet of node-2 alone: excused');
  t.not(m.excusing(T0 + 40_000, fleet), null, 'two windows together cover all three');
  t.equal(m.excusing(T0 + 40_000, [...fleet, 'node-3']), null, 'a fourth node could have answered');
  t.not(m.excusing(T0 + 130_000, fleet), null, '`all` covers every node');
  t.equal(m.excusing(T0 + 130_000, []), m.at(T0 + 130_000), '`all` even with no node');
  t.equal(m.excusing(T0 + 1_000, []), null, 'a scoped window with no node: not excused');
  t.same([...(m.inScope(T0 + 40_000) as Set<string>)].sort(), fleet);
  t.equal(m.inScope(T0 + 130_000), 'all');
});
