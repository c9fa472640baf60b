/**
 * The package version, read once from package.json (one source of truth for --version and GET /),
 * and the commit the build was made from (dist/build.json, written by scripts/stamp-build.mjs at
 * build time; "unknown" when the build did not write it).
 */
import { readFileSync } from 'node:fs';

function readJson(url: URL): Record<string, unknown> | null {
  try {
    return JSON.parse(readFileSync(url, 'utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
}

export const VERSION: string = readJson(new URL('../package.json', import.meta.url))!.version as string;

const stamped = readJson(new URL('./build.json', import.meta.url))?.commit;
export const COMMIT: string =
  typeof stamped === 'string' && /^[0-9a-zA-Z._-]{1,64}$/.test(stamped) ? stamped : 'unknown';
