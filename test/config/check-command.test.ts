// `switchyard check --config FILE`: a valid file exits 0; --print writes the effective config
// (defaults filled in) with secrets masked; a bad file lists every problem by key path and exits 2.

import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { maskUrl } from '../../src/config/mask.js';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-check-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const KEY = 'SECRETKEY0123456789';
const API_KEY = 'partner-key-0123456789';

t.test('a good file: exit 0; --print shows the effective config with secrets masked', async (t) => {
  const file = join(dir, 'good.yaml');
  writeFileSync(
    file,
    [
      'upstreams:',
      '  - { name: a, url: "https://user:${NODE_PASS}@node.example/v2/${NODE_KEY}" }',
      '  - { name: b, url: "http://10.0.0.6:8545", ws: "ws://10.0.0.6:8546" }',
      `rateLimit: { redis: "redis://:hunter2@redis:6379", apiKeys: [{ name: partner-1, key: "${API_KEY}", ratePerSec: 5, burst: 5 }] }`,
      '',
    ].join('\n'),
  );
  const cli = runCli(t, ['check', '--config', file, '--print'], { NODE_KEY: KEY, NODE_PASS: 'pw-secret' });
  t.equal(await cli.exited, 0, 'exit 0');
  const printed = YAML.parse(cli.stdout()) as {
    server: { port: number };
    upstreams: { url: string; ws?: string }[];
    rateLimit: { redis: string; apiKeys: { name: string; key: string }[] };
  };
  t.equal(printed.server.port, 8545, 'defaults are filled in');
  t.equal(printed.upstreams[0]!.url, 'https://***@node.example/***', 'credentials and path masked, host kept');
  t.equal(printed.upstreams[1]!.url, 'http://10.0.0.6:8545');
  t.equal(printed.rateLimit.redis, 'redis://***@redis:6379');
  t.same(
    printed.rateLimit.apiKeys.map((k) => [k.name, k.key]),
    [['partner-1', '***']],
  );
  for (const secret of [KEY, API_KEY, 'pw-secret', 'hunter2'])
    t.notOk(cli.stdout().includes(secret) || cli.stderr().includes(secret), `${secret.slice(0, 6)}... not printed`);
  t.match(cli.stderr(), /valid \(2 upstreams\)/);

  const quiet = runCli(t, ['check', '--config', file], { NODE_KEY: KEY, NODE_PASS: 'x' });
  t.equal(await quiet.exited, 0);
  t.equal(quiet.stdout(), '', 'without --print nothing on stdout');
});

t.test('a bad file: every problem by key path, exit 2', async (t) => {
  const file = join(dir, 'bad.yaml');
  writeFileSync(
    file,
    'server: { prot: 1 }\nupstreams:\n  - { name: a, url: foo }\n  - { name: b, url: "http://x/${UNSET_VAR_FOR_TEST}" }\n',
  );
  const cli = runCli(t, ['check', '--config', file]);
  t.equal(await cli.exited, 2, 'exit 2');
  t.match(cli.stderr(), /environment variable UNSET_VAR_FOR_TEST is not set/);
  const cli2 = runCli(t, ['check', '--config', join(dir, 'bad2.yaml')]);
  t.equal(await cli2.exited, 2, 'a missing file: exit 2');
  writeFileSync(join(dir, 'bad3.yaml'), 'server: { prot: 1 }\nupstreams:\n  - { name: a, url: foo }\n');
  const cli3 = runCli(t, ['check', '--config', join(dir, 'bad3.yaml')]);
  t.equal(await cli3.exited, 2);
  t.match(cli3.stderr(), /server\.prot: unknown option/);
  t.match(
    cli3.stderr(),
    /upstreams\[0\]\.url: expected an http\(s\) URL, got a value that is not a URL \(not shown: it may hold credentials\)/,
  );
});

t.test('a bad URL holding credentials: check names the key path, never the secret', async (t) => {
  const file = join(dir, 'secret.yaml');
  writeFileSync(
    file,
    'upstreams:\n  - { name: a, url: "htps://user:pw@node.example/${NODE_KEY}", headers: { x-api-key: "${NODE_KEY}\\n" } }\n',
  );
  const cli = runCli(t, ['check', '--config', file], { NODE_KEY: KEY });
  t.equal(await cli.exited, 2, 'exit 2');
  t.match(cli.stderr(), /upstreams\[0\]\.url: expected an http\(s\) URL, got "htps:\/\/\*\*\*@node\.example\/\*\*\*"/);
  t.match(cli.stderr(), /upstreams\[0\]\.headers\.x-api-key: expected a header value on one line/);
  t.notOk(cli.stderr().includes(KEY), 'the expanded key is not printed');
  t.notOk(cli.stderr().includes('user:pw'), 'nor the credentials');
});

t.test('maskUrl', async (t) => {
  t.equal(maskUrl('https://node.example'), 'https://node.example');
  t.equal(maskUrl('https://node.example/?key=1'), 'https://node.example/***');
  t.equal(maskUrl('wss://u:p@h:1/x'), 'wss://***@h:1/***');
  t.equal(maskUrl('not a url'), '***');
});
