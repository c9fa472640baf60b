/**
 * Maintenance windows made on the admin port, kept in the uptime store (same file, same
 * transactions as the probes: store.ts tx). Windows from uptime.maintenance are not stored: the
 * configuration is their home. Rows are input like any file: one that is not a window is left out.
 */
import type { Db } from './sqlite.js';
import { parseScope } from '../../config/maintenance-schema.js';
import { RETAIN_MS, type UptimeStore } from './store.js';

/** What a maintenance window covers: `all`, or the upstream names it covers (SPEC 12.3). */
export type Scope = 'all' | string[];

/** Where admin-made windows are kept; undefined: the store could not (the caller answers 503). */
export interface WindowKeeper {
  /** `scope` absent: `all`. */
  load(): { id: number; title: string; start: number; end: number; scope?: Scope }[];
  insert(w: { title: string; start: number; end: number; scope: Scope }): number | undefined;
  /** end null: removed. */
  change(id: number, end: number | null): boolean;
}

export interface StoredWindow {
  id: number;
  title: string;
  start: number;
  end: number;
  scope: Scope;
}

interface Row {
  id: unknown;
  title: unknown;
  start_at: unknown;
  end_at: unknown;
  scope: unknown;
}

/** A stored scope: null (rows from before scopes) is `all`; one that does not parse covers no node. */
function scopeOf(v: unknown): Scope {
  if (v === null) return 'all';
  try {
    return (typeof v === 'string' && parseScope(JSON.parse(v))) || [];
  } catch {
    return [];
  }
}

const isTime = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Admin-made windows that ended after `since` (or have not ended), by start. */
export function storedWindows(store: UptimeStore, since: number): StoredWindow[] {
  const rows = store.tx(
    null,
    (db) =>
      db
        .prepare('SELECT id, title, start_at, end_at, scope FROM maintenance WHERE end_at > ? ORDER BY start_at, id')
        .all(since) as unknown as Row[],
  );
  return rows.flatMap((r) =>
    typeof r.id === 'number' && typeof r.title === 'string' && isTime(r.start_at) && isTime(r.end_at)
      ? [{ id: r.id, title: r.title, start: r.start_at, end: r.end_at, scope: scopeOf(r.scope) }]
      : [],
  );
}

/** Stores a new window (with what the store has buffered) and returns its id; drops windows past retention. */
export function storeWindow(store: UptimeStore, w: Omit<StoredWindow, 'id'>, now: number): number {
  return store.tx(now, (db) => {
    forget(db, now);
    return Number(
      db
        .prepare('INSERT INTO maintenance (title, start_at, end_at, scope) VALUES (?, ?, ?, ?)')
        .run(w.title, w.start, w.end, w.scope === 'all' ? null : JSON.stringify(w.scope)).lastInsertRowid,
    );
  });
}

/** Ends a window at `end` (it is kept: the bars still show it), or removes it (end null: it never began). */
export function changeWindow(store: UptimeStore, id: number, end: number | null, now: number): true {
  store.tx(now, (db) => {
    if (end === null) db.prepare('DELETE FROM maintenance WHERE id = ?').run(id);
    else db.prepare('UPDATE maintenance SET end_at = ? WHERE id = ?').run(end, id);
  });
  return true;
}

/** Admin-made windows kept at most (the newest by end): the history of many short windows stays bounded. */
export const MAX_KEPT_WINDOWS = 500;

function forget(db: Db, now: number): void {
  db.prepare('DELETE FROM maintenance WHERE end_at < ?').run(now - RETAIN_MS);
  db.prepare(
    'DELETE FROM maintenance WHERE id NOT IN (SELECT id FROM maintenance ORDER BY end_at DESC, id DESC LIMIT ?)',
  ).run(MAX_KEPT_WINDOWS - 1);
}

/**
 * The WindowKeeper (maintenance.ts reads it) on this store. `write` runs a store operation, moving the
 * store to memory if its file fails (index.ts); undefined: it failed even there.
 */
export function storeWindows(
  store: UptimeStore,
  write: <T>(op: () => T) => T | undefined,
  now: () => number,
): WindowKeeper {
  return {
    load: () => write(() => storedWindows(store, now() - RETAIN_MS)) ?? [],
    insert: (w) => write(() => storeWindow(store, w, now())),
    change: (id, end) => write(() => changeWindow(store, id, end, now())) !== undefined,
  };
}
