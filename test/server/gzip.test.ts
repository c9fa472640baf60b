// server.gzipMinBytes: a large answer is gzip-compressed for a client that accepts it (and a real
// fetch decompresses it to the same JSON); small answers and clients without gzip get plain text.

import t from 'tap';
import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import { startAnvil } from '../helpers/anvil.js';
import { startFakeNode } from '../helpers/fake-node.js';
import { startSwitchyard } from '../helpers/switchyard.js';

const batch = Array.from({ length: 50 }, (_, i) => ({
  jsonrpc: '2.0',
  id: i,
  method: 'eth_getBalance',
  params: [`0x${(i + 1).toString(16).padStart(40, '0')}`, 'latest'],
}));

async function raw(
  url: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ headers: Record<string, unknown>; bytes: Buffer }> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { headers: res.headers, bytes: Buffer.from(await res.body.arrayBuffer()) };
}

t.test('large answers gzip-compressed when accepted', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'node-a', url: anvil.url }],
    server: { gzipMinBytes: 1024 },
  });

  const plain = await raw(sy.url, batch, {});
  t.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding: plain');
  t.match(String(plain.headers.vary), /Accept-Encoding/, 'Vary: Accept-Encoding on a large answer');
  t.ok(plain.bytes.length >= 1024);

  const zipped = await raw(sy.url, batch, { 'accept-encoding': 'br, gzip;q=0.8' });
  t.equal(zipped.headers['content-encoding'], 'gzip', 'gzip when accepted');
  t.equal(Number(zipped.headers['content-length']), zipped.bytes.length);
  t.ok(
    zipped.bytes.length < plain.bytes.length / 2,
    `compressed ${plain.bytes.length} -> ${zipped.bytes.length} bytes`,
  );
  t.equal(gunzipSync(zipped.bytes).toString(), plain.bytes.toString(), 'decompresses to the same body');

  t.equal(
    (await raw(sy.url, batch, { 'accept-encoding': 'gzip;q=0' })).headers['content-encoding'],
    undefined,
    'q=0 refuses gzip',
  );
  const small = await raw(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, { 'accept-encoding': 'gzip' });
  t.equal(small.headers['content-encoding'], undefined, 'a small answer stays plain');

  const viaFetch = await fetch(sy.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(batch),
  });
  t.same(await viaFetch.json(), JSON.parse(plain.bytes.toString()), 'fetch (which asks for gzip) reads the same JSON');
});

t.test('an answer over 1 MiB: plain and gzip both written a piece at a time, the same bytes', async (t) => {
  // A fake node: anvil cannot answer 3 MB of chosen logs; non-ASCII and a surrogate pair in every
  // log, so pieces that split one would show.
  const logs = `[${Array.from({ length: 9000 }, (_, i) => JSON.stringify({ data: `0x${'ab'.repeat(160)}`, i, note: 'é\u{1f600}' })).join(',')}]`;
  const node = await startFakeNode(t, (method) =>
    method === 'eth_getLogs' ? { defer: async () => ({ result: JSON.parse(logs) }) } : undefined,
  );
  node.head = 100;
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'fake', url: node.url }] });
  const call = { jsonrpc: '2.0', id: 1, method: 'eth_getLogs', params: [{ fromBlock: '0x1', toBlock: '0x2' }] };
  const expected = `{"jsonrpc":"2.0","id":1,"result":${logs}}`;
  const plain = await raw(sy.url, call, {});
  t.equal(plain.bytes.toString(), expected, 'plain: byte for byte');
  t.equal(Number(plain.headers['content-length']), plain.bytes.length);
  const zipped = await raw(sy.url, call, { 'accept-encoding': 'gzip' });
  t.equal(zipped.headers['content-encoding'], 'gzip');
  t.equal(gunzipSync(zipped.bytes).toString(), expected, 'gzip: decompresses to the same bytes');
});
