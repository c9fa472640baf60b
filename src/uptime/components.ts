/**
 * Components (SPEC 12.3): each check (`reachable`, `advancing`) and, with showUpstreams, each
 * upstream, with its own state now and a tally per UTC day for its 90 daily bars.
 *
 * A check's day counts the probes where it held. An upstream's day counts the probes where the
 * fleet saw it healthy (its routing health, SPEC 4.1, and a head that moves with the chain); a
 * probe while it is cordoned or in a maintenance window's scope is no data for it, as a probe
 * inside a covering window is for the checks. Days are kept in the store (component_days) like
 * the latency hours: buffered, written in the probes' transaction, kept RETAIN_MS.
 * Owns: the component_days table and what a component's state is. Refuses: the page (page-components.ts).
 */
import type { FleetView } from './checks.js';
import { DAY_MS, RETAIN_MS, floorTo, type Tally, type UptimeStore } from './store/store.js';

export type ComponentKind = 'check' | 'upstream';
export type ComponentState = 'operational' | 'degraded' | 'down' | 'maintenance';

/** A component in uptime.json: `uptime` over 30 days (null without data), `days` aligned with `daily`. */
export interface ComponentLine {
  name: string;
  kind: ComponentKind;
  state: ComponentState;
  uptime: number | null;
  /** Seconds of the 30 days with data for it (the page's data rule, figures.ts). */
  observedSeconds: number;
  days: (number | null)[];
}

/** Day tallies waiting to be written, at most (a store that keeps failing must not grow memory). */
const MAX_PENDING = 5_000;

const key = (kind: ComponentKind, name: string): string => `${kind}:${name}`;

/** What a node's routing state and the chain's advance make of it on the page. */
export function upstreamState(state: string, advancing: boolean, cordoned: boolean, inScope: boolean): ComponentState {
  if (inScope || cordoned) return 'maintenance';
  if (state === 'healthy') return advancing ? 'operational' : 'degraded';
  if (state === 'down' || state === 'quarantined') return 'down';
  return 'degraded';
}

export class ComponentHistory {
  private pending = new Map<string, Tally>();

  constructor(private readonly store: UptimeStore) {}

  /** One probe's outcome for a component: ok, failed, or null (no data: maintenance, cordon). */
  add(t: number, kind: ComponentKind, name: string, ok: boolean | null): void {
    if (ok === null) return;
    const k = `${floorTo(t, DAY_MS)}|${key(kind, name)}`;
    let tally = this.pending.get(k);
    if (tally === undefined) {
      if (this.pending.size >= MAX_PENDING) return;
      this.pending.set(k, (tally = { probes: 0, ok: 0 }));
    }
    tally.probes++;
    if (ok) tally.ok++;
  }

  /** Writes the buffered days with the buffered probes (store.flush's transaction). */
  flush(now: number): void {
    const pending = this.pending;
    this.store.tx(now, (db) => {
      const upsert = db.prepare(
        `INSERT INTO component_days (name, day, probes, ok) VALUES (?, ?, ?, ?)
         ON CONFLICT (name, day) DO UPDATE SET probes = probes + excluded.probes, ok = ok + excluded.ok`,
      );
      for (const [k, tally] of pending) {
        const bar = k.indexOf('|');
        upsert.run(k.slice(bar + 1), Number(k.slice(0, bar)), tally.probes, tally.ok);
      }
      db.prepare('DELETE FROM component_days WHERE day < ?').run(now - RETAIN_MS);
    });
    // Let go only once written: a failed write keeps them for the next try.
    this.pending = new Map();
  }

  /** `count` UTC days from `from` (a day start) of each component asked for, stored and buffered. */
  days(
    components: readonly { kind: ComponentKind; name: string }[],
    from: number,
    count: number,
  ): Map<string, Tally[]> {
    const out = new Map<string, Tally[]>();
    for (const c of components)
      out.set(
        key(c.kind, c.name),
        Array.from({ length: count }, () => ({ probes: 0, ok: 0 })),
      );
    const rows = this.store.tx(
      null,
      (db) =>
        db
          .prepare('SELECT name, day, probes, ok FROM component_days WHERE day >= ? AND day < ?')
          .all(from, from + count * DAY_MS) as { name: unknown; day: unknown; probes: unknown; ok: unknown }[],
    );
    const into = (name: string, day: number, probes: number, ok: number): void => {
      const d = out.get(name)?.[Math.floor((day - from) / DAY_MS)];
      if (d === undefined || !Number.isSafeInteger(probes) || !Number.isSafeInteger(ok)) return;
      d.probes += probes;
      d.ok += Math.min(ok, probes);
    };
    for (const r of rows)
      if (typeof r.name === 'string' && typeof r.day === 'number') into(r.name, r.day, Number(r.probes), Number(r.ok));
    for (const [k, tally] of this.pending) {
      const bar = k.indexOf('|');
      into(k.slice(bar + 1), Number(k.slice(0, bar)), tally.probes, tally.ok);
    }
    return out;
  }
}

const MONTH_MS = 30 * DAY_MS;

/** ok / probes rounded to 6 places, null without probes (as report.ts's fraction, which imports this file's types). */
function share(t: Tally): number | null {
  return t.probes === 0 ? null : Math.round((t.ok / t.probes) * 1e6) / 1e6;
}

/** The nodes that are components: not shadows, not retiring. */
function nodes(fleet: FleetView) {
  return fleet.upstreams.filter((u) => u.shadow !== true && !u.retiring);
}

const covers = (scope: 'all' | ReadonlySet<string>, name: string): boolean => scope === 'all' || scope.has(name);

/** One probe's outcome for each component: no data when excused, in maintenance, cordoned or not yet judged. */
export function tallyComponents(
  history: ComponentHistory,
  fleet: FleetView,
  scope: 'all' | ReadonlySet<string>,
  t: number,
  probe: { reachable: boolean; advancing: boolean; excused: boolean },
): void {
  history.add(t, 'check', 'reachable', probe.excused ? null : probe.reachable);
  history.add(t, 'check', 'advancing', probe.excused ? null : probe.advancing);
  for (const u of nodes(fleet)) {
    const state = upstreamState(
      u.state,
      probe.advancing,
      fleet.cordons?.get(u.name) !== undefined,
      covers(scope, u.name),
    );
    // A node not yet judged (`connecting`, the first moments) is no data, not a failure.
    const judged = state !== 'maintenance' && u.state !== 'connecting';
    history.add(t, 'upstream', u.name, judged ? state === 'operational' : null);
  }
}

/** The components as of the last probe (null: none yet): their state and `days` UTC days from `from`. */
export function componentLines(
  history: ComponentHistory,
  fleet: FleetView,
  scope: 'all' | ReadonlySet<string>,
  last: { reachable: boolean; advancing: boolean; excused: boolean } | null,
  o: { showUpstreams: boolean; probeIntervalMs: number; from: number; days: number },
): ComponentLine[] {
  const list: { kind: ComponentKind; name: string; state: ComponentState }[] = [
    {
      kind: 'check',
      name: 'reachable',
      state: last?.excused ? 'maintenance' : last && !last.reachable ? 'down' : 'operational',
    },
    {
      kind: 'check',
      name: 'advancing',
      state: last?.excused ? 'maintenance' : last && !last.advancing ? 'degraded' : 'operational',
    },
  ];
  if (o.showUpstreams)
    for (const u of nodes(fleet)) {
      const cordoned = fleet.cordons?.get(u.name) !== undefined;
      list.push({
        kind: 'upstream',
        name: u.name,
        state: upstreamState(u.state, last?.advancing ?? true, cordoned, covers(scope, u.name)),
      });
    }
  const days = history.days(list, o.from, o.days);
  const monthDays = Math.round(MONTH_MS / DAY_MS);
  return list.map((c) => {
    const tallies = days.get(key(c.kind, c.name)) ?? [];
    const month = tallies
      .slice(-monthDays)
      .reduce((a, d) => ({ probes: a.probes + d.probes, ok: a.ok + d.ok }), { probes: 0, ok: 0 });
    return {
      ...c,
      uptime: share(month),
      observedSeconds: Math.floor(Math.min(MONTH_MS, month.probes * o.probeIntervalMs) / 1000),
      days: tallies.map(share),
    };
  });
}
