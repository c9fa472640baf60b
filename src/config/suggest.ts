/**
 * "Did you mean": the known option closest to a misspelt one, at the same level of the schema.
 * Owns: the edit distance and the bound past which nothing is suggested. Refuses: wording (load.ts).
 */
import { schemaKeyPaths } from './keys.js';

/** Past two edits a suggestion is more often a different option than the intended one. */
const MAX_EDITS = 2;

let siblingsByParent: Map<string, string[]> | undefined;

/** Option names per parent path in schema spelling (`''`, `server`, `upstreams[]`), read once. */
function siblings(): Map<string, string[]> {
  if (siblingsByParent !== undefined) return siblingsByParent;
  siblingsByParent = new Map();
  for (const path of schemaKeyPaths()) {
    const dot = path.lastIndexOf('.');
    const parent = dot < 0 ? '' : path.slice(0, dot);
    const name = dot < 0 ? path : path.slice(dot + 1);
    const list = siblingsByParent.get(parent) ?? [];
    list.push(name);
    siblingsByParent.set(parent, list);
  }
  return siblingsByParent;
}

/** An issue's path (`['upstreams', 0]`) in the spelling of schemaKeyPaths (`upstreams[]`). */
function schemaPath(path: readonly PropertyKey[]): string {
  let s = '';
  for (const p of path) s += typeof p === 'number' ? '[]' : s === '' ? String(p) : `.${String(p)}`;
  return s;
}

/**
 * The known option at `parent` closest to `key` within MAX_EDITS (a swap of two neighbouring
 * letters counts as one edit, `prot` -> `port`), or null. Ties go to the schema's order. An option
 * the mapping already has (`given`) is no suggestion: `prot` beside `port` is something else.
 */
export function closestOption(
  parent: readonly PropertyKey[],
  key: string,
  given: readonly string[] = [],
): string | null {
  const known = (siblings().get(schemaPath(parent)) ?? []).filter((name) => !given.includes(name));
  // A key of one or two letters is within two edits of every short name: it gets fewer.
  const limit = Math.min(MAX_EDITS, key.length - 1);
  let best: string | null = null;
  let bestDistance = limit + 1;
  for (const name of known) {
    const d = editDistance(key, name);
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0]!.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]!.push(d);
    }
  }
  return rows[a.length]![b.length]!;
}
