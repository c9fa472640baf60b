// `switchyard --config FILE` as an operator runs it (the built CLI, a child process): a bad file
// stops the start with exit code 2 and a message naming the key path; ${NAME} is expanded from the
// environment; SWITCHYARD_CONFIG names the file when --config does not; SIGTERM exits 0.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { call, get } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = join(ROOT, 'dist', 'main.js');
const UNSET = 'SWITCHYARD_TEST_NEVER_SET_7F3A';
const VERSION = (await import('../../package.json', { with: { type: 'json' } })).default.version as string;

/** The environment of the child: ours, minus anything that would name a config or set the unset var. */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.SWITCHYARD_CONFIG;
  delete env[UNSET];
  return { ...env, ...extra };
}

interface Exited {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: NodeJS.ProcessEnv = childEnv()): Promise<Exited> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('error', reject);
    p.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Runs tasks a few at a time: more node processes than cores only makes each slower. */
async function inPool<T>(tasks: (() => Promise<T>)[], width: number): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const i = next++;
      out[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, tasks.length) }, worker));
  return out;
}

/** A long-running child we stop by its own pid; its JSON log lines are collected as they come. */
function startChild(
  args: string[],
  env: NodeJS.ProcessEnv,
): { proc: ChildProcess; lines: () => any[]; exited: Promise<Exited> } {
  const proc = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<Exited>((resolve) =>
    proc.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  const lines = (): any[] =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
  return { proc, lines, exited };
}

const GOOD_UPSTREAM = `upstreams:\n  - name: a\n    url: http://127.0.0.1:1\n`;
const PORTS = `server: { host: 127.0.0.1, port: 0, wsPort: null, shutdownDelayMs: 0 }\nadmin: { port: 0 }\n`;

t.before(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npx tsc -p tsconfig.json first`);
});

t.test('bad files exit 2 and name the key path', async (t) => {
  const cases: [name: string, yaml: string, expected: string | RegExp][] = [
    ['unknown-top-level', `${PORTS}${GOOD_UPSTREAM}frobnicate: true\n`, '  frobnicate: unknown option'],
    [
      'unknown-nested',
      `server: { prot: 8545 }\n${GOOD_UPSTREAM}`,
      '  server.prot: unknown option (did you mean port?)',
    ],
    ['wrong-type', `server: { port: "x" }\n${GOOD_UPSTREAM}`, '  server.port: expected number, got "x"'],
    [
      'port-too-big',
      `server: { port: 70000 }\n${GOOD_UPSTREAM}`,
      '  server.port: expected number to be <=65535, got 70000',
    ],
    [
      'max-attempts-zero',
      `${PORTS}routing: { maxAttempts: 0 }\n${GOOD_UPSTREAM}`,
      '  routing.maxAttempts: expected number to be >0, got 0',
    ],
    [
      'bad-url',
      `${PORTS}${GOOD_UPSTREAM}  - name: b\n    url: foo\n`,
      '  upstreams[1].url: expected an http(s) URL, got a value that is not a URL (not shown: it may hold credentials)',
    ],
    ['no-upstreams', PORTS, '  upstreams: expected array, got nothing'],
    ['empty-upstreams', `${PORTS}upstreams: []\n`, '  upstreams: expected at least one upstream, got a list'],
    [
      'duplicate-names',
      `${PORTS}${GOOD_UPSTREAM}  - name: a\n    url: http://127.0.0.1:2\n`,
      '  upstreams[1].name: expected a unique name, got duplicate "a"',
    ],
    [
      'unset-variable',
      `${PORTS}upstreams:\n  - name: a\n    url: http://127.0.0.1:1/\${${UNSET}}\n`,
      `  upstreams[0].url: environment variable ${UNSET} is not set`,
    ],
  ];
  const dir = t.testdir(Object.fromEntries(cases.map(([name, yaml]) => [`${name}.yaml`, yaml])));
  const results = await inPool(
    cases.map(
      ([name]) =>
        () =>
          run(['--config', join(dir, `${name}.yaml`)]),
    ),
    4,
  );
  for (const [i, [name, , expected]] of cases.entries()) {
    const r = results[i]!;
    t.equal(r.code, 2, `${name}: exit code`);
    t.equal(r.stdout, '', `${name}: nothing on stdout`);
    t.match(r.stderr, /^invalid configuration in .+\.yaml:\n/, `${name}: headline`);
    if (typeof expected === 'string')
      t.ok(
        r.stderr.split('\n').includes(expected),
        `${name}: stderr has ${JSON.stringify(expected)}; got ${JSON.stringify(r.stderr)}`,
      );
    else t.match(r.stderr, expected, `${name}: stderr`);
  }
});

t.test('a bad URL holding credentials: exit 2, the key path named, the secret never printed', async (t) => {
  const dir = t.testdir({
    'secret.yaml': [
      PORTS,
      'redis: "rediz://:${SY_KEY}@127.0.0.1:6379"',
      'upstreams:',
      '  - name: a',
      '    url: "htps://user:pw@node.example/${SY_KEY}"',
      '    ws: "wss//${SY_KEY}"',
      '',
    ].join('\n'),
  });
  const r = await run(['--config', join(dir, 'secret.yaml')], childEnv({ SY_KEY: 'SUPERSECRETKEY123' }));
  t.equal(r.code, 2);
  const lines = r.stderr.split('\n');
  t.ok(lines.includes('  upstreams[0].url: expected an http(s) URL, got "htps://***@node.example/***"'), r.stderr);
  t.ok(
    lines.includes(
      '  upstreams[0].ws: expected a ws(s) URL, got a value that is not a URL (not shown: it may hold credentials)',
    ),
    r.stderr,
  );
  t.ok(lines.includes('  redis: expected a redis:// URL or null, got "rediz://***@127.0.0.1:6379"'), r.stderr);
  t.notOk(r.stderr.includes('SUPERSECRETKEY123'), 'the expanded secret is not printed');
  t.notOk(r.stderr.includes('user:pw'), 'nor the credentials written in the file');
});

t.test('a missing file exits 2 and names it', async (t) => {
  const dir = t.testdir({});
  const file = join(dir, 'nope.yaml');
  const r = await run(['--config', file]);
  t.equal(r.code, 2);
  t.equal(r.stderr, `config file not found: ${file}\n`, 'one line, no bare ENOENT');
});

t.test('no config at all exits 2', async (t) => {
  const none = await run([]);
  t.equal(none.code, 2);
  t.match(none.stderr, /^no config file: pass --config FILE or set SWITCHYARD_CONFIG/);
});

t.test('--help and --version exit 0', async (t) => {
  const [help, version] = await Promise.all([run(['--help']), run(['--version'])]);
  t.equal(help.code, 0);
  t.match(help.stdout, /^switchyard \d+\.\d+\.\d+: an Ethereum JSON-RPC load balancer\n/);
  t.match(help.stdout, /--config FILE/);
  t.match(help.stdout, /SWITCHYARD_CONFIG/);
  t.equal(help.stderr, '');
  t.equal(version.code, 0);
  t.match(version.stdout, new RegExp(`^${VERSION.replace(/\./g, '\\.')} \\(commit [0-9a-f]{7,}(-dirty)?\\)\\n$`));
});

t.test('${NODE_URL} is expanded; --config or SWITCHYARD_CONFIG starts it; SIGTERM exits 0', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const dir = t.testdir({
    'env.yaml': `${PORTS}rateLimit: { perIp: null }\nlog: { level: info }\nupstreams:\n  - name: via-env\n    url: \${NODE_URL}\n`,
  });
  const file = join(dir, 'env.yaml');
  // Both ways at once: each child is independent (ports 0), and node start-up is the slow part.
  await Promise.all([
    startsAndStops(t, ['--config', file], {}, '--config'),
    startsAndStops(t, [], { SWITCHYARD_CONFIG: file }, 'SWITCHYARD_CONFIG'),
  ]);

  async function startsAndStops(t: Test, args: string[], extraEnv: Record<string, string>, how: string): Promise<void> {
    const child = startChild(args, childEnv({ NODE_URL: anvil.url, ...extraEnv }));
    let exitedEarly: Exited | undefined;
    void child.exited.then((e) => (exitedEarly = e));
    t.teardown(() => {
      if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
    });
    const listening = await waitFor(`${how}: listening log line`, () => {
      if (exitedEarly) throw new Error(`exited ${exitedEarly.code}: ${exitedEarly.stderr}`);
      return child.lines().find((l) => l.msg === 'switchyard listening');
    });
    t.strictSame(listening.upstreams, ['via-env'], `${how}: upstream names logged`);
    t.notOk(JSON.stringify(child.lines()).includes(anvil.url), `${how}: the upstream URL is never logged`);
    const url = `http://127.0.0.1:${listening.ports.http}`;
    await waitFor(
      `${how}: ready`,
      async () => (await get(`http://127.0.0.1:${listening.ports.admin}/ready?upstreams=1`)).status === 200,
    );
    // A forwarded call reaches the anvil the variable named.
    const want = await call(anvil.url, 'eth_getBalance', ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', 'latest']);
    const got = await call(url, 'eth_getBalance', ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', 'latest']);
    t.equal(got.result, want.result, `${how}: forwarded through the expanded URL`);
    child.proc.kill('SIGTERM');
    const done = await child.exited;
    t.equal(done.code, 0, `${how}: SIGTERM exits 0; stderr ${done.stderr}`);
    t.ok(
      child.lines().some((l) => l.msg === 'stopped'),
      `${how}: logs that it stopped`,
    );
  }
});
