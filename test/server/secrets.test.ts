/**
 * Secrets (SPEC 6, docs/limits.md "Secrets"): an upstream URL with credentials and a secret path reaches the
 * node (the path is used, the credentials become a Basic header) and appears nowhere else: not in
 * any response body (Switchyard's -32002 errors from every kind of upstream failure included), not
 * in /status or /metrics, not in a log line of the real CLI at debug level.
 * The node is a fake one (it answers on any path, and fails on demand) behind a small recorder that
 * keeps the path and the Authorization header each request arrived with.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { startFakeNode, type FakeNode } from '../helpers/fake-node.js';
import { get, post } from '../helpers/rpc.js';
import { listenUntilTeardown } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait.js';
import { freePort } from '../limits/fixtures/tools.js';

const SECRET = /s3cr3t/i;

/** In front of the fake node: records path and Authorization, passes bytes both ways. */
async function recorder(
  t: Test,
  node: FakeNode,
): Promise<{ url: string; port: number; seen: { path: string; auth: string | undefined }[] }> {
  const seen: { path: string; auth: string | undefined }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    seen.push({ path: req.url ?? '', auth: req.headers.authorization });
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      request(node.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.concat(chunks),
      })
        .then(async (up) => {
          const body = Buffer.from(await up.body.arrayBuffer());
          res.writeHead(up.statusCode, { 'content-type': String(up.headers['content-type'] ?? 'application/json') });
          res.end(body);
        })
        .catch(() => req.socket.destroy());
    });
  });
  const port = await listenUntilTeardown(t, server);
  return { url: `http://127.0.0.1:${port}`, port, seen };
}

const addr = (n: number): string => `0x${n.toString(16).padStart(40, '0')}`;
/** Each failure a node can hand Switchyard, keyed by the address asked for. */
const FAILURES: Record<string, string> = {
  [addr(1)]: 'connection reset',
  [addr(2)]: 'HTTP 500 quoting the URL',
  [addr(3)]: 'garbage 200 body quoting the URL',
  [addr(4)]: 'hang until the attempt times out',
  [addr(5)]: 'HTTP 429',
};

t.test('an upstream URL with credentials and a secret path leaks nowhere', async (t) => {
  const node = await startFakeNode(t);
  const front = await recorder(t, node);
  const deadPort = await freePort();
  const leakyText = `upstream http://user:s3cr3tKEY@127.0.0.1:${front.port}/s3cr3tPATH failed`;
  node.script = (method, params) => {
    if (method !== 'eth_getBalance') return undefined;
    switch (params[0]) {
      case addr(1):
        return { reset: true };
      case addr(2):
        return { status: 500, body: leakyText };
      case addr(3):
        return { status: 200, body: `<html>${leakyText}</html>` };
      case addr(4):
        return { hang: true };
      case addr(5):
        return { status: 429, body: leakyText };
      default:
        return { result: '0x2a' };
    }
  };

  const dir = mkdtempSync(join(tmpdir(), 'switchyard-secrets-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    [
      'chainId: 0xba',
      'server: { host: 127.0.0.1, port: 0, wsPort: null, shutdownDelayMs: 0 }',
      'admin: { host: 127.0.0.1, port: 0 }',
      'upstreams:',
      `  - name: node-a`,
      // The key comes from the environment, the path is in the file: both are secret.
      `    url: "http://user:\${NODE_KEY}@127.0.0.1:${front.port}/s3cr3tPATH?apikey=s3cr3tQUERY"`,
      `  - name: node-b`,
      `    url: "https://admin:s3cr3tB@127.0.0.1:${deadPort}/s3cr3tB"`,
      `    ws: "wss://admin:s3cr3tWS@127.0.0.1:${deadPort}/s3cr3tWS"`,
      'routing: { headPollMs: 100, upstreamTimeoutMs: 500, maxAttempts: 2 }',
      'rateLimit: { perIp: null }',
      'log: { level: debug }',
      '',
    ].join('\n'),
  );
  const cli = runCli(t, ['--config', file], { NODE_KEY: 's3cr3tKEY' });
  const ports = await waitFor('CLI listening', () => listeningPorts(cli.stdout()), { timeoutMs: 30_000 });
  const url = `http://127.0.0.1:${ports.http}`;
  const admin = `http://127.0.0.1:${ports.admin}`;
  await waitFor('ready', async () => (await get(`${admin}/ready?upstreams=1`)).status === 200);

  const bodies: string[] = [];
  const ok = await post(url, { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [addr(9), 'latest'] });
  bodies.push(ok.text);
  t.equal(ok.json().result, '0x2a', 'an ordinary call is answered through the secret URL');

  const want = `Basic ${Buffer.from('user:s3cr3tKEY').toString('base64')}`;
  t.ok(front.seen.length > 0, 'the node was reached');
  t.ok(
    front.seen.every((s) => s.auth === want),
    'every request carried the credentials as a Basic Authorization header',
  );
  t.ok(
    front.seen.every((s) => s.path === '/s3cr3tPATH?apikey=s3cr3tQUERY'),
    'at the secret path and query',
  );

  for (const [address, what] of Object.entries(FAILURES)) {
    const r = await post(url, { jsonrpc: '2.0', id: 2, method: 'eth_getBalance', params: [address, 'latest'] });
    bodies.push(r.text);
    t.equal(r.status, 200, `${what}: HTTP 200`);
    t.equal(
      r.json().error?.code,
      -32002,
      `${what}: -32002 (${r.json().error?.message}; data ${JSON.stringify(r.json().error?.data)})`,
    );
    t.notMatch(r.text, SECRET, `${what}: the answer carries no secret`);
    t.notOk(
      r.text.includes(`127.0.0.1:${front.port}`) || r.text.includes(`127.0.0.1:${deadPort}`),
      `${what}: nor an upstream address`,
    );
  }
  // Bad requests and a batch: Switchyard's own errors, for completeness.
  for (const body of [
    '{',
    '[]',
    '[1]',
    JSON.stringify([
      { jsonrpc: '2.0', id: 3, method: 'eth_getBalance', params: [addr(1), 'latest'] },
      { jsonrpc: '2.0', id: 4, method: 'admin_peers' },
    ]),
  ]) {
    bodies.push((await post(url, body)).text);
  }
  t.notOk(
    bodies.some((b) => SECRET.test(b)),
    `no secret in any of ${bodies.length} response bodies`,
  );
  t.notOk(
    bodies.some((b) => /user:|admin:/.test(b)),
    'no credentials in any of them',
  );

  const status = await get(`${admin}/status`);
  t.equal(status.status, 200);
  t.same(
    status.json().upstreams.map((u: any) => u.name),
    ['node-a', 'node-b'],
    '/status names the upstreams',
  );
  t.notMatch(status.text, SECRET, '/status carries no secret');
  t.notOk(
    status.text.includes(`:${front.port}`) || status.text.includes(`:${deadPort}`),
    '/status carries no upstream address',
  );
  const metrics = await get(`${admin}/metrics`);
  t.match(metrics.text, /upstream="node-a"/, '/metrics labels upstreams by name');
  t.notMatch(metrics.text, SECRET, '/metrics carries no secret');
  t.notOk(
    metrics.text.includes(`127.0.0.1:${front.port}`) || metrics.text.includes(`127.0.0.1:${deadPort}`),
    '/metrics carries no upstream address',
  );

  // Let the dead upstream fail its health checks a few times (those errors get logged), then stop.
  await waitFor(
    'node-b seen down',
    async () => (await get(`${admin}/status`)).json().upstreams[1].state !== 'healthy',
    { timeoutMs: 20_000 },
  );
  cli.proc.kill('SIGTERM');
  t.equal(await cli.exited, 0, 'clean exit');
  const logs = cli.stdout() + cli.stderr();
  const lines = cli
    .stdout()
    .split('\n')
    .filter((l) => l !== '');
  t.ok(lines.length > 10, `the CLI logged (${lines.length} lines at debug)`);
  t.ok(
    lines.some((l) => l.includes('node-a')),
    'upstreams appear in logs by name',
  );
  const leaks = logs
    .split('\n')
    .filter((l) => SECRET.test(l) || l.includes(`127.0.0.1:${front.port}`) || l.includes(`127.0.0.1:${deadPort}`));
  t.same(leaks, [], 'no log line carries a secret or an upstream address');
});
