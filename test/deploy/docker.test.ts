/**
 * The Docker build and compose files agree with each other and with the project: the image
 * version label's default is package.json's version, compose builds targets the Dockerfile has,
 * the runtime stage (the default target) carries no anvil, the compose config is valid, and the
 * compose balancer's HAProxy config passes `haproxy -c` and checks each replica's /ready.
 * (No Docker engine here: the images themselves are not built by the tests.)
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { parseConfigText } from '../../src/config/load.js';

const root = (p: string): string => fileURLToPath(new URL(`../../${p}`, import.meta.url));
const dockerfile = readFileSync(root('Dockerfile'), 'utf8');
const compose = parse(readFileSync(root('compose.yaml'), 'utf8'), { merge: true }) as {
  services: Record<string, { build?: { target?: string }; image?: string }>;
};
const pkg = JSON.parse(readFileSync(root('package.json'), 'utf8')) as { version: string };

/** Each stage's name and its lines. */
const stages = new Map<string, string[]>();
let current = '';
for (const line of dockerfile.split('\n')) {
  const from = /^FROM\s+\S+\s+AS\s+(\S+)/i.exec(line);
  if (from) stages.set((current = from[1]!), []);
  else if (current) stages.get(current)!.push(line);
}

t.test('the version label defaults to package.json version', async (t) => {
  t.match(dockerfile, new RegExp(`ARG VERSION=${pkg.version.replace(/\./g, '\\.')}\\n`));
  t.match(dockerfile, /org\.opencontainers\.image\.version="\$\{VERSION\}"/);
});

t.test('the last stage is the runtime image, and only the devnet stage copies anvil in', async (t) => {
  t.equal([...stages.keys()].at(-1), 'runtime', 'a plain docker build makes the runtime image');
  const withAnvil = [...stages]
    .filter(([, lines]) => lines.some((l) => /^COPY .*foundry-rs/.test(l)))
    .map(([name]) => name);
  t.same(withAnvil, ['devnet']);
  t.match(
    stages.get('build')!.join('\n'),
    /npm prune --omit=dev && rm -rf node_modules\/@foundry-rs /,
    'anvil (optional) is removed from what the app stage copies, the OpenTelemetry SDK (optional) is kept',
  );
  t.notMatch(stages.get('build')!.join('\n'), /python3|g\+\+|node-gyp/, 'no compiler in the build stage');
});

t.test('compose builds targets the Dockerfile has, and its config is valid', async (t) => {
  for (const [name, svc] of Object.entries(compose.services)) {
    if (svc.build?.target !== undefined)
      t.ok(stages.has(svc.build.target), `${name} builds target ${svc.build.target}`);
  }
  t.equal(compose.services.devnet?.build?.target, 'devnet');
  t.equal(compose.services['switchyard-1']?.build?.target, 'runtime');
  const config = parseConfigText(readFileSync(root('config/compose.yaml'), 'utf8'), {});
  t.same(config.server.trustedProxies, ['172.28.0.40/32'], 'the compose balancer alone is trusted for X-Forwarded-For');
});

t.test('the compose balancer config is valid HAProxy and checks /ready on the admin port', async (t) => {
  const cfg = readFileSync(root('config/haproxy.cfg'), 'utf8');
  t.match(cfg, /option httpchk GET \/ready/);
  const config = parseConfigText(readFileSync(root('config/compose.yaml'), 'utf8'), {});
  for (const m of cfg.matchAll(/^\s*server \S+ \S+:(\d+) check port (\d+)/gm)) {
    t.equal(Number(m[1]), config.server.port, 'traffic goes to the JSON-RPC port');
    t.equal(Number(m[2]), config.admin.port, 'the health check goes to the admin port');
  }
  t.doesNotThrow(
    () => execFileSync('/usr/sbin/haproxy', ['-c', '-q', '-f', root('config/haproxy.cfg')], { stdio: 'pipe' }),
    'haproxy -c accepts it',
  );
});
