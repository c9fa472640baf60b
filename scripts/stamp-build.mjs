// Writes dist/build.json with the commit the build was made from, so `switchyard --version` and
// GET / say which code runs. Outside a git checkout (a tarball, a Docker build without .git) the
// commit comes from SWITCHYARD_COMMIT, else it is "unknown"; "-dirty" marks uncommitted changes.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';

function commit() {
  if (process.env.SWITCHYARD_COMMIT) return process.env.SWITCHYARD_COMMIT;
  try {
    return execFileSync('git', ['describe', '--always', '--dirty', '--abbrev=12', '--exclude', '*'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return 'unknown';
  }
}

mkdirSync(new URL('../dist/', import.meta.url), { recursive: true });
writeFileSync(new URL('../dist/build.json', import.meta.url), `${JSON.stringify({ commit: commit() })}\n`);
