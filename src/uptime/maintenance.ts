/**
 * Maintenance windows (SPEC 12.2): from uptime.maintenance (replaced on reload) and from the admin
 * port (kept in the uptime store). A probe that fails inside a window is not a failure: it is
 * left out of the figures (no data, not downtime) and opens no incident (index.ts asks at()).
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
import { MAX_WINDOW_TITLE, parseInstant, type MaintenanceConfig } from '../config/maintenance-schema.js';
import { MAX_KEPT_WINDOWS, type WindowKeeper } from './maintenance-store.js';

export type { WindowKeeper } from './maintenance-store.js';

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
  source: 'config' | 'admin';
}

/** A window as uptime.json shows it (names binding, SPEC 12.2). */
export interface MaintenanceLine {
  id: string;
  title: string;
  start: string;
  end: string;
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
  return { id: w.id, title: w.title, start: iso(w.start), end: iso(w.end) };
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
    this.made = keeper.load().map((w) => ({ ...w, id: `admin-${w.id}`, source: 'admin' as const }));
    this.configure(config, null);
    // Windows already under way at start were told by the process before: not told again.
    for (const w of this.all()) if (w.start <= now && now < w.end) this.ongoing.set(w.id, w);
  }

  /** uptime.maintenance at start and on reload; `now` null: tell nobody yet (start). */
  configure(config: readonly MaintenanceConfig[], now: number | null): void {
    this.configured = config.map((c) => {
      const start = parseInstant(c.start)!;
      const end = parseInstant(c.end)!;
      const hash = createHash('sha256').update(`${start}\n${end}\n${c.title}`).digest('hex').slice(0, 12);
      return { id: `config-${hash}`, title: c.title, start, end, source: 'config' as const };
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
    this.made = this.keeper.load().map((w) => ({ ...w, id: `admin-${w.id}`, source: 'admin' as const }));
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

/** The body of POST /uptime/maintenance: { start, end, title }, nothing else. */
export function windowInput(body: unknown): { title: string; start: number; end: number } | { error: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { error: 'expected a JSON object {"start": "...", "end": "...", "title": "..."}' };
  const extra = Object.keys(body).filter((k) => k !== 'start' && k !== 'end' && k !== 'title');
  if (extra.length > 0)
    return { error: `unknown key ${JSON.stringify(extra[0]!.slice(0, 40))}: only start, end, title are read` };
  const { start, end, title } = body as Record<string, unknown>;
  const s = parseInstant(start);
  const e = parseInstant(end);
  if (s === null || e === null)
    return { error: 'expected start and end as ISO 8601 dates and times with a zone, such as 2026-12-01T02:00:00Z' };
  if (e <= s) return { error: 'end must be after start: this window ends before (or when) it starts' };
  if (typeof title !== 'string' || title.trim() === '' || title.length > MAX_WINDOW_TITLE)
    return { error: `expected title to be a non-empty string of at most ${MAX_WINDOW_TITLE} characters` };
  return { title, start: s, end: e };
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
