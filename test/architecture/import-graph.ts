// The import graph of a source tree, as the compiler's pre-processor reads each file: static
// imports (`import type` too), `export ... from`, dynamic `import()` and `import('x')` types all count,
// because a circle of types is still a circle a reader has to hold in mind. Specifiers are resolved
// the way NodeNext resolves this project's own files: './x.js' is './x.ts', a folder is its index.ts.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

export interface ImportGraph {
  /** Each file (relative to the root, '/'-separated) and the files it imports. */
  files: Map<string, Set<string>>;
  /** Each top-level folder ('cache/'; a file directly in the root is its own node) and the folders it imports. */
  folders: Map<string, Set<string>>;
  /** One file import behind each folder edge, 'a/>b/' -> 'a/x.ts -> b/y.ts', for the message. */
  why: Map<string, string>;
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? walk(p) : p.endsWith('.ts') ? [p] : [];
  });
}

function resolveSpecifier(known: Set<string>, from: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const p = resolve(dirname(from), spec);
  const candidates = [p.replace(/\.js$/, '.ts'), p.replace(/\.js$/, '.d.ts'), `${p}.ts`, join(p, 'index.ts'), p];
  return candidates.find((c) => known.has(c)) ?? null;
}

const folderOf = (rel: string): string => {
  const parts = rel.split('/');
  return parts.length > 1 ? `${parts[0]}/` : rel;
};

export function importGraph(root: string): ImportGraph {
  if (!statSync(root).isDirectory()) throw new Error(`${root} is not a folder`);
  const paths = walk(root);
  const known = new Set(paths);
  const rel = (p: string): string => relative(root, p).split(sep).join('/');
  const files = new Map<string, Set<string>>();
  const folders = new Map<string, Set<string>>();
  const why = new Map<string, string>();
  for (const p of paths) {
    const info = ts.preProcessFile(readFileSync(p, 'utf8'), true, true);
    const to = new Set<string>();
    for (const ref of info.importedFiles) {
      const target = resolveSpecifier(known, p, ref.fileName);
      if (target) to.add(rel(target));
    }
    files.set(rel(p), to);
    const a = folderOf(rel(p));
    if (!folders.has(a)) folders.set(a, new Set());
    for (const t of to) {
      const b = folderOf(t);
      if (a === b) continue;
      folders.get(a)!.add(b);
      if (!why.has(`${a}>${b}`)) why.set(`${a}>${b}`, `${rel(p)} -> ${t}`);
    }
  }
  return { files, folders, why };
}

/** The strongly connected components with more than one member, or one that imports itself (Tarjan). */
export function circles(graph: Map<string, Set<string>>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  const next = (v: string): string[] => [...(graph.get(v) ?? [])].filter((w) => graph.has(w));
  for (const start of [...graph.keys()].sort()) {
    if (index.has(start)) continue;
    const work: [string, string[], number][] = [[start, next(start), 0]];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const [v, succ] = frame;
      if (frame[2] < succ.length) {
        const w = succ[frame[2]++]!;
        if (!index.has(w)) {
          index.set(w, counter);
          low.set(w, counter++);
          stack.push(w);
          onStack.add(w);
          work.push([w, next(w), 0]);
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const u = work[work.length - 1]![0];
        low.set(u, Math.min(low.get(u)!, low.get(v)!));
      }
      if (low.get(v) === index.get(v)) {
        const comp: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
        } while (w !== v);
        if (comp.length > 1 || graph.get(v)!.has(v)) out.push(comp.sort());
      }
    }
  }
  return out.sort((a, b) => b.length - a.length);
}

/** A shortest loop through the first member of a circle (breadth first inside it): a -> b -> ... -> a. */
export function loopThrough(graph: Map<string, Set<string>>, circle: string[]): string[] {
  const inside = new Set(circle);
  const s = circle[0]!;
  const prev = new Map<string, string | null>([[s, null]]);
  const queue = [s];
  for (let k = 0; k < queue.length; k++) {
    for (const w of graph.get(queue[k]!) ?? []) {
      if (!inside.has(w)) continue;
      if (w === s) {
        const path = [s];
        for (let v = queue[k]!; v !== s; v = prev.get(v)!) path.splice(1, 0, v);
        return [...path, s];
      }
      if (!prev.has(w)) {
        prev.set(w, queue[k]!);
        queue.push(w);
      }
    }
  }
  return [s];
}
