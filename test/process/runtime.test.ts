/**
 * The runtime (SPEC 9): Node 22 LTS or newer. `npm test` runs on the `node` dev dependency (it puts
 * its binary first on every npm script's PATH), and what the tests spawn runs on that same binary:
 * a spawned Switchyard says its Node version in nodejs_version_info, read here from its metrics
 * with a store file configured, so node:sqlite loads there, and its warning stays off stderr.
 */
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import t from 'tap';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const pkg = (await import('../../package.json', { with: { type: 'json' } })).default as {
  engines: { node: string };
  devDependencies: Record<string, string>;
};

const major = (v: string): number => Number(/^v?(\d+)\./.exec(v)![1]);

t.test('the tests run on Node 22 or newer, the pinned one under npm test', async (t) => {
  const floor = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(pkg.engines.node);
  t.ok(floor, `engines.node is a floor (${pkg.engines.node})`);
  t.equal(Number(floor![1]), 22, 'the floor is the Node 22 LTS line');
  const [a, b, c] = process.versions.node.split('.').map(Number) as [number, number, number];
  const [x, y, z] = floor!.slice(1).map(Number) as [number, number, number];
  t.ok(a > x || (a === x && (b > y || (b === y && c >= z))), `${process.version} meets ${pkg.engines.node}`);
  // Under `npm test` (not the newest-LTS run, which sets its own Node): the pinned dev dependency.
  if (process.env.npm_lifecycle_event === 'test')
    t.equal(process.version, `v${pkg.devDependencies.node}`, 'npm test runs on the `node` dev dependency');
});

t.test('a spawned Switchyard runs on the same Node, and loads node:sqlite without a warning', async (t) => {
  const dir = t.testdir();
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    `server: { host: 127.0.0.1, port: 0, wsPort: null }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [ { name: a, url: "http://127.0.0.1:1/" } ]
uptime: { store: ${JSON.stringify(join(dir, 'uptime.db'))} }
log: { level: info }
`,
  );
  const cli = runCli(t, ['--config', file]);
  const ports = await waitFor('listening line', () => listeningPorts(cli.stdout()));
  const metrics = await (await fetch(`http://127.0.0.1:${ports.admin}/metrics`)).text();
  const version = /nodejs_version_info\{version="(v[\d.]+)"/.exec(metrics)?.[1];
  t.equal(version, process.version, `the child runs ${version}`);
  t.ok(major(version!) >= 22);
  t.match(cli.stdout(), /uptime history kept in uptime\.store/, 'the store file opened');
  cli.proc.kill('SIGTERM');
  t.equal(await cli.exited, 0);
  t.notMatch(cli.stderr(), /ExperimentalWarning|SQLite/, 'no SQLite warning on stderr');
});
