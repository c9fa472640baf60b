/**
 * Maintenance windows (SPEC 12.2): from uptime.maintenance (replaced on reload) and from the admin
 * port (kept in the uptime store). Each has a scope: `all` or upstream names. A probe that fails
 * while the windows under way cover every node that could have answered is not a failure: it is
 * left out of the figures (no data, not downtime) and opens no incident (probe-loop.ts asks
 * excusing()); a window for some nodes never hides an outage of the others (SPEC 12.3).
 * Windows apply to probes as they run: one added for a past time changes no figure.
 * Owns: the windows, their checks (the admin port's body as untrusted input), and telling
 * subscribers when a window starts or ends. Refuses: HTTP (server/admin-maintenance.ts) and
 * storage (maintenance-store.ts).
 *
 * Ids are text: `admin-<n>` for a window made on the admin port, `config-<hash>` for one from
 * the configuration (a hash of start, end and title, so it is the same across reloads, restarts
 * and replicas).
 */
import { createHash } from 'node:crypto';
import {
  MAX_SCOPE_NAMES,
  MAX_WINDOW_TITLE,
  parseInstant,
  parseScope,
  type MaintenanceConfig,
} from '../config/maintenance-schema.js';
import { MAX_KEPT_WINDOWS, type Scope, type WindowKeeper } from './store/maintenance-store.js';

export type { Scope, WindowKeeper } from './store/maintenance-store.js';

/** Admin-made windows not yet over, at most: past it a POST is refused (409). */
export const MAX_ADMIN_WINDOWS = 50;
/** Windows listed in uptime.json (upcoming and ongoing, soonest first). */
export const MAX_LISTED_WINDOWS = 20;

export interface MaintenanceWindow {
  id: string;
  title: string;
  /** ms since the epoch; the window holds start <= t < end. */
  start: number;
  end: number;
  /** `all`, or the upstream names it covers (SPEC 12.3). */
  scope: Scope;
  source: 'config' | 'admin';
}

/** A window as uptime.json shows it (names binding, SPEC 12.2). */
export interface MaintenanceLine {
  id: string;
  title: string;
  start: string;
  end: string;
  scope: Scope;
}

export interface MaintenanceChange {
  event: 'started' | 'ended';
  window: MaintenanceLine;
  /** When Switchyard saw it (at a probe, or at once for an admin change), ISO 8601. */
  at: string;
}

export type MaintenanceListener = (change: MaintenanceChange) => void;

export type Refused = { status: 400 | 404 | 409 | 503; error: string };

/** A window as the admin port lists it: every known one, with where it comes from and where it stands. */
export interface AdminWindowLine extends MaintenanceLine {
  source: 'config' | 'admin';
  state: 'upcoming' | 'ongoing' | 'over';
}

/** What the admin port's routes (server/admin-maintenance.ts) use, bound to the room's clock. */
export interface MaintenanceAdmin {
  list(): AdminWindowLine[];
  add(body: unknown): { window: AdminWindowLine } | Refused;
  end(id: string): { window: AdminWindowLine; change: 'removed' | 'ended' | 'none' } | Refused;
}

export function windowLine(w: MaintenanceWindow): MaintenanceLine {
  return { id: w.id, title: w.title, start: iso(w.start), end: iso(w.end), scope: w.scope };
}

export class Maintenance {
  private configured: MaintenanceWindow[] = [];
  private made: MaintenanceWindow[];
  /** The windows already told as started (and not yet as ended), by id. */
  private readonly ongoing = new Map<string, MaintenanceWindow>();
  private readonly listeners = new Set<MaintenanceListener>();

  constructor(
    private readonly keeper: WindowKeeper,
    config: readonly MaintenanceConfig[],
    now: number,
  ) {
    this.made = keeper.load().map(madeWindow);
    this.configure(config, null);
    // Windows already under way at start were told by the process before: not told again.
    for (const w of this.all()) if (w.start <= now && now < w.end) this.ongoing.set(w.id, w);
  }

  /** uptime.maintenance at start and on reload; `now` null: tell nobody yet (start). */
  configure(config: readonly MaintenanceConfig[], now: number | null): void {
    this.configured = config.map((c) => {
      const start = parseInstant(c.start)!;
      const end = parseInstant(c.end)!;
      const scope = c.scope ?? 'all';
      // `all` adds nothing to the hash: a window's id is what it was before scopes existed.
      const scoped = scope === 'all' ? '' : `\n${JSON.stringify(scope)}`;
      const hash = createHash('sha256').update(`${start}\n${end}\n${c.title}${scoped}`).digest('hex').slice(0, 12);
      return { id: `config-${hash}`, title: c.title, start, end, scope, source: 'config' as const };
    });
    if (now !== null) this.tick(now);
  }

  /**
   * The admin-made windows read again: another replica's store image was loaded (shared.ts). A
   * window another replica ended or removed by hand, or made while under way, was told there: it
   * is taken as told here. Only the prober (`prober`) tells windows starting or ending with time;
   * the others take as told what the prober's list in the image says (`told`, toldText) and what
   * they told by hand themselves, so when they become the prober they tell what it had not yet.
   */
  reload(now: number, prober: boolean, told: string | undefined): void {
    const before = new Map(this.all().map((w) => [w.id, w]));
    this.made = this.keeper.load().map(madeWindow);
    const byId = new Map(this.all().map((w) => [w.id, w]));
    const current = (w: MaintenanceWindow): boolean => w.start <= now && now < w.end;
    const changed = (id: string): boolean => {
      const b = before.get(id);
      const n = byId.get(id);
      return n === undefined || (b !== undefined && b.end !== n.end);
    };
    if (prober) {
      for (const id of [...this.ongoing.keys()]) if (changed(id)) this.ongoing.delete(id);
      for (const w of byId.values()) if (current(w) && !before.has(w.id)) this.ongoing.set(w.id, w);
      return;
    }
    const next = [...this.ongoing.keys()].filter((id) => !changed(id) && current(byId.get(id)!));
    for (const id of toldIds(told)) if (byId.has(id) && !changed(id)) next.push(id);
    this.ongoing.clear();
    for (const id of next) this.ongoing.set(id, byId.get(id)!);
  }

  /** The windows told as started and not yet as ended: the prober keeps this in the shared image. */
  toldText(): string {
    return JSON.stringify([...this.ongoing.keys()]);
  }

  /** Every known window (configured, then admin-made), by start. */
  all(): MaintenanceWindow[] {
    return [...this.configured, ...this.made].sort((a, b) => a.start - b.start || a.end - b.end);
  }

  /** The window `t` falls in (the one ending last, if several), or null. */
  at(t: number): MaintenanceWindow | null {
    let found: MaintenanceWindow | null = null;
    for (const w of this.all()) if (w.start <= t && t < w.end && (found === null || w.end > found.end)) found = w;
    return found;
  }

  /**
   * The window that excuses a failure at `t`, or null: windows under way at `t` must together
   * cover every one of `nodes` (the nodes that could have answered), so a window for node-2
   * never hides an outage of the others (SPEC 12.3). No node at all: only a window for `all`.
   */
  excusing(t: number, nodes: readonly string[]): MaintenanceWindow | null {
    const now = this.all().filter((w) => w.start <= t && t < w.end);
    if (now.length === 0) return null;
    const last = now.reduce((a, b) => (b.end > a.end ? b : a));
    if (now.some((w) => w.scope === 'all')) return last;
    const covered = new Set(now.flatMap((w) => (w.scope === 'all' ? [] : w.scope)));
    return nodes.length > 0 && nodes.every((n) => covered.has(n)) ? last : null;
  }

  /** The upstream names in scope of a window under way at `t` (`all`: every one). */
  inScope(t: number): 'all' | Set<string> {
    const names = new Set<string>();
    for (const w of this.all()) {
      if (!(w.start <= t && t < w.end)) continue;
      if (w.scope === 'all') return 'all';
      for (const n of w.scope) names.add(n);
    }
    return names;
  }

  /** Windows that overlap [from, to). */
  between(from: number, to: number): MaintenanceWindow[] {
    return this.all().filter((w) => w.start < to && w.end > from);
  }

  /** Upcoming and ongoing windows, soonest first, at most MAX_LISTED_WINDOWS: what uptime.json lists. */
  lines(now: number): MaintenanceLine[] {
    return this.all()
      .filter((w) => w.end > now)
      .slice(0, MAX_LISTED_WINDOWS)
      .map(windowLine);
  }

  /** POST /uptime/maintenance: `body` is what the client sent, checked here. */
  add(body: unknown, now: number): { window: MaintenanceWindow } | Refused {
    const input = windowInput(body);
    if ('error' in input) return { status: 400, error: input.error };
    if (input.end <= now)
      return { status: 400, error: 'end is in the past: a window counts only for probes still to come' };
    const open = this.made.filter((w) => w.end > now).length;
    if (open >= MAX_ADMIN_WINDOWS)
      return {
        status: 409,
        error: `${open} admin-made windows are not over yet (at most ${MAX_ADMIN_WINDOWS}): end one first`,
      };
    const id = this.keeper.insert(input);
    if (id === undefined) return { status: 503, error: 'the uptime store could not keep the window; try again' };
    const window: MaintenanceWindow = { ...input, id: `admin-${id}`, source: 'admin' };
    // The store keeps the newest MAX_KEPT_WINDOWS (maintenance-store.ts); so does memory.
    this.made = [...this.made, window].sort((a, b) => b.end - a.end).slice(0, MAX_KEPT_WINDOWS);
    this.tick(now);
    return { window };
  }

  /**
   * DELETE /uptime/maintenance/{id}: a window that has not started is removed; an ongoing one
   * ends now (it stays in the history); one already over is left as it was.
   */
  end(id: string, now: number): { window: MaintenanceWindow; change: 'removed' | 'ended' | 'none' } | Refused {
    if (this.configured.some((w) => w.id === id))
      return { status: 409, error: 'this window is in uptime.maintenance: change the configuration and reload' };
    const window = this.made.find((w) => w.id === id);
    if (window === undefined) return { status: 404, error: 'no maintenance window with this id' };
    if (window.end <= now) return { window, change: 'none' };
    const removed = window.start > now;
    const n = Number(id.slice('admin-'.length));
    if (!this.keeper.change(n, removed ? null : now))
      return { status: 503, error: 'the uptime store could not change the window; try again' };
    if (removed) this.made = this.made.filter((w) => w !== window);
    else window.end = now;
    this.tick(now);
    return { window, change: removed ? 'removed' : 'ended' };
  }

  /** The admin port's view, at the times `now` gives. */
  admin(now: () => number): MaintenanceAdmin {
    const line = (w: MaintenanceWindow, t: number): AdminWindowLine => ({
      ...windowLine(w),
      source: w.source,
      state: t < w.start ? 'upcoming' : t < w.end ? 'ongoing' : 'over',
    });
    return {
      list: () => this.all().map((w) => line(w, now())),
      add: (body) => {
        const t = now();
        const r = this.add(body, t);
        return 'error' in r ? r : { window: line(r.window, t) };
      },
      end: (id) => {
        const t = now();
        const r = this.end(id, t);
        return 'error' in r ? r : { window: line(r.window, t), change: r.change };
      },
    };
  }

  /**
   * Observes windows starting and ending (the feed and webhooks): called at every probe and at
   * once after an admin change. A listener runs synchronously and must not throw or block.
   * Returns the way to stop listening.
   */
  subscribe(listener: MaintenanceListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells subscribers which windows started or ended since the last call. */
  tick(now: number): void {
    const current = new Map(
      this.all()
        .filter((w) => w.start <= now && now < w.end)
        .map((w) => [w.id, w]),
    );
    const changes: MaintenanceChange[] = [];
    for (const [id, w] of this.ongoing) {
      if (current.has(id)) continue;
      this.ongoing.delete(id);
      // Ended on time, ended early by the admin port, or taken out of the configuration.
      changes.push({ event: 'ended', window: windowLine(w), at: iso(now) });
    }
    for (const [id, w] of current) {
      if (this.ongoing.has(id)) continue;
      this.ongoing.set(id, w);
      changes.push({ event: 'started', window: windowLine(w), at: iso(now) });
    }
    for (const c of changes)
      for (const l of this.listeners) {
        try {
          l(c);
        } catch {
          // A subscriber's fault is its own: probes and the admin port go on.
        }
      }
  }
}

/** The body of POST /uptime/maintenance: { start, end, title, scope? }, nothing else. */
export function windowInput(
  body: unknown,
): { title: string; start: number; end: number; scope: Scope } | { error: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { error: 'expected a JSON object {"start": "...", "end": "...", "title": "...", "scope": "all"}' };
  const extra = Object.keys(body).filter((k) => k !== 'start' && k !== 'end' && k !== 'title' && k !== 'scope');
  if (extra.length > 0)
    return { error: `unknown key ${JSON.stringify(extra[0]!.slice(0, 40))}: only start, end, title, scope are read` };
  const { start, end, title } = body as Record<string, unknown>;
  const scope = parseScope((body as Record<string, unknown>).scope);
  if (scope === null)
    return {
      error: `expected scope to be "all" or a list of 1 to ${MAX_SCOPE_NAMES} upstream names (letters, digits, _ . -)`,
    };
  const s = parseInstant(start);
  const e = parseInstant(end);
  if (s === null || e === null)
    return { error: 'expected start and end as ISO 8601 dates and times with a zone, such as 2026-12-01T02:00:00Z' };
  if (e <= s) return { error: 'end must be after start: this window ends before (or when) it starts' };
  if (typeof title !== 'string' || title.trim() === '' || title.length > MAX_WINDOW_TITLE)
    return { error: `expected title to be a non-empty string of at most ${MAX_WINDOW_TITLE} characters` };
  return { title, start: s, end: e, scope };
}

function madeWindow(w: ReturnType<WindowKeeper['load']>[number]): MaintenanceWindow {
  return { ...w, id: `admin-${w.id}`, scope: w.scope ?? 'all', source: 'admin' };
}

function iso(t: number): string {
  return new Date(t).toISOString();
}

/** Window ids from the shared image (input): at most MAX_KEPT_WINDOWS + 100 short strings, else none. */
function toldIds(text: string | undefined): string[] {
  let v: unknown;
  try {
    v = text === undefined || text.length > 65_536 ? [] : JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(v)) return [];
  return v.slice(0, MAX_KEPT_WINDOWS + 100).filter((id): id is string => typeof id === 'string' && id.length <= 64);
}
