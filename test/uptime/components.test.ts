/**
 * Per-component history (SPEC 12.3, issue 45 item 6) with an injected clock, no network: each
 * probe counts for each check and each node on its own, so a node that fails while the others
 * answer has its own bad day; a node cordoned or in a window's scope, a node not yet judged and
 * a probe excused by maintenance are no data; the days survive the store file being reopened.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FleetView, UpstreamView } from '../../src/uptime/checks.js';
import { ComponentHistory, componentLines, tallyComponents } from '../../src/uptime/components.js';
import { DAY_MS, UptimeStore } from '../../src/uptime/store/store.js';
import type { UpstreamState } from '../../src/upstream/node.js';

const T0 = Date.UTC(2026, 5, 1);
const STEP = 60_000;

function fleet(states: Record<string, UpstreamState>, cordoned: string[] = []): FleetView {
  const upstreams = Object.entries(states).map(
    ([name, state]) =>
      ({
        name,
        state,
        head: 1,
        latencyMs: 1,
        retiring: false,
        call: () => Promise.reject(new Error('not asked')),
      }) as UpstreamView,
  );
  const cordons = new Map(cordoned.map((n) => [n, { reason: null, at: T0 }]));
  return { head: 1, upstreams, cordons };
}

const ok = { reachable: true, advancing: true, excused: false };
const lines = (history: ComponentHistory, f: FleetView, from: number) =>
  componentLines(history, f, new Set(), ok, { showUpstreams: true, probeIntervalMs: STEP, from, days: 2 });

t.test('a node failing while the others answer has its own bad day', async (t) => {
  const history = new ComponentHistory(UptimeStore.memory());
  const good = fleet({ a: 'healthy', b: 'healthy' });
  const bDown = fleet({ a: 'healthy', b: 'down' });
  // Day 1: b down for the first 6 hours of 24. Day 2: all well.
  for (let t = T0; t < T0 + 2 * DAY_MS; t += STEP) {
    const down = t < T0 + 6 * 3_600_000;
    tallyComponents(history, down ? bDown : good, new Set(), t, ok);
  }
  const byName = new Map(lines(history, good, T0).map((c) => [c.name, c]));
  t.same(byName.get('reachable')!.days, [1, 1], 'the checks held');
  t.same(byName.get('a')!.days, [1, 1], 'node a held');
  t.same(byName.get('b')!.days, [0.75, 1], 'node b: its own 6 bad hours');
  t.equal(byName.get('b')!.uptime, 0.875, 'its 30-day figure over its own days');
  t.equal(lines(history, bDown, T0).find((c) => c.name === 'b')!.state, 'down', 'its state now');
});

t.test('cordoned, in a window, not yet judged, excused: no data, not a failure', async (t) => {
  const history = new ComponentHistory(UptimeStore.memory());
  const f = fleet({ a: 'down', b: 'down', c: 'connecting' }, ['a']);
  for (let t = T0; t < T0 + DAY_MS; t += STEP) tallyComponents(history, f, new Set(['b']), t, ok);
  tallyComponents(history, fleet({}), 'all', T0 + DAY_MS, { reachable: false, advancing: false, excused: true });
  const byName = new Map(lines(history, f, T0).map((c) => [c.name, c]));
  t.same(byName.get('a')!.days, [null, null], 'cordoned');
  t.same(byName.get('b')!.days, [null, null], 'in scope of a window');
  t.same(byName.get('c')!.days, [null, null], 'connecting');
  t.same(byName.get('reachable')!.days, [1, null], 'an excused probe is no data for the checks');
  t.equal(byName.get('a')!.state, 'maintenance');
});

t.test('the days are written with the probes and read back after a reopen', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-components-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'uptime.db');
  const store = UptimeStore.open(path, T0);
  const history = new ComponentHistory(store);
  const f = fleet({ a: 'healthy', b: 'quarantined' });
  for (let t = T0; t < T0 + 10 * STEP; t += STEP) tallyComponents(history, f, new Set(), t, ok);
  history.flush(T0 + 10 * STEP);
  store.close(T0 + 10 * STEP);
  const again = new ComponentHistory(UptimeStore.open(path, T0 + 11 * STEP));
  const days = again.days(
    [
      { kind: 'upstream', name: 'a' },
      { kind: 'upstream', name: 'b' },
    ],
    T0,
    1,
  );
  t.same(days.get('upstream:a'), [{ probes: 10, ok: 10 }]);
  t.same(days.get('upstream:b'), [{ probes: 10, ok: 0 }]);
});
