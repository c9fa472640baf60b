// What a team meets in its first hour with the CLI: the shipped example passes `check` as shipped
// (named without --config), ${NAME:-default}, "did you mean" for a misspelt option, a YAML syntax
// error as file:line:col with its code frame, a missing file as one line, and `switchyard help`.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { closestOption, editDistance } from '../../src/config/suggest.js';
import { runCli } from '../helpers/cli.js';

const EXAMPLE = fileURLToPath(new URL('../../config/example.yaml', import.meta.url));
const MINIMAL = 'upstreams:\n  - { name: a, url: "http://127.0.0.1:1" }\n';

/** The environment without any variable the example names, so an unset one cannot hide. */
function bareEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of readFileSync(EXAMPLE, 'utf8').matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)) delete env[name[1]!];
  delete env.SWITCHYARD_CONFIG;
  return env;
}

function problemsOf(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfigText(text, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

t.test('switchyard check config/example.yaml passes as shipped, with no variable set', async (t) => {
  const cli = runCli(t, ['check', EXAMPLE], bareEnv());
  t.equal(await cli.exited, 0, cli.stderr());
  t.match(cli.stderr(), /example\.yaml: valid \(\d+ upstreams\)\n$/);
});

t.test('${NAME:-default}: the default when NAME is unset or empty, the value when set', async (t) => {
  const text = 'upstreams:\n  - { name: a, url: "http://127.0.0.1:1/${SY_FH_KEY:-none}" }\n';
  t.equal(parseConfigText(text, {}).upstreams[0]!.url, 'http://127.0.0.1:1/none');
  t.equal(parseConfigText(text, { SY_FH_KEY: '' }).upstreams[0]!.url, 'http://127.0.0.1:1/none');
  t.equal(parseConfigText(text, { SY_FH_KEY: 'k1' }).upstreams[0]!.url, 'http://127.0.0.1:1/k1');
  t.equal(
    parseConfigText('upstreams:\n  - { name: a, url: "http://127.0.0.1:1/${SY_FH_KEY:-}" }\n', {}).upstreams[0]!.url,
    'http://127.0.0.1:1/',
    'an empty default',
  );
  t.strictSame(
    problemsOf('upstreams:\n  - { name: a, url: "http://127.0.0.1:1/${SY_FH_KEY}" }\n'),
    ['upstreams[0].url: environment variable SY_FH_KEY is not set'],
    'without :- an unset variable is still an error',
  );
});

t.test('a misspelt option: the closest known option at its level', async (t) => {
  t.strictSame(
    problemsOf(
      `server: { prot: 1, maxConection: 3, zz: 1 }\nratelimit: {}\nupstreams:\n  - { name: a, url: "http://x", weigth: 2 }\n`,
    ).sort(),
    [
      'ratelimit: unknown option (did you mean rateLimit?)',
      'server.maxConection: unknown option (did you mean maxConnections?)',
      'server.prot: unknown option (did you mean port?)',
      'server.zz: unknown option',
      'upstreams[0].weigth: unknown option (did you mean weight?)',
    ],
  );
  t.strictSame(
    problemsOf(`server: { prot: 1, port: 8545 }\n${MINIMAL}`),
    ['server.prot: unknown option'],
    'an option already given is not suggested',
  );
  t.equal(closestOption(['server'], 'hots'), 'host', 'a swap of neighbours is one edit');
  t.equal(closestOption(['server'], 'frobnicate'), null, 'nothing within two edits: no suggestion');
  t.equal(closestOption([], 'upstream'), 'upstreams', 'top level');
  t.equal(editDistance('kitten', 'sitting'), 3);
  t.equal(editDistance('ab', 'ba'), 1);
});

t.test('a YAML syntax error: file:line:col, the message and the code frame, secrets masked; exit 2', async (t) => {
  const dir = t.testdir({});
  const file = join(dir, 'broken.yaml');
  writeFileSync(
    file,
    'server:\n  port: 8545\nupstreams: [ { name: a, url: "https://user:pw@node.example/KEY123" }\nlog: { level: info }\n',
  );
  const cli = runCli(t, ['check', '--config', file], bareEnv());
  t.equal(await cli.exited, 2);
  const lines = cli.stderr().split('\n');
  t.match(
    lines[0],
    new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:\\d+:\\d+: not valid YAML: \\S`),
    cli.stderr(),
  );
  t.ok(
    lines.some((l) => l.includes('upstreams: [ { name: a, url: "https://***@node.example/***" }')),
    `the frame shows the line, its URL masked: ${cli.stderr()}`,
  );
  t.ok(
    lines.some((l) => /^\s*\^+\s*$/.test(l)),
    'a caret under the column',
  );
  t.notOk(cli.stderr().includes('KEY123') || cli.stderr().includes('user:pw'), 'no credential printed');
  t.notOk(cli.stderr().includes('invalid configuration in'), 'said once, as a compiler does');
});

t.test('a missing file: one line, exit 2, no bare ENOENT', async (t) => {
  const file = join(t.testdir({}), 'nope.yaml');
  const cli = runCli(t, ['check', file], bareEnv());
  t.equal(await cli.exited, 2);
  t.equal(cli.stderr(), `config file not found: ${file}\n`);
  const serve = runCli(t, ['--config', file], bareEnv());
  t.equal(await serve.exited, 2);
  t.equal(serve.stderr(), `config file not found: ${file}\n`, 'the same when serving');
});

t.test('switchyard help is --help; a second file is refused', async (t) => {
  const [help, dashHelp] = [runCli(t, ['help'], bareEnv()), runCli(t, ['--help'], bareEnv())];
  t.equal(await help.exited, 0, help.stderr());
  t.equal(await dashHelp.exited, 0);
  t.equal(help.stdout(), dashHelp.stdout(), 'the same text');
  t.match(help.stdout(), /^switchyard \S+: an Ethereum JSON-RPC load balancer\n/);
  t.equal(help.stderr(), '');
  const two = runCli(t, ['check', '--config', EXAMPLE, EXAMPLE], bareEnv());
  t.equal(await two.exited, 2);
  t.match(two.stderr(), /^one config file, by --config or on its own/);
});

t.test('the devnet config limits loopback clients like any other (the defaults stay)', async (t) => {
  const devnet = parseConfigText(readFileSync(new URL('../../config/devnet.yaml', import.meta.url), 'utf8'), {});
  const defaults = parseConfigText(MINIMAL, {});
  t.strictSame(devnet.rateLimit.exempt, [], 'nothing exempt');
  t.strictSame(devnet.rateLimit.perIp, defaults.rateLimit.perIp, 'the per-IP default');
  t.not(defaults.rateLimit.perIp, null, 'which is a limit');
});
