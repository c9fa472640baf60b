// POST /-/reload on the admin port reads the config file again, as SIGHUP does: a good file is
// applied (200, new upstream set, log level and request-line mode live), a bad one is refused
// (400 with the problems, the running configuration stays) and both are counted in the reload
// metrics an alert reads.

import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { call, get } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

async function reload(adminUrl: string): Promise<{ status: number; body: { reloaded: boolean; problems?: string[] } }> {
  const res = await request(`${adminUrl}/-/reload`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
  });
  return { status: res.statusCode, body: (await res.body.json()) as { reloaded: boolean; problems?: string[] } };
}

function fileFor(upstreams: { name: string; url: string }[], extra = ''): string {
  return [
    'server: { host: 127.0.0.1, port: 0, wsPort: null }',
    'admin: { host: 127.0.0.1, port: 0 }',
    'upstreams:',
    ...upstreams.map((u) => `  - { name: ${u.name}, url: "${u.url}" }`),
    'routing: { headPollMs: 100 }',
    'rateLimit: { perIp: null }',
    extra,
    '',
  ].join('\n');
}

t.test('POST /-/reload: a good file applies, a bad one is refused and counted', async (t) => {
  const [a, b] = await Promise.all([startAnvil(), startAnvil()]);
  t.teardown(() => Promise.all([a.stop(), b.stop()]));
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-reload-ep-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, fileFor([{ name: 'node-a', url: a.url }], 'log: { level: silent }'));
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'node-a', url: a.url }] }, { configFile: file });
  const names = async (): Promise<string[]> =>
    ((await get(`${sy.adminUrl}/status`)).json() as { upstreams: { name: string }[] }).upstreams.map((u) => u.name);
  const metrics = async (): Promise<string> => (await get(`${sy.adminUrl}/metrics`)).text;

  t.equal((await get(`${sy.adminUrl}/-/reload`)).status, 405, 'GET /-/reload is refused');

  writeFileSync(
    file,
    fileFor(
      [
        { name: 'node-a', url: a.url },
        { name: 'node-b', url: b.url },
      ],
      'log: { level: silent, requests: errors }',
    ),
  );
  const good = await reload(sy.adminUrl);
  t.equal(good.status, 200);
  t.same(good.body, { reloaded: true });
  t.same(await names(), ['node-a', 'node-b'], 'node-b added');
  let m = await metrics();
  t.same(metricSamples(m, 'switchyard_config_last_reload_successful'), [1]);
  t.same(metricSamples(m, 'switchyard_config_reloads_total', { result: 'success' }), [1]);
  const at = metricSamples(m, 'switchyard_config_last_reload_success_timestamp_seconds')[0]!;
  t.ok(Math.abs(at - Date.now() / 1000) < 120, 'reload time is now');

  writeFileSync(file, fileFor([{ name: 'node-a', url: 'not a url' }]));
  const bad = await reload(sy.adminUrl);
  t.equal(bad.status, 400, 'a bad file: 400');
  t.equal(bad.body.reloaded, false);
  t.match(
    bad.body.problems?.join('\n') ?? '',
    /upstreams\[0\]\.url: expected an http\(s\) URL/,
    'the problem names the key',
  );
  t.same(await names(), ['node-a', 'node-b'], 'the running configuration stays');
  // A refused URL holding credentials: the answer names the key path, never the secret.
  writeFileSync(file, fileFor([{ name: 'node-a', url: 'htps://user:pw@node.example/SUPERSECRETKEY123' }]));
  const secret = await reload(sy.adminUrl);
  t.equal(secret.status, 400);
  t.same(secret.body.problems, ['upstreams[0].url: expected an http(s) URL, got "htps://***@node.example/***"']);
  m = await metrics();
  t.same(metricSamples(m, 'switchyard_config_last_reload_successful'), [0], 'last reload unsuccessful');
  t.same(metricSamples(m, 'switchyard_config_reloads_total', { result: 'failure' }), [2]);
  t.same(metricSamples(m, 'switchyard_config_last_reload_success_timestamp_seconds'), [at], 'the success time stays');

  // Back to a good file: the gauge recovers.
  writeFileSync(file, fileFor([{ name: 'node-b', url: b.url }], 'log: { level: silent }'));
  t.equal((await reload(sy.adminUrl)).status, 200);
  await waitFor('node-a retired', async () => (await names()).join() === 'node-b');
  t.same(metricSamples(await metrics(), 'switchyard_config_last_reload_successful'), [1]);
});

t.test('POST /-/reload without a config file says so', async (t) => {
  const a = await startAnvil();
  t.teardown(() => a.stop());
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'node-a', url: a.url }] });
  const r = await reload(sy.adminUrl);
  t.equal(r.status, 400);
  t.match(r.body.problems?.[0] ?? '', /no configuration file/);
});

t.test('what cannot reload is named in a warning; the log level reloads', async (t) => {
  const { Writable } = await import('node:stream');
  const { createLogger } = await import('../../src/log/logger.js');
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const a = await startAnvil();
  t.teardown(() => a.stop());
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-reload-warn-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.yaml');
  const sy = await startSwitchyard(
    t,
    { upstreams: [{ name: 'node-a', url: a.url }], log: { level: 'warn' } },
    { configFile: file, logger: createLogger('warn', stream) },
  );
  writeFileSync(
    file,
    fileFor(
      [{ name: 'node-a', url: a.url }],
      'log: { level: info }\nchainId: 1\ncache: { maxBytes: 1000 }\nuptime: { store: null }',
    ).replace('port: 0, wsPort: null', 'port: 1, wsPort: null'),
  );
  t.equal((await reload(sy.adminUrl)).status, 200);
  const warn = lines.find((l) => l.msg === 'these settings cannot change on reload; restart to apply them');
  t.same(
    warn?.settings,
    ['chainId', 'server.port', 'cache.maxBytes'],
    'the warning names each restart key the file changed, and nothing else',
  );
  t.ok(
    lines.some((l) => l.msg === 'configuration reloaded' && l.level === 'info'),
    'the new level (info) applies at once',
  );
  t.equal((await call(sy.url, 'eth_chainId')).result, '0xba', 'the running chain id stays until a restart');
});
