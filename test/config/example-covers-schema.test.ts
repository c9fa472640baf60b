// config/example.yaml documents every option of the schema. The paths come from the zod schema
// itself (src/config/keys.ts), so a key added to the schema and not to the example fails here
// with its path named. An option under a value that is null or [] in the example (devnet,
// rateLimit.apiKeys[]) is documented by a commented-out line `# key: ...` in the example. Every
// value it sets (upstreams aside) is the default, so its comments can call them defaults.

import t from 'tap';
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { isDeepStrictEqual } from 'node:util';
import { schemaKeyPaths } from '../../src/config/keys.js';
import { validateConfig } from '../../src/config/load.js';
import { DEFAULT_METHOD_COST } from '../../src/config/schema.js';

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

t.test("config/example.yaml's values are the defaults it says they are", async (t) => {
  // Every value the example sets outside `upstreams` (which is an example of the operator's own) is
  // what a config that sets nothing gets: a comment next to it can then say "default" without lying.
  const defaults = validateConfig({ upstreams: [{ name: 'a', url: 'http://127.0.0.1:1' }] }) as unknown;
  const differ: string[] = [];
  const walk = (example: unknown, fallback: unknown, path: string): void => {
    if (path === 'upstreams') return;
    if (example !== null && typeof example === 'object' && !Array.isArray(example)) {
      for (const [k, v] of Object.entries(example))
        walk(v, (fallback as Record<string, unknown> | null)?.[k], path === '' ? k : `${path}.${k}`);
      return;
    }
    if (!isDeepStrictEqual(example, fallback))
      differ.push(`${path}: example ${JSON.stringify(example)}, default ${JSON.stringify(fallback)}`);
  };
  walk(DOC, defaults, '');
  t.same(differ, [], 'every value in the example is the default');
  const costs = (DOC as { rateLimit: { methodCost: unknown } }).rateLimit.methodCost;
  t.same(costs, DEFAULT_METHOD_COST, 'rateLimit.methodCost lists every default cost');
});
