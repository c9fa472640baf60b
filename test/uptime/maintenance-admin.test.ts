/**
 * Maintenance windows on the admin port and in the configuration, against Switchyard in front of a
 * real anvil node: the admin-write rule of SPEC 9 (token, refusals logged and counted), the body's
 * checks (400, 413, 415), GET/POST/DELETE, uptime.json's `maintenance` on the public port, a
 * reload that changes uptime.maintenance, and a configuration whose window ends before it starts.
 */
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import type { UptimeReport } from '../../src/uptime/report.js';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = 'maintenance-test-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' };
const hour = (n: number): string => new Date(Date.now() + n * 3_600_000).toISOString();

async function del(url: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await request(url, { method: 'DELETE', headers });
  return { status: res.statusCode, body: JSON.parse(await res.body.text()) };
}

t.test('admin port: POST, GET and DELETE /uptime/maintenance under the admin-write rule', async (t) => {
  const node = await startAnvil({ chainId: 186 });
  t.teardown(() => node.stop());
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-maint-admin-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const configured = { start: hour(2), end: hour(3), title: 'Configured' };
  const yaml = (windows: object[]): string =>
    [
      'chainId: 186',
      `upstreams: [{ name: node-a, url: "${node.url}", discover: false }]`,
      'server: { host: 127.0.0.1, port: 0, wsPort: null }',
      `admin: { host: 127.0.0.1, port: 0, token: ${TOKEN} }`,
      'log: { level: silent }',
      `uptime: { store: null, probeIntervalMs: 200, maintenance: ${JSON.stringify(windows)} }`,
    ].join('\n');
  const file = join(dir, 'switchyard.yaml');
  writeFileSync(file, yaml([configured]));
  const sy = await startSwitchyard(
    t,
    {
      chainId: 186,
      upstreams: [{ name: 'node-a', url: node.url }],
      admin: { token: TOKEN },
      uptime: { probeIntervalMs: 200, maintenance: [configured] },
    },
    { configFile: file },
  );
  const base = `${sy.adminUrl}/uptime/maintenance`;
  const report = async (): Promise<UptimeReport> => (await get(`${sy.url}/uptime.json`)).json() as UptimeReport;
  await waitFor('a first probe', async () => (await get(`${sy.url}/uptime.json`)).status === 200);

  const body = { start: hour(-0.01), end: hour(1), title: 'Database migration' };
  const refused = await post(base, body);
  t.equal(refused.status, 401, 'no token: 401');
  t.equal((await post(base, body, { authorization: 'Bearer nope' })).status, 401, 'a wrong token: 401');
  t.equal((await del(`${base}/admin-1`, {})).status, 401, 'DELETE is a write too');
  const metrics = (await get(`${sy.adminUrl}/metrics`)).text;
  t.same(metricSamples(metrics, 'switchyard_admin_writes_refused_total', { reason: 'no_token' }), [2]);
  t.same(metricSamples(metrics, 'switchyard_admin_writes_refused_total', { reason: 'wrong_token' }), [1]);

  t.equal((await post(base, JSON.stringify(body), { ...AUTH, 'content-type': 'text/plain' })).status, 415);
  t.match((await post(base, '{"start":', AUTH)).json(), { error: /JSON body/ });
  t.equal((await post(base, { ...body, title: 'x'.repeat(5_000) }, AUTH)).status, 413, 'a body over 4 KiB');
  const backwards = await post(base, { ...body, end: body.start, start: body.end }, AUTH);
  t.equal(backwards.status, 400, 'a window that ends before it starts: 400');
  t.match(backwards.json(), { error: 'end must be after start: this window ends before (or when) it starts' });
  t.equal((await post(base, { ...body, end: body.start }, AUTH)).status, 400, 'one that ends when it starts: 400');

  const made = await post(base, body, AUTH);
  t.equal(made.status, 201);
  const { window } = made.json();
  t.match(window, { id: /^admin-\d+$/, title: 'Database migration', source: 'admin', state: 'ongoing' });
  const listed = (await get(base)).json().maintenance;
  t.same(
    listed.map((w: { source: string; state: string }) => [w.source, w.state]),
    [
      ['admin', 'ongoing'],
      ['config', 'upcoming'],
    ],
    'GET (a read: no token) lists every window',
  );
  const pub = (await report()).maintenance;
  t.same(
    pub.map((m) => Object.keys(m).sort()),
    [
      ['end', 'id', 'scope', 'start', 'title'],
      ['end', 'id', 'scope', 'start', 'title'],
    ],
    'uptime.json: { id, title, start, end, scope }',
  );
  t.equal(pub[0]!.id, window.id);

  t.equal((await del(`${base}/${window.id}`, AUTH)).status, 415, 'a DELETE needs the JSON content type too');
  t.equal((await del(`${base}/${pub[1]!.id}`, JSON_AUTH)).status, 409, 'a configured window changes by reload only');
  t.equal((await del(`${base}/admin-999`, JSON_AUTH)).status, 404);
  t.equal((await get(`${base}/${window.id}`)).status, 405);
  const ended = await del(`${base}/${window.id}`, JSON_AUTH);
  t.equal(ended.status, 200);
  t.match(ended.body, { change: 'ended', window: { state: 'over' } });

  writeFileSync(file, yaml([{ start: hour(5), end: hour(6), title: 'Reloaded' }]));
  t.equal((await post(`${sy.adminUrl}/-/reload`, '{}', AUTH)).status, 200);
  t.same(
    (await report()).maintenance.map((m) => m.title),
    ['Reloaded'],
    'uptime.maintenance reloads',
  );
});

t.test('uptime off: the routes say so', async (t) => {
  const node = await startAnvil({ chainId: 186 });
  t.teardown(() => node.stop());
  const sy = await startSwitchyard(t, {
    chainId: 186,
    upstreams: [{ name: 'node-a', url: node.url }],
    uptime: { enabled: false },
  });
  t.match((await get(`${sy.adminUrl}/uptime/maintenance`)).json(), { error: /uptime\.enabled/ });
});

t.test('a configured window that ends before it starts: a clear error with its key path', async (t) => {
  const text = [
    'upstreams: [{ name: a, url: "http://127.0.0.1:1" }]',
    'uptime:',
    '  maintenance:',
    '    - { start: "2026-12-01T02:00:00Z", end: "2026-12-01T04:00:00Z", title: fine }',
    '    - { start: "2026-12-01T02:00:00Z", end: "2026-12-01T01:00:00Z", title: backwards }',
    '    - { start: "2026-12-01 02:00", end: "2026-12-01T03:00:00Z", title: no zone }',
  ].join('\n');
  try {
    parseConfigText(text, {});
    t.fail('refused');
  } catch (err) {
    t.ok(err instanceof ConfigError);
    t.same((err as ConfigError).problems, [
      'uptime.maintenance[1].end: expected end after start: this window ends before (or when) it starts',
      'uptime.maintenance[2].start: expected an ISO 8601 date and time with a zone, such as 2026-12-01T02:00:00Z, got "2026-12-01 02:00"',
    ]);
  }
});
