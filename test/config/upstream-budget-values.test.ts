// upstreams[].rateLimit (SPEC 4.8): a budget that could never admit a call, or makes no sense, is
// refused at start with its key path (exit 2), never read as "no budget". A fraction of a call per
// second is a budget (plans counted per day); null is none.

import t from 'tap';
import { join } from 'node:path';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import { runCli } from '../helpers/cli.js';

function problemsOf(rateLimit: unknown): string[] {
  try {
    validateConfig({ upstreams: [{ name: 'a', url: 'http://127.0.0.1:8545', rateLimit }] });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

t.test('a burst of 0, a zero or negative rate, a burst under the rate are refused by key path', async (t) => {
  const cases: [rateLimit: unknown, path: string][] = [
    [{ ratePerSec: 10, burst: 0 }, 'upstreams[0].rateLimit.burst'],
    [{ ratePerSec: 0, burst: 10 }, 'upstreams[0].rateLimit.ratePerSec'],
    [{ ratePerSec: -5, burst: 10 }, 'upstreams[0].rateLimit.ratePerSec'],
    [{ ratePerSec: 10, burst: 2.5 }, 'upstreams[0].rateLimit.burst'],
    [{ ratePerSec: 10, burst: 5 }, 'upstreams[0].rateLimit.burst'],
    [{ ratePerSec: 10 }, 'upstreams[0].rateLimit.burst'],
    [{ ratePerSec: 10, burst: 10, per: 'day' }, 'upstreams[0].rateLimit.per'],
  ];
  for (const [rateLimit, path] of cases) {
    const problems = problemsOf(rateLimit);
    t.equal(problems.length, 1, `${JSON.stringify(rateLimit)}: one problem (${problems.join('; ')})`);
    t.ok(problems[0]?.startsWith(`${path}:`), `${JSON.stringify(rateLimit)}: names ${path}`);
  }
});

t.test('a fractional rate, a burst at the rate, and null are budgets the schema takes', async (t) => {
  t.same(problemsOf({ ratePerSec: 1.157, burst: 20 }), []);
  t.same(problemsOf({ ratePerSec: 25, burst: 25 }), []);
  t.same(problemsOf(null), []);
  const cfg = validateConfig({ upstreams: [{ name: 'a', url: 'http://127.0.0.1:8545' }] });
  t.equal(cfg.upstreams[0]!.rateLimit, null, 'no budget by default');
});

t.test('switchyard check exits 2 naming the key path', async (t) => {
  const dir = t.testdir({
    'zero.yaml': 'upstreams:\n  - { name: a, url: "http://127.0.0.1:8545", rateLimit: { ratePerSec: 10, burst: 0 } }\n',
    'negative.yaml':
      'upstreams:\n  - { name: a, url: "http://127.0.0.1:8545" }\n  - { name: b, url: "http://127.0.0.1:8546", rateLimit: { ratePerSec: -1, burst: 5 } }\n',
  });
  const cases: [file: string, problem: RegExp][] = [
    ['zero.yaml', /upstreams\[0\]\.rateLimit\.burst: /],
    ['negative.yaml', /upstreams\[1\]\.rateLimit\.ratePerSec: /],
  ];
  for (const [file, problem] of cases) {
    const cli = runCli(t, ['check', '--config', join(dir, file)]);
    t.equal(await cli.exited, 2, `${file}: exit 2`);
    t.match(cli.stderr(), problem, file);
  }
});
