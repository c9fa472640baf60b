/**
 * The uptime room as a whole with an injected clock and a fleet set by hand (no network, no
 * timers): probes at chosen times open and close incidents at those times, the report and the
 * metrics follow, and a second room on the same store file carries on where the first stopped.
 */
import t, { type Test } from 'tap';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/log/logger.js';
import { Metrics } from '../../src/metrics/registry.js';
import type { UpstreamView } from '../../src/uptime/checks.js';
import { Uptime, type UptimeSettings } from '../../src/uptime/index.js';
import { UptimeStore } from '../../src/uptime/store/store.js';
import type { CallTiming, UpstreamState } from '../../src/upstream/node.js';
import { metricSamples } from '../helpers/metrics-text.js';

const T0 = Date.UTC(2026, 3, 1, 12);

class FakeUpstream implements UpstreamView {
  state: UpstreamState = 'healthy';
  head = 100;
  latencyMs = 3;
  retiring = false;
  answers = true;
  chainId = '"0xba"';
  constructor(readonly name: string) {}
  async call(method: string): Promise<CallTiming> {
    if (method !== 'eth_chainId') throw new Error(`unexpected ${method}`);
    return this.answers
      ? { verdict: { kind: 'result', result: this.chainId }, ms: 1 }
      : { verdict: { kind: 'retry', reason: 'transport', health: true }, ms: 1 };
  }
}

class FakeFleet extends EventEmitter {
  head = -1;
  upstreams = [new FakeUpstream('node-a'), new FakeUpstream('node-b')];
  lag(u: FakeUpstream): number {
    return this.head < 0 ? 0 : this.head - u.head;
  }
  /** A new fleet head, announced as the real fleet does. */
  rise(head: number): void {
    this.head = head;
    this.emit('head', head);
  }
}

const SETTINGS: UptimeSettings = {
  enabled: true,
  probeIntervalMs: 5_000,
  stallAfterSeconds: 60,
  store: null,
  showUpstreams: true,
  title: 'Test status',
};

function room(
  t: Test,
  settings: Partial<UptimeSettings> = {},
): { uptime: Uptime; fleet: FakeFleet; clock: { now: number }; metrics: Metrics } {
  const fleet = new FakeFleet();
  const clock = { now: T0 };
  const metrics = new Metrics({ processMetrics: false });
  const uptime = new Uptime(
    { chainId: 186, uptime: { ...SETTINGS, ...settings }, routing: { upstreamTimeoutMs: 1_000 } },
    { fleet, clock: { now: () => clock.now }, redis: null },
    { metrics: metrics, log: createLogger('silent') },
  );
  t.teardown(() => uptime.close());
  return { uptime, fleet, clock, metrics };
}

async function gauge(metrics: Metrics, kind: string): Promise<number | undefined> {
  return metricSamples(await metrics.registry.metrics(), 'switchyard_uptime_incident_open', { kind })[0];
}

t.test('probes at chosen times: a stall and an outage open and close exactly then', async (t) => {
  const { uptime, fleet, clock, metrics } = room(t);
  t.equal(uptime.report(), null, 'no report before the first probe');
  fleet.rise(100);
  await uptime.probe();
  t.match(uptime.report(), {
    state: 'operational',
    checkedAt: new Date(T0).toISOString(),
    checks: { reachable: { ok: true }, advancing: { ok: true, head: '0x64', headAgeSeconds: 0 } },
    uptime: { '24h': 1 },
  });

  // 60 s without a new head is still advancing; the probe after it is not.
  for (let s = 5; s <= 60; s += 5) {
    clock.now = T0 + s * 1000;
    await uptime.probe();
  }
  t.equal(uptime.report()!.state, 'operational', 'exactly stallAfterSeconds: still advancing');
  clock.now = T0 + 65_000;
  await uptime.probe();
  const r = uptime.report()!;
  t.match(r, { state: 'degraded', checks: { advancing: { ok: false, headAgeSeconds: 65 } } });
  t.same(r.incidents, [
    {
      id: 1,
      kind: 'stalled',
      startedAt: new Date(T0 + 65_000).toISOString(),
      endedAt: null,
      summary: 'The chain did not advance for more than 60 s (fleet head at block 100)',
      source: 'probe',
      impact: 'minor',
      updates: [],
      postmortem: false,
    },
  ]);
  t.equal(await gauge(metrics, 'stalled'), 1);

  clock.now = T0 + 67_000;
  fleet.rise(101);
  clock.now = T0 + 70_000;
  await uptime.probe();
  t.match(
    uptime.report(),
    { state: 'operational', checks: { advancing: { ok: true, head: '0x65', headAgeSeconds: 3 } } },
    'the head age counts from the rise (the fleet event), not from the probe',
  );
  t.equal(
    uptime.report()!.incidents[0]!.endedAt,
    new Date(T0 + 70_000).toISOString(),
    'closed at the probe that saw the rise',
  );
  t.equal(await gauge(metrics, 'stalled'), 0);

  for (const u of fleet.upstreams) {
    u.answers = false;
    u.state = 'down';
  }
  clock.now = T0 + 75_000;
  await uptime.probe();
  t.match(uptime.report(), {
    state: 'down',
    checks: { reachable: { ok: false } },
    incidents: [{ id: 2, kind: 'unreachable', endedAt: null }, { id: 1 }],
  });
  t.match(uptime.report()!.upstreams, [
    { name: 'node-a', state: 'down', lag: null, latencyMs: null },
    { name: 'node-b' },
  ]);
  // One node back, but on another chain: still unreachable.
  fleet.upstreams[0]!.answers = true;
  fleet.upstreams[0]!.chainId = '"0x1"';
  clock.now = T0 + 80_000;
  await uptime.probe();
  t.equal(uptime.report()!.state, 'down', 'a node on another chain does not count');
  fleet.upstreams[1]!.answers = true;
  fleet.upstreams[1]!.state = 'healthy';
  clock.now = T0 + 85_000;
  await uptime.probe();
  t.match(uptime.report(), {
    state: 'operational',
    incidents: [{ id: 2, kind: 'unreachable', endedAt: new Date(T0 + 85_000).toISOString() }, { id: 1 }],
  });
  // 18 probes (0, 5 ... 60, 65 ... 85 s): 3 failed (the stall at 65 s, the outage at 75 and 80 s).
  t.equal(uptime.report()!.uptime['24h'], Math.round((15 / 18) * 1e6) / 1e6);
  const probes = metricSamples(await metrics.registry.metrics(), 'switchyard_uptime_probes_total', {
    check: 'reachable',
    result: 'fail',
  });
  t.same(probes, [2]);
});

t.test('a second room on the same store carries on: incidents, history, the stalled head', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-uptime-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = join(dir, 'uptime.db');
  const first = room(t, { store });
  first.fleet.rise(500);
  for (let s = 0; s <= 90; s += 5) {
    first.clock.now = T0 + s * 1000;
    await first.uptime.probe();
  }
  t.equal(first.uptime.report()!.state, 'degraded');
  await first.uptime.close();

  const second = room(t, { store });
  second.clock.now = T0 + 300_000;
  second.fleet.rise(500);
  await second.uptime.probe();
  const r = second.uptime.report()!;
  t.match(r.incidents, [{ id: 1, kind: 'stalled', endedAt: null }], 'the open stall is still open after the restart');
  t.equal(r.checks.advancing.ok, false, 'the head has not moved since before the restart: still stalled');
  t.equal(r.checks.advancing.headAgeSeconds, 300, 'its age counts from the rise seen before the restart');
  t.equal(
    r.uptime['24h'],
    Math.round((13 / 20) * 1e6) / 1e6,
    'the probes before the restart count (12 advancing up to 60 s, 7 stalled after), plus this one',
  );
  second.fleet.rise(501);
  second.clock.now = T0 + 305_000;
  await second.uptime.probe();
  t.match(second.uptime.report()!.incidents, [{ id: 1, endedAt: new Date(T0 + 305_000).toISOString() }]);
});

t.test('a failing file moves to memory with what it held', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-uptime-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = UptimeStore.open(join(dir, 'uptime.db'), T0);
  for (let i = 0; i < 30; i++) store.add({ t: T0 + i * 5_000, reachable: i % 3 !== 0, advancing: true });
  store.flush(T0 + 150_000);
  store.add({ t: T0 + 150_000, reachable: true, advancing: true });
  const inc = store.openIncident('stalled', T0 + 150_000, 'x', T0 + 150_000);
  t.equal(store.toMemory(), true);
  t.equal(store.persistent, false);
  t.same(store.tally(T0), { probes: 31, ok: 21 }, 'every probe carried over');
  t.same(store.openIncidents(), [inc]);
  store.closeIncident(inc.id, T0 + 160_000, T0 + 160_000);
  t.equal(store.incidents(T0, 10)[0]!.endedAt, T0 + 160_000, 'and it keeps working in memory');
  store.close(T0 + 160_000);
});
