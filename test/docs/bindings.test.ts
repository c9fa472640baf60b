// Docs that no other test binds: every metric the registry declares has its row in
// docs/observability.md (written without the `switchyard_` prefix, in backticks, alone or with its
// labels), and every folder of src/ has its row in docs/architecture.md's Rooms table.

import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { Metrics } from '../../src/metrics/registry.js';

const doc = (page: string): string => readFileSync(new URL(`../../docs/${page}`, import.meta.url), 'utf8');

t.test('docs/observability.md names every metric of the registry', async (t) => {
  const page = doc('observability.md');
  const names = new Metrics({ processMetrics: false }).registry.getMetricsAsArray().map((m) => m.name);
  t.ok(names.length > 40, `${names.length} metrics in the registry`);
  const missing = names.filter((n) => {
    const short = n.replace(/^switchyard_/, '');
    return !page.includes(`\`${short}\``) && !page.includes(`\`${short}{`);
  });
  for (const n of missing) t.fail(`docs/observability.md has no row for ${n}: add it to the metrics table`);
  t.same(missing, [], 'no metric missing from docs/observability.md');
});

t.test("docs/architecture.md's Rooms table names every folder of src/", async (t) => {
  const page = doc('architecture.md');
  const table = page.slice(page.indexOf('## Rooms'), page.indexOf('\n## ', page.indexOf('## Rooms') + 1));
  const folders = readdirSync(new URL('../../src/', import.meta.url), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => `${e.name}/`);
  t.ok(folders.length > 10, `${folders.length} folders in src/`);
  const missing = folders.filter((f) => !table.includes(`\`${f}\``));
  for (const f of missing) t.fail(`docs/architecture.md's Rooms table has no row for src/${f}`);
  t.same(missing, [], 'no folder missing from the Rooms table');
});
