/**
 * Module hooks for the test processes (ts-loader.mjs registers them): a `.ts` module is its
 * source with the types stripped by esbuild (class fields as tsc makes them for tsconfig.json's
 * ES2022 target; syntax the Node running it reads, import attributes included; inline source map), and an import of `./x.js` that names no file reaches `./x.ts`, as TypeScript's NodeNext
 * resolution does. Each stripped module is kept in a cache under the OS temp directory, named by
 * a hash of its path, its text and esbuild's version, so a run's processes strip each file once.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync, version } from 'esbuild';

const CACHE = join(tmpdir(), `switchyard-test-ts-${userInfo().uid}`);

export async function resolve(specifier, context, next) {
  if (specifier.endsWith('.js') && context.parentURL?.startsWith('file:') && /^\.\.?\//.test(specifier)) {
    const url = new URL(specifier, context.parentURL);
    if (!existsSync(url)) {
      const ts = new URL(`${url.href.slice(0, -3)}.ts`);
      if (existsSync(ts)) return next(ts.href, context);
    }
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  const path = fileURLToPath(url);
  const source = readFileSync(path, 'utf8');
  const key = createHash('sha256').update(`${version}\0${process.versions.node}\0${path}\0`).update(source).digest('hex');
  const cached = join(CACHE, `${key}.js`);
  let code;
  try {
    code = readFileSync(cached, 'utf8');
  } catch {
    code = transformSync(source, {
      loader: 'ts',
      format: 'esm',
      target: `node${process.versions.node.split('.')[0]}`,
      tsconfigRaw: { compilerOptions: { target: 'ES2022', useDefineForClassFields: true } },
      sourcemap: 'inline',
      sourcefile: path,
    }).code;
    // Written whole under another name, then renamed: a process reading it never sees half a file.
    // The cache only saves time: a module it cannot keep is stripped again by the next process.
    try {
      mkdirSync(CACHE, { recursive: true });
      const part = `${cached}.${process.pid}.part`;
      writeFileSync(part, code);
      renameSync(part, cached);
    } catch {}
  }
  return { format: 'module', source: code, shortCircuit: true };
}
