/**
 * The report's incident lines are made again only when the incidents changed (report.ts,
 * incidentLines): the same lines while nothing did, new ones after every kind of change a line
 * shows (an incident opened by hand or by a probe, an update, a close, a post-mortem) and when an
 * incident leaves the 30-day window, or another replica's image replaces the store's database.
 */
import t from 'tap';
import { incidentLines } from '../../src/uptime/report.js';
import { openImage } from '../../src/uptime/share/store-image.js';
import { UptimeStore } from '../../src/uptime/store/store.js';
import { imageOf } from '../../src/uptime/store/sqlite.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 1);

t.test('the lines are kept until the incidents change', async (t) => {
  const store = UptimeStore.memory();
  t.teardown(() => store.close(T0));
  const opened = store.told.open('Slow answers', 'investigating', 'looking', T0) as { id: number };
  const first = incidentLines(store, T0 + 1);
  t.equal(first.length, 1);
  t.equal(incidentLines(store, T0 + 2), first, 'nothing changed: the same lines, not read again');

  const steps: [string, () => void, (lines: ReturnType<typeof incidentLines>) => boolean][] = [
    [
      'an update',
      () => store.told.update(opened.id, 'identified', 'found it', T0 + 10),
      (l) => l[0]!.updates.length === 2,
    ],
    [
      'resolved (closes a hand-opened incident)',
      () => store.told.update(opened.id, 'resolved', 'fixed', T0 + 20),
      (l) => l[0]!.endedAt !== null,
    ],
    ['a post-mortem', () => store.told.postmortem(opened.id, '# What happened', T0 + 30), (l) => l[0]!.postmortem],
    [
      "a probe's incident",
      () => store.openIncident('stalled', T0 + 40, 'The chain is not advancing', T0 + 40),
      (l) => l.length === 2 && l[0]!.kind === 'stalled',
    ],
  ];
  let before = incidentLines(store, T0 + 3);
  for (const [what, change, shows] of steps) {
    change();
    const after = incidentLines(store, T0 + 50);
    t.not(after, before, `${what}: the lines are made again`);
    t.ok(shows(after), `${what}: the new lines show it`);
    t.equal(incidentLines(store, T0 + 51), after, `${what}: then kept again`);
    before = after;
  }
});

t.test('an incident older than 30 days leaves the lines', async (t) => {
  const store = UptimeStore.memory();
  t.teardown(() => store.close(T0));
  const old = store.told.open('Old', 'investigating', 'x', T0) as { id: number };
  store.told.update(old.id, 'resolved', 'done', T0 + 1_000);
  t.equal(incidentLines(store, T0 + DAY).length, 1);
  t.equal(incidentLines(store, T0 + 31 * DAY).length, 0, 'past the window: gone');
});

t.test("another replica's image is read anew, even where its ids and counts match", async (t) => {
  const [a, b] = [UptimeStore.memory(), UptimeStore.memory()];
  t.teardown(() => {
    a.close(T0);
    b.close(T0);
  });
  // The same incident at both, then one update each while apart: same ids, same counts, other text.
  for (const s of [a, b]) s.told.open('Slow answers', 'investigating', 'looking', T0);
  a.told.update(1, 'monitoring', 'Written at a.', T0 + 10);
  b.told.update(1, 'monitoring', 'Written at b.', T0 + 10);
  t.equal(incidentLines(a, T0 + 20)[0]!.updates[0]!.message, 'Written at a.');
  const opened = openImage(b.tx(null, imageOf));
  if (!('db' in opened)) throw new Error(opened.refused);
  a.adopt(opened.db);
  t.equal(incidentLines(a, T0 + 20)[0]!.updates[0]!.message, 'Written at b.', "b's image: b's update");
});
