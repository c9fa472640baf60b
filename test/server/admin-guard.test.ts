/**
 * The admin port against a browser page of another site (issue 22): POST /-/reload needs a JSON
 * content type (a page may send text/plain, a form or no body anywhere without a CORS preflight):
 * 415 otherwise and nothing reloads. Every request needs a Host the port answers (DNS rebinding:
 * the page's own name pointed at 127.0.0.1): 403 for other names; IP addresses, localhost,
 * admin.allowedHosts and requests without a Host (HTTP/1.0 health checks) are answered.
 */
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { adminHostAllowed } from '../../src/server/admin-host.js';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';

/**
 * One raw request on its own connection: the status code. The client's side stays open until the
 * server closes (Connection: close): a client that half-closes after its request gets no answer
 * from an answer made asynchronously (node:http ends such a socket when it reads the FIN), which
 * made "JSON from localhost" read 0 once in CI while the reload itself happened.
 */
function raw(port: number, lines: string[], body = ''): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let data = '';
    s.on('data', (d: Buffer) => (data += d.toString('latin1')));
    s.on('error', reject);
    s.on('close', () => resolve(Number(/^HTTP\/1\.[01] (\d{3})/.exec(data)?.[1] ?? 0)));
    s.on('connect', () =>
      s.write(
        `${[...lines, 'Connection: close', `Content-Length: ${Buffer.byteLength(body)}`, '', ''].join('\r\n')}${body}`,
      ),
    );
  });
}

t.test('adminHostAllowed', async (t) => {
  const ok = (h: string | undefined, allowed: string[] = []): boolean => adminHostAllowed(h, '127.0.0.1', allowed);
  t.ok(ok(undefined), 'no Host (HTTP/1.0)');
  for (const h of [
    '127.0.0.1',
    '127.0.0.1:9545',
    'localhost',
    'LOCALHOST:9545',
    'localhost.',
    '[::1]:9545',
    '[::1]',
    '10.0.0.7:9545',
    '::1',
  ])
    t.ok(ok(h), h);
  for (const h of ['evil.example', 'evil.example:9545', 'localhost.evil.example', '127.0.0.1.nip.io', '', '[::1]x'])
    t.notOk(ok(h), JSON.stringify(h));
  t.ok(ok('Admin.Internal:9545', ['admin.internal']), 'a listed name, any case and port');
  t.ok(ok('anything.example', ['*']), '"*" answers any');
  t.ok(adminHostAllowed('switchyard-1:9545', 'switchyard-1', []), 'admin.host when it is a name');
});

t.test('POST /-/reload: JSON only; every request: a Host the port answers', async (t) => {
  const [a, b] = await Promise.all([startAnvil(), startAnvil()]);
  t.teardown(() => Promise.all([a.stop(), b.stop()]));
  const file = join(t.testdir(), 'config.yaml');
  const yaml = (nodes: { name: string; url: string }[]): string =>
    [
      'server: { host: 127.0.0.1, port: 0, wsPort: null }',
      'admin: { host: 127.0.0.1, port: 0, allowedHosts: [admin.internal] }',
      'upstreams:',
      ...nodes.map((n) => `  - { name: ${n.name}, url: "${n.url}" }`),
      'rateLimit: { perIp: null }',
      'log: { level: silent }',
      '',
    ].join('\n');
  writeFileSync(file, yaml([{ name: 'node-a', url: a.url }]));
  const sy = await startSwitchyard(
    t,
    { upstreams: [{ name: 'node-a', url: a.url }], admin: { allowedHosts: ['admin.internal'] } },
    { configFile: file },
  );
  const port = sy.app.ports.admin;
  const names = async (): Promise<string[]> =>
    (await get(`${sy.adminUrl}/status`)).json().upstreams.map((u: { name: string }) => u.name);
  const reloads = async (): Promise<number> =>
    metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_config_reloads_total', {
      result: 'success',
    })[0]!;
  // The file now adds node-b: any reload that goes through would show it.
  writeFileSync(
    file,
    yaml([
      { name: 'node-a', url: a.url },
      { name: 'node-b', url: b.url },
    ]),
  );
  const host = `Host: 127.0.0.1:${port}`;
  t.equal(await raw(port, ['POST /-/reload HTTP/1.1', host, 'Content-Type: text/plain'], '{}'), 415, 'text/plain: 415');
  t.equal(
    await raw(port, ['POST /-/reload HTTP/1.1', host, 'Content-Type: application/x-www-form-urlencoded'], 'a=1'),
    415,
    'a form: 415',
  );
  t.equal(await raw(port, ['POST /-/reload HTTP/1.1', host]), 415, 'no content type: 415');
  t.equal(
    await raw(port, ['POST /-/reload HTTP/1.1', 'Host: evil.example:80', 'Content-Type: application/json'], '{}'),
    403,
    'JSON under a foreign Host: 403',
  );
  t.same(await names(), ['node-a'], 'nothing reloaded');
  t.equal(await reloads(), 0, 'no reload counted');

  for (const h of ['evil.example', `evil.example:${port}`, 'localhost.evil.example']) {
    t.equal(await raw(port, ['GET /status HTTP/1.1', `Host: ${h}`]), 403, `GET /status with Host ${h}: 403`);
    t.equal(await raw(port, ['GET /metrics HTTP/1.1', `Host: ${h}`]), 403, `GET /metrics with Host ${h}: 403`);
  }
  for (const h of [`localhost:${port}`, `[::1]:${port}`, `127.0.0.1:${port}`, '10.1.2.3:9545', 'admin.internal:9545']) {
    t.equal(await raw(port, ['GET /health HTTP/1.1', `Host: ${h}`]), 200, `GET /health with Host ${h}: 200`);
  }
  t.equal(await raw(port, ['GET /ready HTTP/1.0']), 200, 'an HTTP/1.0 check without Host: 200');

  t.equal(
    await raw(port, ['POST /-/reload HTTP/1.1', `Host: localhost:${port}`, 'Content-Type: application/json'], '{}'),
    200,
    'JSON from localhost: 200',
  );
  t.same(await names(), ['node-a', 'node-b'], 'and it reloaded');
});
