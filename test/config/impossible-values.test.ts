// Values that pass a type check but could never start (SPEC 2: exit code 2 and a message naming the
// key path, not exit 1 from inside the start): two listeners on one port, URL credentials whose
// `%` escapes do not decode, a caFile that is a directory. `switchyard check` refuses them too.

import t from 'tap';
import { join } from 'node:path';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { runCli } from '../helpers/cli.js';

const UP = [{ name: 'a', url: 'http://127.0.0.1:8545' }];

function problemsOf(input: Partial<ConfigInput>): string[] {
  try {
    validateConfig({ upstreams: UP, ...input });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

t.test('two listeners on one port are refused by key path; port 0 never clashes', async (t) => {
  t.strictSame(problemsOf({ server: { port: 8545, wsPort: 8545 } }), [
    'server.wsPort: expected a port other than server.port, got 8545 for both',
  ]);
  t.strictSame(problemsOf({ server: { host: '0.0.0.0', port: 9000 }, admin: { host: '127.0.0.1', port: 9000 } }), [
    'admin.port: expected a port other than server.port on an overlapping host, got 9000 for both',
  ]);
  t.strictSame(
    problemsOf({ server: { host: '127.0.0.1', port: 8545, wsPort: 9545 }, admin: { host: '127.0.0.1', port: 9545 } }),
    ['admin.port: expected a port other than server.wsPort on an overlapping host, got 9545 for both'],
  );
  t.strictSame(
    problemsOf({ server: { host: '10.0.0.1', port: 8545, wsPort: 8546 }, admin: { host: '0.0.0.0', port: 8546 } })
      .length,
    1,
    'the IPv4 wildcard admin host overlaps an IPv4 address',
  );
  t.strictSame(
    problemsOf({ server: { host: '10.0.0.1', port: 8545, wsPort: 8546 }, admin: { host: '127.0.0.1', port: 8545 } }),
    [],
    'different addresses may share a port',
  );
  t.strictSame(
    problemsOf({ server: { port: 0, wsPort: 0 }, admin: { port: 0 } }),
    [],
    'port 0 asks for a free port each time',
  );
  t.strictSame(
    problemsOf({ server: { port: 8545, wsPort: null }, admin: { port: 9545 } }),
    [],
    'the defaults are fine',
  );
});

t.test(
  'hosts clash only where Linux refuses the second bind: same address, a wildcard of its family, or ::',
  async (t) => {
    const clash = (serverHost: string, adminHost: string): boolean =>
      problemsOf({ server: { host: serverHost, port: 9000 }, admin: { host: adminHost, port: 9000 } }).some((p) =>
        p.startsWith('admin.port: '),
      );
    // Each pair as binding both on one port shows it (node:net, dual-stack Linux, bindv6only 0).
    const refused: [string, string][] = [
      ['127.0.0.1', '127.0.0.1'],
      ['::1', '::1'],
      ['::1', '0:0:0:0:0:0:0:1'],
      ['0.0.0.0', '127.0.0.1'],
      ['10.0.0.1', '0.0.0.0'],
      ['0.0.0.0', '0.0.0.0'],
      ['::', '0.0.0.0'],
      ['0.0.0.0', '::'],
      ['::', '127.0.0.1'],
      ['::1', '::'],
      ['::', 'fe80::1'],
      ['', '127.0.0.1'],
      ['localhost', 'localhost'],
      ['localhost', '::'],
    ];
    const allowed: [string, string][] = [
      ['127.0.0.1', '::1'],
      ['::1', '127.0.0.1'],
      ['0.0.0.0', '::1'],
      ['::1', '0.0.0.0'],
      ['0.0.0.0', 'fd00::5'],
      ['127.0.0.1', '127.0.0.2'],
      ['::1', 'fd00::5'],
      // localhost is 127.0.0.1 or ::1 as the system resolves it: no clash is sure but with itself and ::.
      ['localhost', '127.0.0.1'],
      ['localhost', '::1'],
      ['localhost', '0.0.0.0'],
    ];
    for (const [a, b] of refused) t.ok(clash(a, b), `${a || '(empty)'} and ${b} on one port: refused`);
    for (const [a, b] of allowed) t.notOk(clash(a, b), `${a} and ${b} on one port: allowed`);
  },
);

t.test('URL credentials whose % escapes do not decode are refused; valid escapes pass', async (t) => {
  const url = 'http://u:50%off@127.0.0.1:8545';
  t.strictSame(problemsOf({ upstreams: [{ name: 'a', url }] }), [
    'upstreams[0].url: expected user:password in the URL to be percent-encoded (write % as %25)',
  ]);
  t.strictSame(problemsOf({ upstreams: [{ name: 'a', url: 'http://u:50%25off@127.0.0.1:8545' }] }), []);
});

t.test('a caFile that is a directory is refused', async (t) => {
  const dir = t.testdir({ 'ca.pem': '-----BEGIN CERTIFICATE-----\n' });
  t.strictSame(problemsOf({ upstreams: [{ name: 'a', url: 'https://h', caFile: dir }] }), [
    `upstreams[0].caFile: expected a readable PEM file, got ${JSON.stringify(dir)}`,
  ]);
  t.strictSame(
    problemsOf({ upstreams: [{ name: 'a', url: 'https://h', caFile: join(dir, 'ca.pem') }] }),
    [],
    'a file passes',
  );
});

t.test('switchyard check exits 2 for each, naming the key path', async (t) => {
  const dir = t.testdir({
    'ports.yaml': 'server: { port: 8545, wsPort: 8545 }\nupstreams:\n  - { name: a, url: "http://127.0.0.1:8545" }\n',
    'percent.yaml': 'upstreams:\n  - { name: a, url: "http://u:50%off@127.0.0.1:8545" }\n',
    'cadir.yaml': 'upstreams:\n  - { name: a, url: "https://h", caFile: /tmp }\n',
  });
  const cases: [file: string, problem: RegExp][] = [
    ['ports.yaml', /server\.wsPort: expected a port other than server\.port/],
    ['percent.yaml', /upstreams\[0\]\.url: expected user:password in the URL to be percent-encoded/],
    ['cadir.yaml', /upstreams\[0\]\.caFile: expected a readable PEM file/],
  ];
  for (const [file, problem] of cases) {
    const cli = runCli(t, ['check', '--config', join(dir, file)]);
    t.equal(await cli.exited, 2, `${file}: exit 2`);
    t.match(cli.stderr(), problem, file);
  }
});
