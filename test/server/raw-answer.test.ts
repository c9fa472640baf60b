// An answer passed on as bytes (jsonrpc/raw.ts) reaches the client as those bytes: Content-Length
// from their count when plain, compressed as they are when the client accepts gzip.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { request } from 'undici';
import { RawText } from '../../src/jsonrpc/raw.js';
import { NO_HEADERS, sendLargeAnswer } from '../../src/server/http-answer.js';
import { NodeExchange } from '../../src/server/node-exchange.js';

const TEXT = `{"jsonrpc":"2.0","id":1,"result":[${Array.from({ length: 5000 }, (_, i) => `{"i":${i},"s":"é😀"}`).join(',')}]}`;

t.test('a RawText answer, plain and gzip: the same bytes', async (t) => {
  const bytes = Buffer.from(TEXT);
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += 4097) chunks.push(bytes.subarray(i, i + 4097));
  const server = createServer({ ServerResponse: NodeExchange }, (_req, res) =>
    sendLargeAnswer(res, 200, new RawText(chunks, bytes.length, TEXT.length), 'r1', NO_HEADERS, NO_HEADERS),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const plain = await request(url, { method: 'POST', body: '{}' });
  t.equal(plain.headers['content-length'], String(bytes.length));
  t.ok(Buffer.from(await plain.body.arrayBuffer()).equals(bytes), 'plain: the bytes');
  const zipped = await request(url, { method: 'POST', body: '{}', headers: { 'accept-encoding': 'gzip' } });
  t.equal(zipped.headers['content-encoding'], 'gzip');
  t.ok(gunzipSync(Buffer.from(await zipped.body.arrayBuffer())).equals(bytes), 'gzip: the bytes');
});
