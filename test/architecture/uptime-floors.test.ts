// The floors inside uptime/ (docs/architecture.md, docs/uptime-page.md#where-the-code-is):
//   store/   the SQLite store: imports nothing of uptime outside store/;
//   the core (the files at uptime/'s top but index.ts and view.ts): imports store/ and itself only;
//   view.ts  the one door to the core: re-exports from the core and store/, nothing else of uptime;
//   share/   the store shared through Redis: imports store/ only;
//   pages/, notify/  import from the rest of uptime only through view.ts (pages/ may use notify/'s
//            feed; notify/ never imports pages/);
//   index.ts the room: puts them together.
// From outside uptime/, other rooms import only the room (index.ts), the door (view.ts) and the
// public routes (pages/routes.ts, pages/page-memo.ts).

import t from 'tap';
import { fileURLToPath } from 'node:url';
import { importGraph } from './import-graph.js';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const graph = importGraph(SRC);

type Floor = 'store' | 'core' | 'view' | 'share' | 'pages' | 'notify' | 'index';
function floorOf(file: string): Floor | null {
  if (!file.startsWith('uptime/')) return null;
  const rest = file.slice('uptime/'.length);
  if (rest === 'index.ts') return 'index';
  if (rest === 'view.ts') return 'view';
  const sub = rest.includes('/') ? rest.slice(0, rest.indexOf('/')) : null;
  if (sub === null) return 'core';
  if (sub === 'store' || sub === 'share' || sub === 'pages' || sub === 'notify') return sub;
  throw new Error(`uptime/${sub}/ is a sub-room this test does not know: declare its floor`);
}

/** What each floor may import of uptime (its own floor always). */
const MAY: Record<Floor, readonly Floor[]> = {
  store: [],
  core: ['store'],
  view: ['core', 'store'],
  share: ['store'],
  pages: ['view', 'notify'],
  notify: ['view'],
  index: ['store', 'core', 'view', 'share', 'pages', 'notify'],
};

const OPEN_FROM_OUTSIDE = new Set([
  'uptime/index.ts',
  'uptime/view.ts',
  'uptime/pages/routes.ts',
  'uptime/pages/page-memo.ts',
]);

t.test('uptime has the files this test reads', async (t) => {
  const floors = new Set([...graph.files.keys()].map(floorOf).filter((f) => f !== null));
  t.same([...floors].sort(), ['core', 'index', 'notify', 'pages', 'share', 'store', 'view']);
});

t.test('each uptime floor imports only the floors declared below it', async (t) => {
  const wrong: string[] = [];
  for (const [from, to] of graph.files) {
    const a = floorOf(from);
    if (a === null) continue;
    for (const target of to) {
      const b = floorOf(target);
      if (b === null || b === a || MAY[a].includes(b)) continue;
      wrong.push(`${from} (${a}) -> ${target} (${b})`);
    }
  }
  t.same(wrong, [], 'no import across uptime floors but those declared');
});

t.test('other rooms import uptime only through its room, its door and its public routes', async (t) => {
  const wrong: string[] = [];
  for (const [from, to] of graph.files) {
    if (floorOf(from) !== null) continue;
    for (const target of to)
      if (floorOf(target) !== null && !OPEN_FROM_OUTSIDE.has(target)) wrong.push(`${from} -> ${target}`);
  }
  t.same(wrong, [], 'no import of uptime internals from outside');
});
