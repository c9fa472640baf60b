/**
 * The uptime store as one value (SPEC 12 Replicas): the bytes of a SQLite file holding the whole
 * database (sqlite.ts makes them and opens them in memory). What Redis holds is input: an image
 * over MAX_IMAGE_BYTES, one that is not a SQLite database, is damaged, is from a newer schema, or
 * whose tables are not exactly ours is refused with a reason, never used and never thrown. It is
 * checked in its own temporary file before a row of it is copied into memory.
 * Figures (a full store: a day of 5 s probes, a week of minutes, 91 days of hours and of latency
 * hours, 70 incidents with 20 post-mortems): 1.3 MB; image 10 ms, open and check 25 ms.
 */
import { type Db, imageOf, memoryCopyOf, openDb, withImageFile } from '../store/sqlite.js';
import { prepare } from '../store/store-schema.js';

export { imageOf };

/** An image is refused above this (publishing and loading alike): about 12 times a full store. */
export const MAX_IMAGE_BYTES = 16 * 1024 * 1024;

let expected: string | null = null;

/** The schema a database of ours has (tables, indexes, their SQL), as text to compare. */
function schemaOf(db: Db): string {
  const rows = db
    .prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")
    .all();
  return JSON.stringify(rows);
}

function ours(): string {
  if (expected === null) {
    const db = prepare(openDb(':memory:'), ':memory:');
    expected = schemaOf(db);
    db.close();
  }
  return expected;
}

/** The image opened in memory, migrated and checked; or why it was refused. */
export function openImage(image: Uint8Array): { db: Db } | { refused: string } {
  if (image.length > MAX_IMAGE_BYTES) return { refused: `${image.length} bytes, over ${MAX_IMAGE_BYTES}` };
  // Fewer bytes than SQLite's smallest page would open as a new, empty database: not an image.
  if (image.length < 512) return { refused: `${image.length} bytes: not an SQLite database` };
  try {
    return {
      db: withImageFile(image, (file) => {
        // Checked and migrated where it lies; only a database with exactly our tables is copied.
        const checked = openDb(file);
        try {
          prepare(checked, 'redis');
          if (schemaOf(checked) !== ours()) throw new Error('its tables are not those of the uptime store');
        } finally {
          checked.close();
        }
        return memoryCopyOf(file);
      }),
    };
  } catch (err) {
    return { refused: (err as Error).message.slice(0, 200) };
  }
}
