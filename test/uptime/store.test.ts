/**
 * The uptime store file: schema version and migrations, refusal of files it must not use
 * (not a database, damaged, newer schema, a folder), a process killed with SIGKILL in the middle
 * of writing (WAL: the file opens, intact, with every committed flush), and the size of 30 days
 * of 5-second probes after compaction.
 */
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import { fraction, uptimeWindows } from '../../src/uptime/report.js';
import { DAY_MS, SCHEMA_VERSION, StoreError, UptimeStore } from '../../src/uptime/store/store.js';
import { pragma } from '../../src/uptime/store/sqlite.js';

const T0 = Date.UTC(2026, 0, 1);

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-uptime-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('a new file gets the current schema; an existing one keeps its rows across open/close', async (t) => {
  const file = join(tempDir(t), 'nested', 'uptime.db');
  const a = UptimeStore.open(file, T0);
  t.equal(a.persistent, true);
  a.add({ t: T0, reachable: true, advancing: true });
  a.add({ t: T0 + 5_000, reachable: false, advancing: true });
  const inc = a.openIncident('unreachable', T0 + 5_000, 'No node answered eth_chainId with 0xba', T0 + 5_000);
  a.close(T0 + 6_000);
  const raw = new DatabaseSync(file, { readOnly: true });
  t.equal(pragma(raw, 'user_version'), SCHEMA_VERSION, 'schema version recorded');
  t.equal(pragma(raw, 'journal_mode'), 'wal', 'WAL journal');
  raw.close();
  const b = UptimeStore.open(file, T0 + 10_000);
  t.same(b.tally(T0), { probes: 2, ok: 1 }, 'probes survive');
  t.same(b.openIncidents(), [{ ...inc }], 'the open incident survives, same id');
  b.close(T0 + 10_000);
});

t.test(
  'an empty file (version 0) is migrated; a newer schema, garbage, damage or a folder are refused and left alone',
  async (t) => {
    const dir = tempDir(t);
    const empty = join(dir, 'empty.db');
    writeFileSync(empty, '');
    UptimeStore.open(empty, T0).close(T0);
    t.ok(statSync(empty).size > 0, 'migrated in place');

    const newer = join(dir, 'newer.db');
    const db = new DatabaseSync(newer);
    db.exec('PRAGMA user_version = 99');
    db.close();
    t.throws(() => UptimeStore.open(newer, T0), { name: 'StoreError', message: /schema version 99 is newer/ });

    const garbage = join(dir, 'garbage.db');
    writeFileSync(garbage, Buffer.alloc(8192, 'not a database. '));
    t.throws(() => UptimeStore.open(garbage, T0), StoreError);
    t.equal(readFileSync(garbage, 'utf8').slice(0, 16), 'not a database. ', 'the refused file is not touched');

    // A real store whose table pages are overwritten: the header is fine, the content is not.
    const damaged = join(dir, 'damaged.db');
    const s = UptimeStore.open(damaged, T0);
    for (let i = 0; i < 2_000; i++) s.add({ t: T0 + i * 5_000, reachable: true, advancing: true });
    s.close(T0 + 10_000_000);
    const fd = openSync(damaged, 'r+');
    writeSync(fd, Buffer.alloc(8192, 0xa5), 0, 8192, 4096);
    closeSync(fd);
    t.throws(() => UptimeStore.open(damaged, T0), { name: 'StoreError', message: /damaged|not a usable|malformed/ });

    t.throws(() => UptimeStore.open(dir, T0), StoreError, 'a folder is refused');
  },
);

t.test('killed with SIGKILL while writing: the file opens intact with every committed flush', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'uptime.db');
  const writer = fileURLToPath(new URL('./fixtures/hammer.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', writer, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let committed = 0;
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`writer exited early with ${code}`)));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const lines = out.trim().split('\n');
      committed = Number(lines[lines.length - 1]);
      // Kill while it is busy: many flushes in, more going.
      if (committed >= 300) resolve();
    });
  });
  child.removeAllListeners('exit');
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  const store = UptimeStore.open(file, T0 + DAY_MS);
  const probes = store.tally(0).probes;
  t.ok(probes >= committed * 12, `every flush reported committed is there (${committed} flushes, ${probes} probes)`);
  t.equal(probes % 12, 0, 'no flush is there in part');
  store.close(T0 + DAY_MS);
});

t.test('30 days of probes every 5 s stay small after compaction', async (t) => {
  const file = join(tempDir(t), 'uptime.db');
  const store = UptimeStore.open(file, T0);
  const end = T0 + 30 * DAY_MS;
  let n = 0;
  for (let at = T0; at < end; at += 5_000) {
    store.add({ t: at, reachable: true, advancing: n % 1000 !== 0 });
    if (++n % 120 === 0) store.flush(at);
  }
  store.flush(end);
  const counts = store.counts();
  t.same(
    counts,
    { probes: 17_280, minutes: 6 * 1440, hours: 23 * 24, incidents: 0 },
    'a day of probes, six days of minutes, 23 days of hours',
  );
  const w = uptimeWindows(store, end);
  t.equal(
    w['30d'],
    fraction({ probes: n, ok: n - Math.ceil(n / 1000) }),
    `30 d uptime from the compacted tiers: ${w['30d']}`,
  );
  store.close(end);
  const bytes = statSync(file).size;
  t.ok(bytes < 1_500_000, `${n} probes in ${(bytes / 1024).toFixed(0)} KiB`);
  t.comment(`30 days at 5 s: ${n} probes, store file ${bytes} bytes`);
});
