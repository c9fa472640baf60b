/**
 * The uptime store's schema (store.ts): its migrations and the checks a database passes before it
 * is used, whether a file, a copy in memory, or a shared image read from Redis (store-image.ts).
 */
import { HISTORY_MIGRATION } from './history-migration.js';
import { INCIDENT_MIGRATION, SCOPE_MIGRATION } from './incident-store.js';
import { type Db, pragma, transaction } from './sqlite.js';
import { StoreError } from './store-error.js';

/**
 * Schema migrations, in order: migration i takes a database from user_version i to i + 1.
 * Append only; never edit a released one.
 */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE probes (t INTEGER PRIMARY KEY, reachable INTEGER NOT NULL, advancing INTEGER NOT NULL);
   CREATE TABLE rollups (
     size INTEGER NOT NULL,          -- bucket length in ms: 60000 (minutes) or 3600000 (hours)
     t INTEGER NOT NULL,             -- bucket start, ms since the epoch
     probes INTEGER NOT NULL, ok INTEGER NOT NULL, reachable INTEGER NOT NULL, advancing INTEGER NOT NULL,
     PRIMARY KEY (size, t)) WITHOUT ROWID;
   CREATE TABLE incidents (
     id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, started_at INTEGER NOT NULL,
     ended_at INTEGER, summary TEXT NOT NULL);
   CREATE INDEX incidents_started ON incidents (started_at);
   CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);`,
  // Cordons without a shared Redis, as versions before the cordon file kept them: now only read
  // once and emptied (replicas/cordon-keeper.ts).
  `CREATE TABLE cordons (name TEXT PRIMARY KEY, value TEXT NOT NULL);`,
  // Incidents told by people (incident-store.ts): updates, post-mortems, hand-opened incidents.
  INCIDENT_MIGRATION,
  // Admin-made maintenance windows and hourly probe latency (maintenance-store.ts, history-store.ts).
  HISTORY_MIGRATION,
  // An operator incident's impact, a maintenance window's scope (SPEC 12.3).
  SCOPE_MIGRATION,
];
export const SCHEMA_VERSION = MIGRATIONS.length;

/** Pragmas, integrity check and migrations; throws StoreError with a reason an operator can act on. */
export function prepare(db: Db, path: string): Db {
  try {
    db.exec('PRAGMA journal_mode = WAL');
    // WAL + NORMAL: a crash loses at most the last transactions, never the database.
    db.exec('PRAGMA synchronous = NORMAL');
  } catch (err) {
    throw new StoreError(`not a usable SQLite database (${(err as Error).message})`, path);
  }
  const check = pragma(db, 'quick_check');
  if (check !== 'ok') throw new StoreError(`the database is damaged (quick_check: ${String(check)})`, path);
  // IMMEDIATE: two processes starting on a new file at once take turns (busy timeout) instead of
  // both creating the tables; the second finds the schema current.
  transaction(
    db,
    () => {
      const version = Number(pragma(db, 'user_version'));
      if (version > SCHEMA_VERSION)
        throw new StoreError(`schema version ${version} is newer than this Switchyard knows (${SCHEMA_VERSION})`, path);
      for (let v = version; v < SCHEMA_VERSION; v++) {
        db.exec(MIGRATIONS[v]!);
        db.exec(`PRAGMA user_version = ${v + 1}`);
      }
    },
    true,
  );
  return db;
}
