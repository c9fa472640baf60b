// A reload is all or nothing (SPEC 2: "the running configuration stays"): a new file that names a
// smaller batch limit and an upstream whose client cannot be built changes nothing. The batch limit
// of the running configuration still applies, the upstream set is the old one, and the failure is
// counted in switchyard_config_last_reload_successful.

import t from 'tap';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { validateConfig } from '../../src/config/load.js';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard, testConfig } from '../helpers/switchyard.js';

const batchOf = (n: number): object[] =>
  Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'eth_chainId', params: [] }));

function fileFor(maxBatchSize: number, upstreams: { name: string; url: string }[]): string {
  return [
    `server: { host: 127.0.0.1, port: 0, wsPort: null, maxBatchSize: ${maxBatchSize} }`,
    'admin: { host: 127.0.0.1, port: 0 }',
    'upstreams:',
    ...upstreams.map((u) => `  - { name: ${u.name}, url: "${u.url}" }`),
    'routing: { headPollMs: 100 }',
    'rateLimit: { perIp: null }',
    'log: { level: silent }',
    '',
  ].join('\n');
}

t.test('a refused reload leaves the batch limit and the upstreams as they were', async (t) => {
  const a = await startAnvil();
  t.teardown(() => a.stop());
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-reload-atomic-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, fileFor(5, [{ name: 'node-a', url: a.url }]));
  const sy = await startSwitchyard(
    t,
    { upstreams: [{ name: 'node-a', url: a.url }], server: { maxBatchSize: 5 } },
    { configFile: file },
  );
  t.equal((await post(sy.url, batchOf(3))).status, 200, 'a batch of 3 passes under the limit of 5');

  // `%of` is not a valid escape: this upstream's credentials cannot be decoded into a Basic header.
  const port = new URL(a.url).port;
  writeFileSync(
    file,
    fileFor(2, [
      { name: 'node-a', url: a.url },
      { name: 'node-b', url: `http://u:50%off@127.0.0.1:${port}` },
    ]),
  );
  const res = await request(`${sy.adminUrl}/-/reload`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
  });
  const body = (await res.body.json()) as { reloaded: boolean };
  t.equal(body.reloaded, false, 'the reload is refused');

  const batch = await post(sy.url, batchOf(3));
  t.equal(batch.status, 200, 'the running batch limit (5) still applies');
  t.equal((batch.json() as unknown[]).length, 3);
  t.same(
    ((await get(`${sy.adminUrl}/status`)).json() as { upstreams: { name: string }[] }).upstreams.map((u) => u.name),
    ['node-a'],
    'the upstream set is the running one',
  );
  t.same(metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_config_last_reload_successful'), [0]);
});

t.test('an upstream client that fails to build after validation changes nothing', async (t) => {
  const a = await startAnvil();
  t.teardown(() => a.stop());
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-reload-atomic-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'node-a', url: a.url }], server: { maxBatchSize: 5 } });

  // The CA file exists when the new configuration is validated and is gone when it is applied.
  const ca = join(dir, 'ca.pem');
  writeFileSync(ca, '');
  const next = validateConfig(
    testConfig({
      upstreams: [
        { name: 'node-a', url: a.url },
        { name: 'node-b', url: a.url.replace('http:', 'https:'), caFile: ca },
      ],
      server: { maxBatchSize: 2 },
      rateLimit: { perIp: { ratePerSec: 1, burst: 1 } },
    }),
  );
  unlinkSync(ca);
  await t.rejects(sy.app.reload(next), { code: 'ENOENT' }, 'the reload throws');

  const batch = await post(sy.url, batchOf(3));
  t.equal(batch.status, 200, 'the batch limit stays 5');
  t.notOk(
    (batch.json() as { error?: unknown }[]).some((r) => r.error !== undefined),
    'and the rate limit stays off',
  );
  t.same(
    ((await get(`${sy.adminUrl}/status`)).json() as { upstreams: { name: string }[] }).upstreams.map((u) => u.name),
    ['node-a'],
  );
});
