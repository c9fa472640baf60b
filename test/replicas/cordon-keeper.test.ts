/**
 * The cordon file (replicas/cordon-keeper.ts), without Redis: a cordon written is read back by the
 * next keeper of the same file; a file that is not ours is left as it is and cordons are kept in
 * memory; a file that cannot be written moves them to memory without refusing the cordon; and the
 * cordons an older version kept in the uptime store (fixtures/store-v4.db) are carried over once.
 */
import t from 'tap';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { cordonFileBeside, FileCordons, type CarriedCordons } from '../../src/replicas/cordon-keeper.js';
import type { Cordon } from '../../src/upstream/cordons.js';
import { UptimeStore } from '../../src/uptime/store/store.js';

const FIXTURE = fileURLToPath(new URL('../uptime/fixtures/store-v4.db', import.meta.url));
const quiet = pino({ level: 'silent' });

async function read(keeper: FileCordons): Promise<ReadonlyMap<string, Cordon>> {
  let seen: ReadonlyMap<string, Cordon> = new Map();
  await keeper.start((all) => (seen = all));
  return seen;
}

t.test('beside the store: same folder, its own name', async (t) => {
  t.equal(cordonFileBeside('/var/lib/sy/uptime.db'), '/var/lib/sy/uptime.cordons.json');
  t.equal(cordonFileBeside('/data/history'), '/data/history.cordons.json');
});

t.test('a cordon written is read back by the next keeper; a lifted one is gone', async (t) => {
  const file = join(t.testdir(), 'sub', 'uptime.cordons.json');
  const first = new FileCordons(file, quiet);
  t.same(await read(first), new Map(), 'no file yet: none');
  await first.put('node-1', { reason: 'disk swap', at: 1_000 });
  await first.put('node-2', { reason: null, at: 2_000 });
  t.equal(first.keptIn, 'file');
  t.same(
    await read(new FileCordons(file, quiet)),
    new Map([
      ['node-1', { reason: 'disk swap', at: 1_000 }],
      ['node-2', { reason: null, at: 2_000 }],
    ]),
  );
  await first.drop('node-1');
  t.same([...(await read(new FileCordons(file, quiet))).keys()], ['node-2'], 'the uncordon was kept');
});

t.test('a file that is not ours is left as it is; cordons are kept in memory', async (t) => {
  const dir = t.testdir();
  for (const [name, text] of [
    ['not-json', 'not json'],
    ['null', 'null'],
    ['other-format', '{"format":2,"cordons":{}}'],
    ['too-big', `{"format":1,"cordons":{},"pad":"${'x'.repeat(300_000)}"}`],
  ] as const) {
    const file = join(dir, `${name}.json`);
    writeFileSync(file, text);
    const keeper = new FileCordons(file, quiet);
    t.same(await read(keeper), new Map(), `${name}: none read`);
    t.equal(keeper.keptIn, 'memory', `${name}: kept in memory`);
    await keeper.put('node-1', { reason: null, at: 1 });
    t.equal(readFileSync(file, 'utf8'), text, `${name}: the file is left as it is`);
  }
});

t.test('entries that are not cordons of upstream names are left out', async (t) => {
  const file = join(t.testdir(), 'c.json');
  const cordons = {
    'node-1': { reason: 'ok', at: 5 },
    'bad name!': { reason: null, at: 1 },
    'node-2': { reason: 7, at: 1 },
    'node-3': { reason: null, at: -1 },
  };
  writeFileSync(file, JSON.stringify({ format: 1, cordons }));
  t.same(await read(new FileCordons(file, quiet)), new Map([['node-1', { reason: 'ok', at: 5 }]]));
});

t.test('a file that cannot be written: the cordon is taken, kept in memory from then on', async (t) => {
  const file = join(t.testdir(), 'c.json');
  const keeper = new FileCordons(file, quiet);
  await read(keeper);
  // The temporary file it writes first is a folder: the write fails, as root too.
  mkdirSync(`${file}.tmp`);
  await keeper.put('node-1', { reason: null, at: 1 });
  t.equal(keeper.keptIn, 'memory');
  t.notOk(existsSync(file), 'nothing written');
});

t.test('cordons the uptime store kept (a v4 store file) are carried over once', async (t) => {
  const dir = t.testdir();
  const storeFile = join(dir, 'uptime.db');
  copyFileSync(FIXTURE, storeFile);
  const store = UptimeStore.open(storeFile, Date.UTC(2026, 0, 20));
  t.teardown(() => store.close(Date.UTC(2026, 0, 20)));
  let cleared = 0;
  const carried = (): CarriedCordons => ({
    rows: store.cordons(),
    clear: () => {
      cleared++;
      store.clearCordons(Date.UTC(2026, 0, 20));
    },
  });
  const file = cordonFileBeside(storeFile);
  const expected = new Map([['node-b', { reason: 'disk replacement', at: 1768086000000 }]]);
  t.same(await read(new FileCordons(file, quiet, carried())), expected, 'the old cordon is in force');
  t.equal(cleared, 1, 'the old rows are removed once written');
  t.same(store.cordons(), new Map(), 'the store holds none now');
  const next = new FileCordons(file, quiet, carried());
  t.same(await read(next), expected, 'read back from the file');
  t.equal(cleared, 1, 'nothing left to carry');
  await next.drop('node-b');
  t.same(await read(new FileCordons(file, quiet, carried())), new Map(), 'lifted: it does not come back');
});

t.test('an old row for a name the file has already: the file wins, the row still goes', async (t) => {
  const file = join(t.testdir(), 'c.json');
  writeFileSync(file, JSON.stringify({ format: 1, cordons: { 'node-b': { reason: 'newer', at: 9 } } }));
  const rows = new Map([['node-b', JSON.stringify({ reason: 'older', at: 1 })]]);
  let cleared = false;
  const all = await read(new FileCordons(file, quiet, { rows, clear: () => (cleared = true) }));
  t.same(all, new Map([['node-b', { reason: 'newer', at: 9 }]]));
  t.equal(cleared, true);
});

t.test('the old rows stay where they are while the file cannot be used', async (t) => {
  const file = join(t.testdir(), 'c.json');
  writeFileSync(file, 'damaged');
  const rows = new Map([['node-b', JSON.stringify({ reason: 'r', at: 1 })]]);
  let cleared = false;
  const all = await read(new FileCordons(file, quiet, { rows, clear: () => (cleared = true) }));
  t.same(all, new Map([['node-b', { reason: 'r', at: 1 }]]), 'in force, from memory');
  t.equal(cleared, false, 'not removed from the store');
});
