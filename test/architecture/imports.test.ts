// Imports run one way, down the floors (STYLE.md's house): no circle among the files of src/ and
// none among its top-level folders. Type-only imports count too. A failure prints a shortest loop.

import t from 'tap';
import { fileURLToPath } from 'node:url';
import { circles, importGraph, loopThrough } from './import-graph.js';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const graph = importGraph(SRC);

t.test('the graph is read', async (t) => {
  const edges = [...graph.files.values()].reduce((n, to) => n + to.size, 0);
  t.ok(graph.files.size > 100, `${graph.files.size} files`);
  t.ok(edges > 300, `${edges} imports between them`);
  t.ok(graph.files.get('app.ts')?.has('metrics/registry.ts'), 'app.ts -> metrics/registry.ts is seen');
  t.ok(graph.folders.get('server/')?.has('pipeline/'), 'server/ -> pipeline/ is seen');
});

t.test('no import circle among src files', async (t) => {
  const found = circles(graph.files);
  for (const c of found)
    t.fail(`${c.length} files import one another in a circle: ${loopThrough(graph.files, c).join(' -> ')}`);
  t.same(found, [], 'no file circle');
});

t.test('no import circle among src folders', async (t) => {
  const found = circles(graph.folders);
  for (const c of found) {
    const loop = loopThrough(graph.folders, c);
    const why = loop.slice(1).map((b, k) => graph.why.get(`${loop[k]}>${b}`));
    t.fail(`folders import one another in a circle: ${loop.join(' -> ')} (${why.join('; ')})`);
  }
  t.same(found, [], 'no folder circle');
});
