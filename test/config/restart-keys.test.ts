/**
 * docs/configuration.md lists the options a reload cannot change ("Read at start" under "Reload"):
 * the list is RESTART_KEYS (config/restart.ts), the one list the reload keeps at running values, and
 * every entry names an option of the schema.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { RESTART_KEYS } from '../../src/config/restart.js';
import { schemaKeyPaths } from '../../src/config/keys.js';

const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');

/** The keys named at the start of each list item of the "Read at start" subsection of "Reload". */
function documentedRestartKeys(): string[] {
  const reload = doc.split(/^## /m).find((s) => s.startsWith('Reload\n')) ?? '';
  const atStart = reload.split(/^### /m).find((s) => s.startsWith('Read at start\n')) ?? '';
  const keys: string[] = [];
  for (const item of atStart.match(/^- .*$/gm) ?? []) {
    const lead = item.split(':')[0]!;
    for (const m of lead.matchAll(/`([^`]+)`/g)) keys.push(m[1]!);
  }
  return keys;
}

t.test('the docs list exactly the keys a reload keeps at their running values', async (t) => {
  t.same(documentedRestartKeys().sort(), [...RESTART_KEYS].sort());
});

t.test('every restart key is an option of the schema', async (t) => {
  const options = new Set(schemaKeyPaths());
  for (const k of RESTART_KEYS) t.ok(options.has(k), k);
});
