// docs/configuration.md documents every option of the schema: each path the zod schema holds
// (src/config/keys.ts, so the list can never drift from it) is written there in backticks, as a
// row of its table or the heading of its section. config/example.yaml has its own test.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { schemaKeyPaths } from '../../src/config/keys.js';

const PAGE = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');

t.test('docs/configuration.md names every schema option', async (t) => {
  const paths = schemaKeyPaths();
  t.ok(paths.length > 50, `${paths.length} option paths in the schema`);
  const missing = paths.filter((p) => !PAGE.includes(`\`${p}\``));
  for (const p of missing)
    t.fail(`docs/configuration.md does not document \`${p}\`: add a row for it under "Every option"`);
  t.same(missing, [], 'no schema option missing from docs/configuration.md');
});

t.test('the page has the Reload section other docs link to', async (t) => {
  t.match(PAGE, /^## Reload$/m);
});
