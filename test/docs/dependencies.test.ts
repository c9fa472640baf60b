// Every package the project depends on is recorded, with why it was chosen, in the Dependencies
// table of docs/operations.md (type packages aside: they only describe another package).

import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

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

/** Every source, test and build script as one text, and what else runs commands (the scripts, tap's config, CI). */
function projectText(): { code: string; commands: string } {
  const root = new URL('../../', import.meta.url);
  const files: string[] = [];
  for (const dir of ['src', 'test', 'scripts'])
    for (const f of readdirSync(new URL(dir, root), { recursive: true, encoding: 'utf8' }))
      if (/\.(ts|mts|js|mjs|cjs)$/.test(f)) files.push(readFileSync(new URL(`${dir}/${f}`, root), 'utf8'));
  const extra = ['.taprc', '.ci/run', 'Dockerfile']
    .map((f) => new URL(f, root))
    .filter((u) => existsSync(u))
    .map((u) => readFileSync(u, 'utf8'));
  return { code: files.join('\n'), commands: [...Object.values(pkg.scripts ?? {}), ...extra].join('\n') };
}

t.test('every declared package is used: imported somewhere, or its command run by a script', async (t) => {
  const { code, commands } = projectText();
  const names = ['dependencies', 'optionalDependencies', 'devDependencies'].flatMap((k) => Object.keys(pkg[k] ?? {}));
  for (const name of names.filter((n) => !n.startsWith('@types/'))) {
    const quoted = name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    // Imported by name, or a file of it read by path (axe-core's script, run inside a page).
    const imported = new RegExp(`['"\`]${quoted}(?:/[^'"\`]*)?['"\`]|node_modules/${quoted}/`).test(code);
    // An optional package may be left out of this install: then only an import can count.
    const at = new URL(`../../node_modules/${name}/package.json`, import.meta.url);
    const manifest = (existsSync(at) ? JSON.parse(readFileSync(at, 'utf8')) : {}) as {
      bin?: string | Record<string, string>;
    };
    const bins = typeof manifest.bin === 'string' ? [name.replace(/^@[^/]+\//, '')] : Object.keys(manifest.bin ?? {});
    const run = bins.some((b) =>
      new RegExp(`(^|[\\s'"/])${b.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\s|$)`, 'm').test(commands),
    );
    t.ok(imported || run, `${name}: ${imported ? 'imported' : run ? 'its command is run' : 'declared and never used'}`);
  }
});

t.test('the scripts run tools by their command, not by a platform path', async (t) => {
  for (const [name, script] of Object.entries(pkg.scripts ?? {}))
    t.notMatch(script, /node_modules\//, `${name}: no path into node_modules (it names one platform's package)`);
});
