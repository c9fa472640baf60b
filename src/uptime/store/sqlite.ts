/**
 * SQLite for the uptime store: Node's built-in `node:sqlite` (Node >= 22.13), so installing needs
 * no compiler and no binary from outside the npm registry. Owns: loading the module (only when a
 * store is made), transactions, pragmas, and moving a whole database between a file, memory and
 * an image (bytes) — what store.ts, store-image.ts and shared.ts need of it. Refuses: the schema
 * (store-schema.ts) and what the rows mean.
 *
 * Node 22's DatabaseSync has no serialize()/deserialize() (Node 24 has), so an image is made with
 * `VACUUM INTO` a private temporary file, and a file becomes a database in memory by attaching it
 * and copying its tables. An image is a plain SQLite file either way, so replicas of the version
 * that used better-sqlite3's serialize() and this one read each other's images.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';

export type Db = DatabaseSync;

let loaded: typeof import('node:sqlite') | null = null;

/**
 * `node:sqlite`, loaded on first use. Node 22 and 24 print an ExperimentalWarning when it loads;
 * the store uses the stable core of the API (prepare, run, get, all, exec), so that one warning
 * is left out of the operator's stderr and every other warning passes as before.
 */
function sqlite(): typeof import('node:sqlite') {
  if (loaded !== null) return loaded;
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (/SQLite is an experimental feature/.test(String(warning))) return;
    (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    loaded = createRequire(import.meta.url)('node:sqlite') as typeof import('node:sqlite');
  } finally {
    process.emitWarning = emit;
  }
  return loaded;
}

/** Opens (creating it) the database at `path` (or ':memory:'); waits up to 5 s for another process's lock. */
export function openDb(path: string): Db {
  const db = new (sqlite().DatabaseSync)(path);
  db.exec('PRAGMA busy_timeout = 5000');
  return db;
}

/** The first column of a pragma's first row (`PRAGMA name`). */
export function pragma(db: Db, name: string): unknown {
  const row = db.prepare(`PRAGMA ${name}`).get() as Record<string, unknown> | undefined;
  return row === undefined ? undefined : Object.values(row)[0];
}

const depth = new WeakMap<Db, number>();

/**
 * Runs `fn` in a transaction: committed when it returns, rolled back when it throws (the error
 * goes on). Nested calls are savepoints, so an inner failure undoes only its own part, as an outer
 * caller that catches it expects. `immediate` takes the write lock at the start.
 */
export function transaction<T>(db: Db, fn: () => T, immediate = false): T {
  const level = depth.get(db) ?? 0;
  const name = `sp${level}`;
  db.exec(level === 0 ? (immediate ? 'BEGIN IMMEDIATE' : 'BEGIN') : `SAVEPOINT ${name}`);
  depth.set(db, level + 1);
  try {
    const out = fn();
    db.exec(level === 0 ? 'COMMIT' : `RELEASE ${name}`);
    return out;
  } catch (err) {
    try {
      db.exec(level === 0 ? 'ROLLBACK' : `ROLLBACK TO ${name}; RELEASE ${name}`);
    } catch {
      // SQLite may have rolled back already (some I/O errors do): nothing left to undo.
    }
    throw err;
  } finally {
    depth.set(db, level);
  }
}

/** A private folder for one image file, removed with what is in it once `fn` is done. */
function withTempFile<T>(fn: (file: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-sqlite-'));
  try {
    return fn(join(dir, 'image.db'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The whole database as the bytes of a SQLite file (a consistent snapshot: VACUUM INTO reads in one transaction). */
export function imageOf(db: Db): Buffer {
  return withTempFile((file) => {
    db.prepare('VACUUM INTO ?').run(file);
    return readFileSync(file);
  });
}

/** `image` (SQLite file bytes) written to a private temporary file for `fn`, which opens it as it needs. */
export function withImageFile<T>(image: Uint8Array, fn: (file: string) => T): T {
  return withTempFile((file) => {
    writeFileSync(file, image, { mode: 0o600 });
    return fn(file);
  });
}

const quoted = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/**
 * A new database in memory holding everything the SQLite file at `path` holds: its tables with
 * their rows, indexes, AUTOINCREMENT counters and user_version. The file is only read. Its schema
 * is replayed as it is written there: callers check it first when the file is not ours
 * (store-image.ts).
 */
export function memoryCopyOf(path: string): Db {
  const db = openDb(':memory:');
  try {
    db.prepare('ATTACH DATABASE ? AS src').run(path);
    transaction(db, () => {
      const objects = db
        .prepare(
          "SELECT type, name, sql FROM src.sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type <> 'table', rowid",
        )
        .all() as { type: string; name: string; sql: string }[];
      for (const o of objects) {
        db.exec(o.sql);
        if (o.type === 'table') db.exec(`INSERT INTO main.${quoted(o.name)} SELECT * FROM src.${quoted(o.name)}`);
      }
      const sequences = db.prepare("SELECT 1 FROM src.sqlite_master WHERE name = 'sqlite_sequence'").get();
      if (sequences !== undefined) {
        db.exec('DELETE FROM main.sqlite_sequence; INSERT INTO main.sqlite_sequence SELECT * FROM src.sqlite_sequence');
      }
      db.exec(`PRAGMA main.user_version = ${Number(pragma(db, 'src.user_version'))}`);
    });
    db.exec('DETACH DATABASE src');
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}
