/**
 * The package installs and runs as an operator would install it (issue: a package that ships):
 * `npm pack` makes the tarball, `npm install -g` puts it in a clean prefix of the test's own with a
 * PATH that holds only node, npm and sh (SPEC 9: installing needs no compiler; its dependencies come
 * from the npm registry or npm's cache), and the installed `switchyard` says its version with the
 * commit, validates the shipped devnet config and refuses the example without its variables, then
 * serves a real anvil node with its uptime store in a file (node:sqlite, nothing compiled).
 * `npm pack --ignore-scripts`: `npm test` has just built dist/ (and `npm ci` stamped its commit);
 * letting pack's `prepare` rebuild it would rewrite files that other test files run meanwhile.
 */
import { execFile, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { listeningPorts } from '../helpers/cli.js';
import { TRACING_PACKAGES } from '../../src/parts.js';
import { call } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const pkg = (await import('../../package.json', { with: { type: 'json' } })).default as {
  name: string;
  version: string;
  private?: boolean;
  license: string;
};

t.test('package.json states an OSI license, ships a LICENSE and a CHANGELOG, and is not private', async (t) => {
  t.equal(pkg.private, undefined, 'not private');
  t.equal(pkg.license, 'MIT');
  const files = readdirSync(ROOT);
  t.ok(files.includes('LICENSE') && files.includes('CHANGELOG.md'), 'LICENSE and CHANGELOG.md at the top');
});

t.test('npm pack, npm install -g into a clean prefix, and the installed switchyard runs', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-package-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const npmEnv = { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false' };
  const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
    cwd: ROOT,
    env: npmEnv,
    maxBuffer: 16 * 1024 * 1024,
  });
  const { filename, files } = (JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[])[0]!;
  t.equal(filename, `${pkg.name}-${pkg.version}.tgz`);
  const paths = files.map((f) => f.path);
  for (const p of [
    'LICENSE',
    'CHANGELOG.md',
    'README.md',
    'dist/main.js',
    'dist/build.json',
    'dist/api.d.ts',
    'config/example.yaml',
    'config/switchyard.schema.json',
  ])
    t.ok(paths.includes(p), `the tarball has ${p}`);
  t.notOk(
    paths.some((p) => p.startsWith('test/') || p.startsWith('src/') || p.startsWith('node_modules/')),
    'and no tests, sources or node_modules',
  );

  // A PATH with no python3, make, g++ or cc: a dependency that falls back to node-gyp fails here.
  const bare = join(dir, 'bare-bin');
  mkdirSync(bare);
  const npmCli = realpathSync((await run('sh', ['-c', 'command -v npm'])).stdout.trim());
  symlinkSync(process.execPath, join(bare, 'node'));
  symlinkSync(npmCli, join(bare, 'npm'));
  symlinkSync('/bin/sh', join(bare, 'sh'));
  const bareEnv = { ...npmEnv, PATH: bare };
  for (const tool of ['python3', 'python', 'make', 'g++', 'gcc', 'cc'])
    t.equal(
      await run('/bin/sh', ['-c', `command -v ${tool}`], { env: bareEnv }).then(
        () => 'found',
        () => 'absent',
      ),
      'absent',
      `no ${tool} on the install's PATH`,
    );
  const prefix = join(dir, 'prefix');
  const args = ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit'];
  await run('npm', [...args, join(dir, filename)], {
    cwd: dir,
    env: bareEnv,
    maxBuffer: 16 * 1024 * 1024,
    timeout: 600_000,
  });
  const bin = join(prefix, 'bin', 'switchyard');
  const installed = join(prefix, 'lib', 'node_modules', pkg.name);

  const version = await run(bin, ['--version'], { cwd: dir });
  t.match(version.stdout, new RegExp(`^${pkg.version.replace(/\./g, '\\.')} \\(commit [0-9a-f]{7,}(-dirty)?\\)\\n$`));
  const devnet = await run(bin, ['check', '--config', join(installed, 'config', 'devnet.yaml')], { cwd: dir });
  t.match(devnet.stdout + devnet.stderr, /valid \(3 upstreams\)/, 'check --config: the shipped devnet config is valid');
  // The first hour: the shipped example passes as shipped (no variable set), named without --config.
  const example = await run(bin, ['check', join(installed, 'config', 'example.yaml')], {
    cwd: dir,
  });
  t.match(
    example.stderr,
    /example\.yaml: valid \(3 upstreams\)/,
    'check FILE: the shipped example is valid as shipped',
  );
  const help = await run(bin, ['help'], { cwd: dir });
  t.match(help.stdout, /^switchyard \S+: an Ethereum JSON-RPC load balancer/, 'switchyard help');

  const anvil = await startAnvil({ chainId: 186 });
  t.teardown(() => anvil.stop());
  const config = join(dir, 'switchyard.yaml');
  writeFileSync(
    config,
    [
      'server: { host: 127.0.0.1, port: 0, wsPort: null, shutdownDelayMs: 0 }',
      'admin: { host: 127.0.0.1, port: 0 }',
      `upstreams: [{ name: node, url: "${anvil.url}" }]`,
      '',
    ].join('\n'),
  );
  const proc = spawn(bin, ['serve', '--config', config], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.resume();
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  await waitFor('the installed switchyard listening', () => listeningPorts(out) !== undefined, { timeoutMs: 30_000 });
  const { http } = listeningPorts(out)!;
  t.match(await call(`http://127.0.0.1:${http}`, 'eth_chainId'), { result: '0xba' }, 'serves eth_chainId');
  proc.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM: exit 0');

  // A production install leaves the optional parts out (`npm install --omit=optional`; with -g and a
  // tarball npm installs them anyway, npm/cli#8284): removed here as that install would lack them.
  for (const pkg of [...TRACING_PACKAGES, '@foundry-rs/anvil-linux-amd64']) {
    t.ok(existsSync(join(installed, 'node_modules', pkg)), `${pkg} was installed`);
    rmSync(join(installed, 'node_modules', pkg), { recursive: true, force: true });
  }
  // Asking for a part that is not there: one line naming what to install, exit 2, before anything starts.
  const tracing = join(dir, 'tracing.yaml');
  writeFileSync(tracing, 'upstreams: [{ name: a, url: "http://127.0.0.1:1/" }]\ntracing: { enabled: true }\n');
  for (const [what, cmd, why] of [
    [
      'tracing',
      ['serve', '--config', tracing],
      /^tracing\.enabled needs @opentelemetry\/exporter-trace-otlp-http, .*npm install @opentelemetry\//,
    ],
    [
      'start',
      ['start', '--config', join(installed, 'config', 'devnet.yaml')],
      /^the devnet needs anvil: npm install @foundry-rs\/anvil-/,
    ],
    ['devnet', ['devnet'], /^the devnet needs anvil/],
  ] as const) {
    const r = await run(bin, [...cmd], { cwd: dir, env: bareEnv, timeout: 60_000 }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    t.equal(r.code, 2, `${what} without its part: exit 2`);
    t.match(r.stderr, why, `${what}: says what to install`);
    t.equal(r.stderr.trim().split('\n').length, 1, `${what}: one line, no stack trace`);
  }
});
