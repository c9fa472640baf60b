/**
 * The uptime store: probe results and incidents in one SQLite database (a file, or memory). Its
 * `cordons` table is what versions before this one kept there; it is read once and emptied
 * (replicas/cordon-keeper.ts keeps cordons now).
 * Owns: the schema and its migrations, batched writes, compaction of old probes into per-minute
 * and per-hour aggregates, and the sums the report is made of. Refuses: deciding what a probe
 * means (tracker.ts) and presenting it (report.ts).
 *
 * Tiers never overlap in time, so a window's sum is the sum of each tier's rows inside it:
 *   probes   one row per probe, for the last day (and a minute more);
 *   minutes  one row per minute, older than that, for a week;
 *   hours    one row per hour, older than a week, for RETAIN_MS (the 90 daily bars).
 * A minute or hour bucket is only written once every probe in it is older than the tier's cut,
 * so it is complete when written (an existing bucket is added to, never replaced).
 *
 * Durability: WAL journal, every flush is one transaction. A crash (or kill -9) mid-write leaves
 * the file at the last committed flush; what was buffered since is lost (at most FLUSH_EVERY
 * probes), never the file.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { IncidentKind } from '../../metrics/labels.js';
import { IncidentLog, isProbeIncident, pruneIncidents, type Incident } from './incident-store.js';
import { type Db, memoryCopyOf, openDb, transaction } from './sqlite.js';
import { prepare } from './store-schema.js';
import { StoreError } from './store-error.js';

export { StoreError };
export { SCHEMA_VERSION } from './store-schema.js';

export { INCIDENT_KINDS, type IncidentKind } from '../../metrics/labels.js';
export type { Incident } from './incident-store.js';

export interface ProbeRow {
  /** ms since the epoch */
  t: number;
  reachable: boolean;
  advancing: boolean;
}

/** Probes and how many of them had both checks ok. */
export interface Tally {
  probes: number;
  ok: number;
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
/** Per-probe rows are kept this long, then rolled into minutes. */
export const PROBES_KEPT_MS = DAY_MS;
/** Per-minute rows are kept this long, then rolled into hours. */
export const MINUTES_KEPT_MS = 7 * DAY_MS;
/** Hour rows older than this are deleted (the daily bars go back 90 days); incidents: incident-store.ts. */
export const RETAIN_MS = 91 * DAY_MS;
/** Buffered probes are written together once this many are waiting (or on an incident, or close). */
export const FLUSH_EVERY = 12;
/** A write that keeps failing must not grow memory: beyond this the oldest buffered probes go. */
const MAX_BUFFERED = 100_000;

export class UptimeStore {
  private db: Db;
  private buffer: ProbeRow[] = [];
  readonly told = new IncidentLog({ db: () => this.db, write: (now, op) => this.write(now, op) });
  private meta = new Map<string, string>();
  private metaDirty = false;
  /** null: in memory (configured so, or after the file failed). */
  private file: string | null;

  private constructor(db: Db, file: string | null) {
    this.db = db;
    this.file = file;
    this.meta = readMeta(db);
  }

  /** Takes `db` (a shared image that store-image.ts checked) in place of its database: memory from now on. */
  adopt(db: Db): void {
    this.db.close();
    this.db = db;
    this.file = null;
    this.meta = readMeta(db);
  }

  /** A store in memory only: same behaviour, gone with the process. */
  static memory(): UptimeStore {
    return new UptimeStore(prepare(openDb(':memory:'), ':memory:'), null);
  }

  /**
   * Opens (creating it and its folder if need be) and migrates a store file. Throws StoreError
   * when the file is not a database, is damaged, is from a newer Switchyard, or cannot be written;
   * the file is left as it was for the operator to inspect.
   */
  static open(path: string, now: number): UptimeStore {
    let db: Db | undefined;
    try {
      mkdirSync(dirname(path), { recursive: true });
      db = openDb(path);
      prepare(db, path);
      // A real write, so a read-only file or folder is found now rather than at the first flush.
      db.prepare(
        'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      ).run('openedAt', String(now));
      return new UptimeStore(db, path);
    } catch (err) {
      db?.close();
      if (err instanceof StoreError) throw err;
      const e = err as NodeJS.ErrnoException;
      throw new StoreError(e.code !== undefined ? `${e.code}: ${e.message}` : e.message, path);
    }
  }

  get persistent(): boolean {
    return this.file !== null;
  }

  get path(): string | null {
    return this.file;
  }

  /** Queues one probe; written with the next flush. */
  add(row: ProbeRow): void {
    this.buffer.push(row);
    if (this.buffer.length > MAX_BUFFERED) this.buffer.splice(0, this.buffer.length - MAX_BUFFERED);
  }

  get pending(): number {
    return this.buffer.length;
  }

  getMeta(key: string): string | undefined {
    return this.meta.get(key);
  }

  /** Small facts that must survive a restart (the head and when it last rose); written with the next flush. */
  setMeta(key: string, value: string): void {
    if (this.meta.get(key) === value) return;
    this.meta.set(key, value);
    this.metaDirty = true;
  }

  /**
   * Writes the buffered probes and meta in one transaction, then compacts what has aged out of
   * its tier. Throws on a write failure, keeping the buffer for the next try.
   */
  flush(now: number): void {
    this.write(now, () => undefined);
  }

  /** One transaction: the buffer, the meta, `extra`, then compaction. The buffer is let go only once it committed. */
  private write<T>(now: number, extra: () => T): T {
    const rows = this.buffer;
    const insert = this.db.prepare('INSERT OR REPLACE INTO probes (t, reachable, advancing) VALUES (?, ?, ?)');
    const setMeta = this.db.prepare(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    );
    const result = transaction(this.db, () => {
      for (const r of rows) insert.run(r.t, r.reachable ? 1 : 0, r.advancing ? 1 : 0);
      if (this.metaDirty) for (const [k, v] of this.meta) setMeta.run(k, v);
      const out = extra();
      this.compact(now);
      return out;
    });
    this.buffer = this.buffer.slice(rows.length);
    this.metaDirty = false;
    return result;
  }

  /** Rolls probes older than a day into minutes and minutes older than a week into hours; drops what is past retention. */
  private compact(now: number): void {
    const probeCut = floorTo(now - PROBES_KEPT_MS, MINUTE_MS);
    const minuteCut = floorTo(now - MINUTES_KEPT_MS, HOUR_MS);
    const upsert = `ON CONFLICT (size, t) DO UPDATE SET probes = probes + excluded.probes, ok = ok + excluded.ok,
      reachable = reachable + excluded.reachable, advancing = advancing + excluded.advancing`;
    this.db
      .prepare(
        `INSERT INTO rollups (size, t, probes, ok, reachable, advancing)
         SELECT ${MINUTE_MS}, (t / ${MINUTE_MS}) * ${MINUTE_MS} AS b, COUNT(*), SUM(reachable AND advancing), SUM(reachable), SUM(advancing)
         FROM probes WHERE t < ? GROUP BY b ORDER BY b ${upsert}`,
      )
      .run(probeCut);
    this.db.prepare('DELETE FROM probes WHERE t < ?').run(probeCut);
    this.db
      .prepare(
        `INSERT INTO rollups (size, t, probes, ok, reachable, advancing)
         SELECT ${HOUR_MS}, (t / ${HOUR_MS}) * ${HOUR_MS} AS b, SUM(probes), SUM(ok), SUM(reachable), SUM(advancing)
         FROM rollups WHERE size = ${MINUTE_MS} AND t < ? GROUP BY b ORDER BY b ${upsert}`,
      )
      .run(minuteCut);
    this.db.prepare(`DELETE FROM rollups WHERE size = ${MINUTE_MS} AND t < ?`).run(minuteCut);
    this.db.prepare(`DELETE FROM rollups WHERE size = ${HOUR_MS} AND t < ?`).run(now - RETAIN_MS);
    pruneIncidents(this.db, now);
  }

  /**
   * Probes since `from` (inclusive), every tier and the buffer. Minute and hour buckets count
   * when they start at or after `from`, so a window is exact to the bucket size of its oldest tier.
   */
  tally(from: number): Tally {
    const p = this.db
      .prepare('SELECT COUNT(*) AS probes, COALESCE(SUM(reachable AND advancing), 0) AS ok FROM probes WHERE t >= ?')
      .get(from) as unknown as Tally;
    const r = this.db
      .prepare('SELECT COALESCE(SUM(probes), 0) AS probes, COALESCE(SUM(ok), 0) AS ok FROM rollups WHERE t >= ?')
      .get(from) as unknown as Tally;
    const out = { probes: p.probes + r.probes, ok: p.ok + r.ok };
    for (const b of this.buffer) {
      if (b.t < from) continue;
      out.probes++;
      if (b.reachable && b.advancing) out.ok++;
    }
    return out;
  }

  /** `count` consecutive segments of `size` ms starting at `from`, each with its tally (per-probe tier and buffer). */
  segments(from: number, size: number, count: number): Tally[] {
    const out: Tally[] = Array.from({ length: count }, () => ({ probes: 0, ok: 0 }));
    const rows = this.db
      .prepare(
        // Parameters arrive as REAL: cast, or the division is not an integer one.
        `SELECT (t - CAST(? AS INTEGER)) / CAST(? AS INTEGER) AS i, COUNT(*) AS probes, SUM(reachable AND advancing) AS ok
         FROM probes WHERE t >= ? AND t < ? GROUP BY i`,
      )
      .all(from, size, from, from + size * count) as { i: number; probes: number; ok: number }[];
    for (const r of rows) {
      const s = out[r.i];
      if (s) {
        s.probes += r.probes;
        s.ok += r.ok;
      }
    }
    for (const b of this.buffer) {
      const s = out[Math.floor((b.t - from) / size)];
      if (b.t < from || !s) continue;
      s.probes++;
      if (b.reachable && b.advancing) s.ok++;
    }
    return out;
  }

  /** `op` on the database: in one write with what is buffered, or alone (now null: a read). For history-store.ts, maintenance-store.ts. */
  tx<T>(now: number | null, op: (db: Db) => T): T {
    return now === null ? op(this.db) : this.write(now, () => op(this.db));
  }

  /** Opens an incident now (with the buffered probes, in one transaction) and returns it with its id. */
  openIncident(kind: IncidentKind, startedAt: number, summary: string, now: number): Incident {
    const id = this.write(now, () =>
      Number(
        this.db
          .prepare('INSERT INTO incidents (kind, started_at, ended_at, summary) VALUES (?, ?, NULL, ?)')
          .run(kind, startedAt, summary).lastInsertRowid,
      ),
    );
    return { id, kind, startedAt, endedAt: null, summary };
  }

  closeIncident(id: number, endedAt: number, now: number): void {
    this.write(now, () => this.db.prepare('UPDATE incidents SET ended_at = ? WHERE id = ?').run(endedAt, id));
  }

  /** Open incidents, and those that started at or after `since`; newest first, at most `limit`. */
  incidents(since: number, limit: number): Incident[] {
    return this.told.recent(since, limit).map(({ id, kind, startedAt, endedAt, summary }) => ({
      id,
      kind,
      startedAt,
      endedAt,
      summary,
    }));
  }

  /** Open probe incidents (a hand-opened one closes by hand only). */
  openIncidents(): (Incident & { kind: IncidentKind })[] {
    return this.incidents(Number.MAX_SAFE_INTEGER, 200).filter(isProbeIncident);
  }

  /** Cordons an older version kept here, by upstream name, as JSON text (replicas/cordon-keeper.ts carries them over). */
  cordons(): Map<string, string> {
    const rows = this.db.prepare('SELECT name, value FROM cordons').all() as { name: string; value: string }[];
    return new Map(rows.map((r) => [r.name, r.value]));
  }

  /** Empties the old cordon table once its rows are kept elsewhere (at once, with what is buffered). */
  clearCordons(now: number): void {
    this.write(now, () => this.db.prepare('DELETE FROM cordons').run());
  }

  /** Row counts per tier: for tests and the size figures of docs/uptime-page.md. */
  counts(): { probes: number; minutes: number; hours: number; incidents: number } {
    const one = (sql: string): number => (this.db.prepare(sql).get() as { n: number }).n;
    return {
      probes: one('SELECT COUNT(*) AS n FROM probes'),
      minutes: one(`SELECT COUNT(*) AS n FROM rollups WHERE size = ${MINUTE_MS}`),
      hours: one(`SELECT COUNT(*) AS n FROM rollups WHERE size = ${HOUR_MS}`),
      incidents: one('SELECT COUNT(*) AS n FROM incidents'),
    };
  }

  /**
   * Leaves a failing file: everything it holds (and the buffer) carries on in memory, so the page
   * keeps its history; nothing more is written to the file. Returns false if even that failed
   * (then the store starts empty in memory).
   */
  toMemory(): boolean {
    if (this.file === null) return true;
    let copied = true;
    let next: Db;
    try {
      // Read from the file (which still takes reads when writes fail), nothing written beside it.
      next = prepare(memoryCopyOf(this.file), ':memory:');
    } catch {
      copied = false;
      next = prepare(openDb(':memory:'), ':memory:');
    }
    try {
      this.db.close();
    } catch {
      // already unusable: nothing to release
    }
    this.db = next;
    this.file = null;
    this.metaDirty = true;
    return copied;
  }

  /** Writes what is buffered (best effort) and closes the database. */
  close(now: number): void {
    try {
      this.flush(now);
    } finally {
      this.db.close();
    }
  }
}

function readMeta(db: Db): Map<string, string> {
  const rows = db.prepare('SELECT key, value FROM meta').all() as { key: string; value: string }[];
  return new Map(rows.map((r) => [r.key, r.value]));
}

export function floorTo(t: number, size: number): number {
  return Math.floor(t / size) * size;
}
