// config/example.yaml documents every option of the schema. The paths come from the zod schema
// itself (src/config/keys.ts), so a key added to the schema and not to the example fails here
// with its path named. An option under a value that is null or [] in the example (devnet,
// rateLimit.apiKeys[]) is documented by a commented-out line `# key: ...` in the example.

import t from 'tap';
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { schemaKeyPaths } from '../../src/config/keys.js';

const TEXT = readFileSync(new URL('../../config/example.yaml', import.meta.url), 'utf8');
const DOC = YAML.parse(TEXT) as unknown;

/** The values at a path (`a.b[].c`): arrays fan out to their elements. */
function valuesAt(root: unknown, path: string): unknown[] {
  let here: unknown[] = [root];
  for (const part of path.split('.')) {
    const [key, ...arrays] = part.split('[]');
    const next: unknown[] = [];
    for (const v of here) {
      if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.hasOwn(v, key!))
        next.push((v as Record<string, unknown>)[key!]);
    }
    here = next;
    for (let i = 0; i < arrays.length; i++) here = here.flatMap((v) => (Array.isArray(v) ? v : []));
  }
  return here;
}

function commentedOut(leaf: string): boolean {
  return new RegExp(`^\\s*#\\s*(- )?${leaf}:`, 'm').test(TEXT);
}

t.test('config/example.yaml documents every schema key', async (t) => {
  const paths = schemaKeyPaths();
  t.ok(paths.length > 50, `${paths.length} option paths in the schema`);
  const missing: string[] = [];
  for (const path of paths) {
    if (valuesAt(DOC, path).length > 0) continue;
    const parent = path.replace(/(\[\])?\.?[^.[\]]+$/, '');
    const parentValues = parent === '' ? [DOC] : valuesAt(DOC, parent.replace(/\[\]$/, ''));
    const leaf = path.slice(path.lastIndexOf('.') + 1);
    const emptyParent =
      parentValues.length > 0 && parentValues.every((v) => v === null || (Array.isArray(v) && v.length === 0));
    if (emptyParent && commentedOut(leaf)) continue;
    missing.push(path);
  }
  for (const path of missing)
    t.fail(
      `config/example.yaml does not document "${path}": add it there with a comment (or as a commented-out "# ${path.slice(path.lastIndexOf('.') + 1)}: ..." line under its null/empty parent)`,
    );
  t.same(missing, [], 'no schema key missing from config/example.yaml');
});

t.test('the walker sees nested, array and nullable keys', async (t) => {
  const paths = schemaKeyPaths();
  for (const p of [
    'server.cors.origins',
    'upstreams[].url',
    'rateLimit.perIp.burst',
    'rateLimit.apiKeys[].key',
    'devnet.nodes',
    'log.requests',
  ])
    t.ok(paths.includes(p), p);
});
