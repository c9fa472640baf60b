/**
 * The store as one value (store-image.ts): an image of a store opens as a store with what it held;
 * what is not one (garbage, another SQLite database, a newer schema, too many bytes, a damaged
 * copy) is refused with a reason, never thrown.
 */
import t from 'tap';
import { DatabaseSync } from 'node:sqlite';
import { MAX_IMAGE_BYTES, openImage } from '../../src/uptime/share/store-image.js';
import { SCHEMA_VERSION, UptimeStore } from '../../src/uptime/store/store.js';
import { imageOf as dbImage } from '../../src/uptime/store/sqlite.js';

const T0 = Date.UTC(2026, 3, 1, 12);

function imageOf(store: UptimeStore): Buffer {
  return store.tx(null, dbImage);
}

t.test('an image opens as the store it was, and a store adopts it', async (t) => {
  const a = UptimeStore.memory();
  a.add({ t: T0, reachable: true, advancing: false });
  a.openIncident('unreachable', T0, 'no node answered', T0);
  const opened = openImage(imageOf(a));
  t.ok('db' in opened, 'opened');
  const b = UptimeStore.memory();
  if ('db' in opened) b.adopt(opened.db);
  t.same(b.counts(), { probes: 1, minutes: 0, hours: 0, incidents: 1 }, 'what it held');
  t.same(b.tally(0), { probes: 1, ok: 0 });
  b.add({ t: T0 + 5_000, reachable: true, advancing: true });
  b.flush(T0 + 5_000);
  t.equal(b.counts().probes, 2, 'the adopted copy takes writes');
  t.equal(b.persistent, false, 'in memory');
  a.close(T0);
  b.close(T0);
});

t.test('what is not an image of a store is refused, never thrown', async (t) => {
  t.match(openImage(Buffer.from('not a database at all, just some bytes long enough')), { refused: /./ }, 'garbage');
  t.match(openImage(Buffer.alloc(0)), { refused: /./ }, 'empty');
  const other = new DatabaseSync(':memory:');
  other.exec('CREATE TABLE users (name TEXT)');
  t.match(openImage(dbImage(other)), { refused: /not those of the uptime store/ }, 'another database');
  other.exec('PRAGMA user_version = 99');
  t.match(openImage(dbImage(other)), { refused: /newer/ }, 'a newer schema');
  const store = UptimeStore.memory();
  const image = imageOf(store);
  const damaged = Buffer.from(image);
  damaged.fill(0xff, 100, Math.min(damaged.length, 4_000));
  t.match(openImage(damaged), { refused: /./ }, 'damaged');
  t.match(openImage(Buffer.alloc(MAX_IMAGE_BYTES + 1)), { refused: /over/ }, 'too large');
  const sameName = new DatabaseSync(':memory:');
  sameName.exec('CREATE TABLE probes (t INTEGER)');
  sameName.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
  t.match(openImage(dbImage(sameName)), { refused: /not those of the uptime store/ }, 'our version, other tables');
  store.close(T0);
});
