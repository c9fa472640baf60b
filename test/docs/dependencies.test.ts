// Every package the project depends on is recorded, with why it was chosen, in the Dependencies
// table of docs/operations.md (type packages aside: they only describe another package).

import t from 'tap';
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as Record<
  string,
  Record<string, string> | undefined
>;
const page = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
const table = page.slice(page.indexOf('## Dependencies'));

t.test('docs/operations.md records every dependency', async (t) => {
  t.ok(page.includes('## Dependencies'), 'the page has a Dependencies section');
  const names = ['dependencies', 'optionalDependencies', 'devDependencies'].flatMap((k) => Object.keys(pkg[k] ?? {}));
  t.ok(names.length > 10, `${names.length} packages`);
  for (const name of names.filter((n) => !n.startsWith('@types/'))) {
    const row = table.split('\n').find((l) => l.startsWith('|') && l.includes(`\`${name}\``));
    t.ok(
      row !== undefined && row.split('|').length >= 4 && row.split('|')[2]!.trim() !== '',
      `${name}: a row saying why`,
    );
  }
});
