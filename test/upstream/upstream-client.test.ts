// Per-upstream client settings: static headers (with ${ENV} expanded) reach the node; an https
// node behind a private CA is trusted through caFile (and not without it); an answer over
// maxResponseBytes is cut off and answered with -32005 RESPONSE_TOO_LARGE, without trying
// another node, while calls whose answers are over it only together (a batch) are each answered. The https node is a real anvil behind a TLS forwarder that records headers.

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

t.test(
  'headers with ${ENV} reach an https node trusted through caFile; without caFile it is not trusted',
  async (t) => {
    const anvil = await startAnvil();
    t.teardown(() => anvil.stop());
    const { key, cert, caFile } = makeCert();
    const seen: Record<string, string | string[] | undefined>[] = [];
    const tls: Server = createServer({ key, cert }, (req, res) => {
      seen.push(req.headers);
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        void fetch(anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(
          async (r) => {
            res.writeHead(r.status, { 'content-type': 'application/json' });
            res.end(await r.text());
          },
        );
      });
    });
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
    t.teardown(() => new Promise<void>((r) => (tls.closeAllConnections(), tls.close(() => r()))));
    const url = `https://127.0.0.1:${(tls.address() as AddressInfo).port}`;

    // ${ENV} in a header value is expanded by the loader like any other string.
    const parsed = parseConfigText(
      `upstreams:\n  - name: tls\n    url: "${url}"\n    headers: { authorization: "Bearer \${NODE_TOKEN}", x-api-key: "\${NODE_KEY}" }\n`,
      {
        NODE_TOKEN: 'tok-123',
        NODE_KEY: 'key-456',
      },
    );
    t.same(parsed.upstreams[0]!.headers, { authorization: 'Bearer tok-123', 'x-api-key': 'key-456' });

    const sy = await startSwitchyard(t, {
      upstreams: [{ name: 'tls', url, headers: { ...parsed.upstreams[0]!.headers }, caFile }],
    });
    const r = (
      await post(sy.url, {
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_getBalance',
        params: ['0x0000000000000000000000000000000000000001', 'latest'],
      })
    ).json();
    t.match(r.result, /^0x/, 'answered through TLS with the private CA');
    t.ok(
      seen.length > 0 && seen.every((h) => h.authorization === 'Bearer tok-123' && h['x-api-key'] === 'key-456'),
      'every request carried the static headers',
    );
    t.ok(
      seen.every((h) => h['content-type'] === 'application/json'),
      "content-type stays Switchyard's",
    );

    const untrusting = await startSwitchyard(t, { upstreams: [{ name: 'tls', url }] }, { waitReady: false });
    const status = async (): Promise<string> =>
      ((await get(`${untrusting.adminUrl}/status`)).json() as { upstreams: { state: string }[] }).upstreams[0]!.state;
    t.equal(
      await waitFor('the first probe', async () => ((await status()) === 'connecting' ? undefined : status())),
      'down',
      'without caFile the certificate is refused',
    );
  },
);

t.test('a bad caFile or a reserved header is a config error', async (t) => {
  const problems = (text: string): string => {
    try {
      parseConfigText(text, {});
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };
  t.match(
    problems('upstreams:\n  - { name: a, url: "https://h", caFile: /nonexistent/ca.pem }\n'),
    /upstreams\[0\]\.caFile: expected a readable PEM file/,
  );
  t.match(
    problems('upstreams:\n  - { name: a, url: "https://h", headers: { Host: x } }\n'),
    /upstreams\[0\]\.headers: expected no content-type/,
  );
  t.match(
    problems('upstreams:\n  - { name: a, url: "https://h", headers: { "bad header": x } }\n'),
    /expected an HTTP header name/,
  );
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
  const health = ((await get(`${sy.adminUrl}/status`)).json() as { upstreams: { breaker: string; failures: number }[] })
    .upstreams;
  t.ok(
    health.every((u) => u.breaker === 'closed' && u.failures === 0),
    'not held against the node',
  );
});

t.test('calls over maxResponseBytes only together are sent one by one, each judged by its own answer', async (t) => {
  // Receipts of blocks 1-3: 60 kB each, 180 kB together; block 9's alone is over the 100 kB cap.
  const answers = (m: string, params: unknown[]) =>
    m === 'eth_getBlockReceipts'
      ? { result: `${String(params[0])}:${'x'.repeat(params[0] === '0x9' ? 300_000 : 60_000)}` }
      : undefined;
  const a = await startFakeNode(t, answers, { batches: true });
  // The receipts are filler of a size, not receipts: verification (SPEC 4.9) is off for them.
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: a.url, maxResponseBytes: 100_000 }],
    routing: { verify: { enabled: false } },
  });
  await waitFor(
    'a healthy',
    async () =>
      ((await get(`${sy.adminUrl}/status`)).json() as { upstreams: { state: string }[] }).upstreams[0]!.state ===
      'healthy',
  );
  const blocks = ['0x1', '0x2', '0x3', '0x9'];
  const out = (
    await post(
      sy.url,
      blocks.map((b, id) => ({ jsonrpc: '2.0', id, method: 'eth_getBlockReceipts', params: [b] })),
    )
  ).json() as { id: number; result?: string; error?: { data?: { reason?: string } } }[];
  t.same(
    out.map((r) => r.id),
    [0, 1, 2, 3],
    'every call answered, in place',
  );
  t.same(
    out.slice(0, 3).map((r) => r.result?.slice(0, 4)),
    ['0x1:', '0x2:', '0x3:'],
    'each answer that fits alone is given',
  );
  t.equal(out[3]!.error?.data?.reason, 'RESPONSE_TOO_LARGE', 'the one over the cap alone gets -32005');
  const receipts = a.calls.filter((c) => c.method === 'eth_getBlockReceipts');
  t.equal(receipts[0]?.batch, 4, 'the four left together first');
  t.same(
    receipts
      .filter((c) => c.batch === undefined)
      .map((c) => c.params[0])
      .sort(),
    blocks,
    'after their answer together was over the cap, each went alone',
  );
});
