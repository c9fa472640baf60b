/**
 * Admin writes (SPEC 9, docs/operations.md "Securing the admin port"): with `admin.token` set, a
 * write needs `Authorization: Bearer <token>` (401 with WWW-Authenticate: Bearer otherwise, from
 * loopback too); without one, a write is accepted only from a loopback peer (403 otherwise). Reads
 * stay open either way. The token comes from the environment as ${NAME}, a reload applies a new
 * one, and it appears in no log line of the real CLI at debug level, in no answer, nor in /status
 * or /metrics; `check --print` masks it; a short one is refused naming the key, never the value.
 * The non-loopback peer is this machine's own non-loopback address (the admin port on 0.0.0.0):
 * without one, that case rests on the isLoopbackPeer unit test.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import { maskedConfig } from '../../src/config/mask.js';
import { bearerMatches, isLoopbackPeer, writeRefusal } from '../../src/server/admin-writes.js';
import { startAnvil } from '../helpers/anvil.js';
import { listeningPorts, runCli, type Cli } from '../helpers/cli.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get, post, type RawResponse } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = `adm-${randomBytes(16).toString('hex')}`;

/** This machine's first IPv4 address that is not loopback, if it has one. */
const OTHER_ADDRESS = Object.values(networkInterfaces())
  .flat()
  .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;

t.test('isLoopbackPeer', async (t) => {
  for (const a of ['127.0.0.1', '127.255.3.4', '::1', '::ffff:127.0.0.1', '::ffff:127.9.9.9', '0:0:0:0:0:0:0:1'])
    t.ok(isLoopbackPeer(a), a);
  for (const a of [
    '10.0.0.7',
    '192.0.2.2',
    '128.0.0.1',
    '0.0.0.0',
    '::',
    '::2',
    'fd00::2',
    'fe80::1%eth0',
    '::ffff:10.0.0.7',
    '::ffff:128.0.0.1',
    '',
    'localhost',
    'not an address',
    undefined,
  ])
    t.notOk(isLoopbackPeer(a), String(a));
});

t.test('bearerMatches and writeRefusal', async (t) => {
  t.ok(bearerMatches(`Bearer ${TOKEN}`, TOKEN));
  t.ok(bearerMatches(`bearer ${TOKEN}`, TOKEN), 'the scheme in any case');
  for (const h of [
    undefined,
    '',
    TOKEN,
    `Bearer ${TOKEN}x`,
    `Bearer ${TOKEN.slice(0, -1)}`,
    `Bearer ${TOKEN.toUpperCase()}`,
    `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}`,
    `Bearer ${TOKEN} extra`,
    'Bearer ',
  ])
    t.notOk(bearerMatches(h, TOKEN), JSON.stringify(h));

  t.equal(writeRefusal(undefined, '127.0.0.1', null), null, 'no token: loopback may write');
  t.equal(writeRefusal(undefined, '::ffff:127.0.0.1', null), null, 'as IPv4-mapped IPv6 too');
  t.equal(writeRefusal(undefined, '10.0.0.7', null)?.status, 403, 'no token: another peer may not');
  t.equal(writeRefusal(`Bearer ${TOKEN}`, '10.0.0.7', null)?.status, 403, 'a token nobody configured is no pass');
  t.equal(writeRefusal(undefined, '127.0.0.1', TOKEN)?.status, 401, 'token set: loopback needs it too');
  t.equal(writeRefusal('Bearer wrong-token-wrong-token', '127.0.0.1', TOKEN)?.status, 401);
  t.equal(writeRefusal(`Bearer ${TOKEN}`, '10.0.0.7', TOKEN), null, 'token set: the right one from anywhere');
  t.notMatch(writeRefusal('Bearer wrong-token', '::1', TOKEN)?.error ?? '', /wrong-token/, 'the error quotes nothing');
});

function refusal(f: () => unknown): ConfigError {
  try {
    f();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('the config was accepted');
}

t.test('admin.token in the config: length, characters, masking', async (t) => {
  const base = { upstreams: [{ name: 'a', url: 'http://127.0.0.1:1' }] };
  t.equal(validateConfig(base).admin.token, null, 'null by default');
  t.equal(validateConfig({ ...base, admin: { token: TOKEN } }).admin.token, TOKEN);
  for (const [bad, why] of [
    ['short-secret-15', /^admin\.token: expected at least 16 characters/],
    [`${TOKEN}\n`, /^admin\.token: expected printable ASCII without spaces/],
    [`${TOKEN} ${TOKEN}`, /^admin\.token: expected printable ASCII without spaces/],
  ] as const) {
    const err = refusal(() => validateConfig({ ...base, admin: { token: bad } }));
    t.match(err.problems.join('\n'), why, err.problems.join('; '));
    t.notOk(err.message.includes(bad.trim().slice(0, 10)), 'the value is not quoted');
  }
  const masked = maskedConfig(validateConfig({ ...base, admin: { token: TOKEN } })) as { admin: { token: string } };
  t.equal(masked.admin.token, '***', 'check --print shows it masked');
});

function configFile(t: Test, upstream: string, admin: string, extra = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-admin-writes-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, fileText(upstream, admin, extra));
  return file;
}

function fileText(upstream: string, admin: string, extra = ''): string {
  return [
    'server: { host: 127.0.0.1, port: 0, wsPort: null, shutdownDelayMs: 0 }',
    `admin: ${admin}`,
    'upstreams:',
    `  - { name: node-a, url: "${upstream}" }`,
    'routing: { headPollMs: 100 }',
    'rateLimit: { perIp: null }',
    extra,
    '',
  ].join('\n');
}

async function started(cli: Cli): Promise<number> {
  const ports = await waitFor('CLI listening', () => listeningPorts(cli.stdout()), { timeoutMs: 30_000 });
  await waitFor('ready', async () => (await get(`http://127.0.0.1:${ports.admin}/ready?upstreams=1`)).status === 200);
  return ports.admin;
}

const REFUSED = 'switchyard_admin_writes_refused_total';

/** The CLI's "admin write refused" log lines so far, parsed. */
function refusedLines(cli: Cli): Record<string, unknown>[] {
  return cli
    .stdout()
    .split('\n')
    .filter((l) => l.includes('"admin write refused"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const reload = (base: string, headers: Record<string, string> = {}): Promise<RawResponse> =>
  post(`${base}/-/reload`, '{}', headers);

t.test('no admin.token: writes from loopback only, reads from anywhere', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const file = configFile(t, node.url, '{ host: 0.0.0.0, port: 0 }', 'log: { level: info }');
  const cli = runCli(t, ['--config', file]);
  const port = await started(cli);
  const local = `http://127.0.0.1:${port}`;

  const ok = await reload(local);
  t.equal(ok.status, 200, 'POST /-/reload from 127.0.0.1');
  t.same(ok.json(), { reloaded: true });

  await t.test(
    'from a non-loopback address',
    { skip: OTHER_ADDRESS === undefined && 'no non-loopback IPv4 address' },
    async (t) => {
      const other = `http://${OTHER_ADDRESS}:${port}`;
      const refused = await reload(other);
      t.equal(refused.status, 403, `POST /-/reload from ${OTHER_ADDRESS}: 403`);
      t.match(refused.json(), { error: /loopback/ }, 'a JSON error saying why');
      t.equal(refused.headers['content-type'], 'application/json');
      t.equal((await post(`${other}/upstreams/node-a/cordon`, '{}')).status, 403, 'any write, before routing');
      t.equal((await post(`${other}/-/reload`, 'x', { 'content-type': 'text/plain' })).status, 403);
      for (const path of ['/health', '/ready', '/status', '/metrics'])
        t.equal((await get(`${other}${path}`)).status, 200, `GET ${path} stays open`);
      const text = (await get(`${local}/metrics`)).text;
      t.same(metricSamples(text, REFUSED, { reason: 'not_loopback' }), [3], 'the three refusals counted');
      t.same(metricSamples(text, REFUSED, { reason: 'no_token' }), [0], 'other reasons read 0');
      const lines = await waitFor('the refusals logged', () => {
        const found = refusedLines(cli);
        return found.length === 3 ? found : undefined;
      });
      t.match(
        lines.map((l) => [l.level, l.route, l.peer, l.reason]),
        [
          ['warn', '/-/reload', OTHER_ADDRESS, 'not_loopback'],
          ['warn', '/upstreams/node-a/cordon', OTHER_ADDRESS, 'not_loopback'],
          ['warn', '/-/reload', OTHER_ADDRESS, 'not_loopback'],
        ],
        'each at warn with its route and peer',
      );
    },
  );

  const metrics = (await get(`${local}/metrics`)).text;
  t.same(metricSamples(metrics, 'switchyard_config_reloads_total', { result: 'success' }), [1], 'one reload ran');
  cli.proc.kill('SIGTERM');
  t.equal(await cli.exited, 0);
});

t.test('admin.token set: writes need the bearer token, reads stay open, the token leaks nowhere', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const admin = '{ host: 127.0.0.1, port: 0, token: "${SWITCHYARD_ADMIN_TOKEN}" }';
  const file = configFile(t, node.url, admin, 'log: { level: debug }');
  const cli = runCli(t, ['--config', file], { SWITCHYARD_ADMIN_TOKEN: TOKEN });
  const base = `http://127.0.0.1:${await started(cli)}`;
  const answers: string[] = [];
  const write = async (headers: Record<string, string> = {}): Promise<RawResponse> => {
    const r = await reload(base, headers);
    answers.push(r.text);
    return r;
  };

  const none = await write();
  t.equal(none.status, 401, 'no Authorization: 401, from loopback too');
  t.equal(none.headers['www-authenticate'], 'Bearer');
  t.match(none.json(), { error: /Bearer/ });
  for (const wrong of [`Bearer ${TOKEN.slice(0, -1)}x`, `Bearer ${TOKEN}${TOKEN}`, `Basic ${TOKEN}`, TOKEN]) {
    const r = await write({ authorization: wrong });
    t.equal(r.status, 401, `${wrong.slice(0, 12)}...: 401`);
    t.equal(r.headers['www-authenticate'], 'Bearer');
  }
  const counted = (await get(`${base}/metrics`)).text;
  t.same(metricSamples(counted, REFUSED, { reason: 'no_token' }), [1], 'no Authorization: counted as no_token');
  t.same(metricSamples(counted, REFUSED, { reason: 'wrong_token' }), [4], 'the wrong ones: wrong_token');
  const logged = await waitFor('the refusals logged', () => {
    const found = refusedLines(cli);
    return found.length === 5 ? found : undefined;
  });
  t.same(
    logged.map((l) => [l.level, l.route, l.method, l.peer, l.status]),
    Array.from({ length: 5 }, () => ['warn', '/-/reload', 'POST', '127.0.0.1', 401]),
    'each refusal logged at warn with the route and the peer',
  );
  const right = await write({ authorization: `Bearer ${TOKEN}` });
  t.equal(right.status, 200, 'the right token: 200');
  t.same(right.json(), { reloaded: true });

  for (const path of ['/health', '/ready', '/status', '/metrics']) {
    const r = await get(`${base}${path}`);
    answers.push(r.text);
    t.equal(r.status, 200, `GET ${path} without a token`);
  }

  // A reload applies a new token: the file now holds another one (the environment is read once).
  const next = `adm-${randomBytes(16).toString('hex')}`;
  writeFileSync(file, fileText(node.url, `{ host: 127.0.0.1, port: 0, token: "${next}" }`, 'log: { level: debug }'));
  t.equal((await write({ authorization: `Bearer ${TOKEN}` })).status, 200, 'the reload to the new token');
  t.equal((await write({ authorization: `Bearer ${TOKEN}` })).status, 401, 'then the old token is refused');
  t.equal((await write({ authorization: `Bearer ${next}` })).status, 200, 'and the new one accepted');

  cli.proc.kill('SIGTERM');
  t.equal(await cli.exited, 0, 'clean exit');
  const logs = cli.stdout() + cli.stderr();
  t.ok(logs.split('\n').length > 5, 'the CLI logged');
  for (const secret of [TOKEN, next]) {
    t.notOk(logs.includes(secret), 'no token in the log output');
    t.notOk(
      answers.some((a) => a.includes(secret)),
      `no token in any of ${answers.length} answers (/status and /metrics among them)`,
    );
  }
});

t.test('check --print masks admin.token', async (t) => {
  const file = configFile(t, 'http://127.0.0.1:1', '{ token: "${SWITCHYARD_ADMIN_TOKEN}" }');
  const cli = runCli(t, ['check', '--config', file, '--print'], { SWITCHYARD_ADMIN_TOKEN: TOKEN });
  t.equal(await cli.exited, 0);
  t.match(cli.stdout(), /token: "?\*\*\*"?/);
  t.notOk(cli.stdout().includes(TOKEN) || cli.stderr().includes(TOKEN), 'the token is not printed');
  const short = configFile(t, 'http://127.0.0.1:1', '{ token: "${SWITCHYARD_ADMIN_TOKEN}" }');
  const refused = runCli(t, ['check', '--config', short], { SWITCHYARD_ADMIN_TOKEN: 'short-secret' });
  t.equal(await refused.exited, 2, 'a short token: exit 2');
  t.match(refused.stderr(), /admin\.token: expected at least 16 characters/);
  t.notOk(refused.stderr().includes('short-secret'), 'the value is not printed');
});
