/**
 * Windows told once across replicas (maintenance.ts reload, SPEC 12 Replicas): a replica that
 * loads another's store image takes as told what the prober's list says and what it told by hand,
 * so when it becomes the prober it tells what the old one had not yet, and never a window another
 * replica ended by hand. A list that is not one (the image is input) reads as empty.
 */
import t from 'tap';
import { Maintenance, type MaintenanceChange, type WindowKeeper } from '../../src/uptime/maintenance.js';

const T0 = Date.UTC(2026, 3, 1, 12);
const MIN = 60_000;

/** One stored table shared by two replicas' keepers, as the shared image makes it. */
function table() {
  const rows: { id: number; title: string; start: number; end: number }[] = [];
  const keeper: WindowKeeper = {
    load: () => rows.map((r) => ({ ...r })),
    insert: (w) => {
      rows.push({ ...w, id: rows.length + 1 });
      return rows.length;
    },
    change: (id, end) => {
      const r = rows.find((x) => x.id === id);
      if (r && end !== null) r.end = end;
      return true;
    },
  };
  return { rows, keeper };
}

function replica(keeper: WindowKeeper) {
  const m = new Maintenance(keeper, [], T0);
  const told: string[] = [];
  m.subscribe((c: MaintenanceChange) => told.push(`${c.event} ${c.window.title}`));
  return { m, told };
}

t.test('the prober’s list carries over to a replica that becomes the prober', async (t) => {
  const { rows, keeper } = table();
  const p = replica(keeper);
  const o = replica(keeper);
  rows.push({ id: 1, title: 'Timed', start: T0 + MIN, end: T0 + 3 * MIN });
  o.m.reload(T0, false, p.m.toldText());
  p.m.reload(T0, true, undefined);
  p.m.tick(T0 + MIN);
  t.same(p.told, ['started Timed'], 'the prober tells the start');
  // The prober stops before it ticks past the end; the other loads its last image after the end,
  // then becomes the prober.
  o.m.reload(T0 + 3 * MIN + 1, false, p.m.toldText());
  o.m.tick(T0 + 3 * MIN + 2);
  t.same(o.told, ['ended Timed'], 'the new prober tells the end once, never the start again');
});

t.test('a window ended by hand at one replica is not told again by another', async (t) => {
  const { keeper } = table();
  const p = replica(keeper);
  const o = replica(keeper);
  const added = o.m.add(
    { start: new Date(T0 - MIN).toISOString(), end: new Date(T0 + 10 * MIN).toISOString(), title: 'Hand' },
    T0,
  );
  t.notOk('error' in added);
  t.same(o.told, ['started Hand'], 'told by the replica that made it');
  p.m.reload(T0 + 1, true, undefined);
  p.m.tick(T0 + 2);
  t.same(p.told, [], 'the prober takes it as told');
  const id = 'window' in added ? added.window.id : '';
  o.m.end(id, T0 + MIN);
  t.same(o.told, ['started Hand', 'ended Hand']);
  p.m.reload(T0 + MIN + 1, true, undefined);
  p.m.tick(T0 + MIN + 2);
  t.same(p.told, [], 'the prober does not tell the end again');
});

t.test('a told list that is not one reads as empty', async (t) => {
  const { rows, keeper } = table();
  const o = replica(keeper);
  rows.push({ id: 1, title: 'W', start: T0 - MIN, end: T0 + MIN });
  for (const bad of ['{', '"admin-1"', '[1, 2]', JSON.stringify(['x'.repeat(100)]), 'null']) {
    o.m.reload(T0, false, bad);
    t.equal(JSON.parse(o.m.toldText()).length, 0, `refused: ${bad.slice(0, 20)}`);
  }
  o.m.reload(T0, false, '["admin-1"]');
  t.same(JSON.parse(o.m.toldText()), ['admin-1'], 'a good list is taken');
});
