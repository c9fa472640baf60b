// Per-upstream client settings: static headers (with ${ENV} expanded) reach the node; an https
// node behind a private CA is trusted through caFile (and not without it); an answer over
// maxResponseBytes is cut off and answered with -32005 RESPONSE_TOO_LARGE, without trying
// another node. The https node is a real anvil behind a TLS forwarder that records headers.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfigText } from '../../src/config/load.js';
import { startAnvil } from '../helpers/anvil.js';
import { startFakeNode } from '../helpers/fake-node.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-tls-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** A self-signed certificate for 127.0.0.1: its own CA. */
function makeCert(): { key: string; cert: string; caFile: string } {
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8'), caFile: certFile };
}

t.test('headers with ${ENV} reach an https node trusted through caFile; without caFile it is not trusted', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const { key, cert, caFile } = makeCert();
  const seen: Record<string, string | string[] | undefined>[] = [];
  const tls: Server = createServer({ key, cert }, (req, res) => {
    seen.push(req.headers);
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      void fetch(anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(async (r) => {
        res.writeHead(r.status, { 'content-type': 'application/json' });
        res.end(await r.text());
      });
    });
  });
  await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (tls.closeAllConnections(), tls.close(() => r()))));
  const url = `https://127.0.0.1:${(tls.address() as AddressInfo).port}`;

  // ${ENV} in a header value is expanded by the loader like any other string.
  const parsed = parseConfigText(`upstreams:\n  - name: tls\n    url: "${url}"\n    headers: { authorization: "Bearer \${NODE_TOKEN}", x-api-key: "\${NODE_KEY}" }\n`, {
    NODE_TOKEN: 'tok-123',
    NODE_KEY: 'key-456',
  });
  t.same(parsed.upstreams[0]!.headers, { authorization: 'Bearer tok-123', 'x-api-key': 'key-456' });

  const sy = await startSwitchyard(t, { upstreams: [{ name: 'tls', url, headers: { ...parsed.upstreams[0]!.headers }, caFile }] });
  const r = (await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000001', 'latest'] })).json();
  t.match(r.result, /^0x/, 'answered through TLS with the private CA');
  t.ok(seen.length > 0 && seen.every((h) => h.authorization === 'Bearer tok-123' && h['x-api-key'] === 'key-456'), 'every request carried the static headers');
  t.ok(
    seen.every((h) => h['content-type'] === 'application/json'),
    "content-type stays Switchyard's",
  );

  const untrusting = await startSwitchyard(t, { upstreams: [{ name: 'tls', url }] }, { waitReady: false });
  const status = async (): Promise<string> => ((await get(`${untrusting.adminUrl}/status`)).json() as { upstreams: { state: string }[] }).upstreams[0]!.state;
  t.equal(await waitFor('the first probe', async () => ((await status()) === 'connecting' ? undefined : status())), 'down', 'without caFile the certificate is refused');
});

t.test('a bad caFile or a reserved header is a config error', async (t) => {
  const problems = (text: string): string => {
    try {
      parseConfigText(text, {});
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };
  t.match(problems('upstreams:\n  - { name: a, url: "https://h", caFile: /nonexistent/ca.pem }\n'), /upstreams\[0\]\.caFile: expected a readable PEM file/);
  t.match(problems('upstreams:\n  - { name: a, url: "https://h", headers: { Host: x } }\n'), /upstreams\[0\]\.headers: expected no content-type/);
  t.match(problems('upstreams:\n  - { name: a, url: "https://h", headers: { "bad header": x } }\n'), /expected an HTTP header name/);
});

t.test('an answer over maxResponseBytes: -32005 RESPONSE_TOO_LARGE, no other node asked', async (t) => {
  const big = { result: 'x'.repeat(300_000) };
  const a = await startFakeNode(t, (m) => (m === 'eth_getBlockReceipts' ? big : undefined));
  const b = await startFakeNode(t, (m) => (m === 'eth_getBlockReceipts' ? big : undefined));
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'a', url: a.url, maxBatchSize: 1, maxResponseBytes: 100_000 },
      { name: 'b', url: b.url, maxBatchSize: 1, maxResponseBytes: 100_000 },
    ],
  });
  const r = (await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_getBlockReceipts', params: ['0x1'] })).json();
  t.equal(r.error?.code, -32005);
  t.equal(r.error?.data?.reason, 'RESPONSE_TOO_LARGE');
  const asked = [a, b].map((n) => n.calls.filter((c) => c.method === 'eth_getBlockReceipts').length);
  t.equal(asked[0]! + asked[1]!, 1, 'one node asked, no failover');
  const ok = (await post(sy.url, { jsonrpc: '2.0', id: 2, method: 'eth_chainId' })).json();
  t.equal(ok.result, '0xba', 'still serving');
  const health = ((await get(`${sy.adminUrl}/status`)).json() as { upstreams: { breaker: string; failures: number }[] }).upstreams;
  t.ok(
    health.every((u) => u.breaker === 'closed' && u.failures === 0),
    'not held against the node',
  );
});
