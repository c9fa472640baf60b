// Large node answers (over 1 MiB) at the upstream client: checked piece by piece and classified
// from spans (a result byte for byte and kept as the node's bytes, an error by its code and
// message, a batch by its ids, a block by the hash it carries), cut off when not JSON or not UTF-8
// (a bad answer), when the process's pool of large answers is full
// (answers_busy, the pool given back), or when a call's request budget runs out
// (response_too_large, the budget given back). The node is a fake: anvil cannot answer megabytes
// of chosen text.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { upstreamSchema } from '../../src/config/schema.js';
import { RawText } from '../../src/jsonrpc/raw.js';
import { BytePool } from '../../src/upstream/answer-bytes.js';
import type { Verdict } from '../../src/upstream/classify.js';
import { HttpUpstreamClient } from '../../src/upstream/client.js';

const MB = 1024 * 1024;
/** About 3 MB of logs-like JSON. */
const BIG = `[${Array.from({ length: 9000 }, (_, i) => JSON.stringify({ data: `0x${'ab'.repeat(160)}`, i, note: 'é\u{1f600}' })).join(',')}]`;

/** A node answering each request with `answer(ids)` (ids of the calls in it, in order), in 64 KiB writes. */
async function node(
  t: Test,
  answer: (ids: number[]) => string,
  opts: { declareLength?: boolean } = {},
): Promise<string> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      const parsed = JSON.parse(text) as { id: number } | { id: number }[];
      const body = Buffer.from(answer(Array.isArray(parsed) ? parsed.map((c) => c.id) : [parsed.id]));
      res.writeHead(200, {
        'content-type': 'application/json',
        ...(opts.declareLength === false ? {} : { 'content-length': body.length }),
      });
      for (let i = 0; i < body.length; i += 65536) res.write(body.subarray(i, i + 65536));
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The verdict's result passed on as the node's bytes (not decoded into a string), and those bytes. */
function rawResult(t: Test, v: Verdict): string | undefined {
  if (v.kind !== 'result') return void t.fail(`expected a result, got ${JSON.stringify(v)}`);
  t.ok(v.result instanceof RawText, 'the result is kept as bytes');
  return String(v.result);
}

function client(t: Test, url: string, pool = new BytePool(128 * MB)): HttpUpstreamClient {
  const c = new HttpUpstreamClient(upstreamSchema.parse({ name: 'big', url }), { pool });
  t.teardown(() => c.close());
  return c;
}

t.test('a large result, byte for byte; a large error by its code and message', async (t) => {
  const ok = client(t, await node(t, ([id]) => `{"jsonrpc":"2.0","id":${id},"result":${BIG}}\n`));
  const r = await ok.call('eth_getLogs', '[{}]', 10_000);
  t.equal(rawResult(t, r.verdict), BIG, 'the result, byte for byte (characters of 2 and 4 bytes across pieces)');
  const err = client(
    t,
    await node(
      t,
      ([id]) => `{"jsonrpc":"2.0","id":${id},"error":{"code":-32000,"data":${BIG},"message":"rate limit"}}`,
    ),
  );
  const e = await err.call('eth_getLogs', '[{}]', 10_000);
  t.match(
    e.verdict,
    { kind: 'retry', reason: 'node_limit' },
    'a 3 MB error is read for its code and message ("rate limit")',
  );
  const long = client(
    t,
    await node(
      t,
      ([id]) => `{"jsonrpc":"2.0","id":${id},"error":{"code":3,"message":"rate limit ${'x'.repeat(2 * MB)}"}}`,
    ),
  );
  t.match(
    (await long.call('eth_call', '[{}]', 10_000)).verdict,
    { kind: 'node-error', code: 3, message: '' },
    'a message over 64 KiB is passed on, not read',
  );
});

t.test('a large batch answer: each call its own verdict by id', async (t) => {
  const c = client(
    t,
    await node(
      t,
      (ids) =>
        `[${ids
          .map((id, k) =>
            k === 1
              ? `{"jsonrpc":"2.0","id":${id},"error":{"code":3,"message":"execution reverted"}}`
              : `{"id":${id},"jsonrpc":"2.0","result":${BIG}}`,
          )
          .reverse()
          .join(',')}]`,
    ),
  );
  const [a, b, d] = await Promise.all([
    c.call('eth_getLogs', '[{}]', 10_000),
    c.call('eth_call', '[{}]', 10_000),
    c.call('eth_getLogs', '[{}]', 10_000),
  ]);
  t.equal(rawResult(t, a!.verdict), BIG);
  t.match(b!.verdict, { kind: 'node-error', code: 3, message: 'execution reverted' });
  t.equal(rawResult(t, d!.verdict), BIG);
});

t.test('a large answer that is not JSON: a bad answer', async (t) => {
  // Two elements with no comma between them, 2 MB in.
  const at = BIG.indexOf('},{', 2 * MB) + 1;
  const c = client(
    t,
    await node(t, ([id]) => `{"jsonrpc":"2.0","id":${id},"result":${BIG.slice(0, at)} ${BIG.slice(at + 1)}}`),
  );
  const r = await c.call('eth_getLogs', '[{}]', 10_000);
  t.same(r.verdict, { kind: 'retry', reason: 'bad_body', health: true });
});

t.test('a large answer that is not UTF-8: a bad answer (the bytes passed on are the bytes checked)', async (t) => {
  const server = createServer((_req, res) => {
    const body = Buffer.from(`{"jsonrpc":"2.0","id":1,"result":${BIG}}`);
    body[body.indexOf('é') + 1] = 0x41; // é's second byte replaced: a lone lead byte
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const c = client(t, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const r = await c.call('eth_getLogs', '[{}]', 10_000);
  t.same(r.verdict, { kind: 'retry', reason: 'bad_body', health: true });
});

t.test('a large block answer: checked for the hash it was asked by, without reading it again', async (t) => {
  const hash = `0x${'ab'.repeat(32)}`;
  const block = (h: string): string =>
    `{"transactions":${BIG},"number":"0x10","hash":"${h}","parentHash":"0x${'00'.repeat(32)}"}`;
  let answerHash = hash;
  const c = client(t, await node(t, ([id]) => `{"jsonrpc":"2.0","id":${id},"result":${block(answerHash)}}`));
  const params = JSON.stringify([hash, true]);
  const r = await c.call('eth_getBlockByHash', params, 10_000);
  t.equal(rawResult(t, r.verdict), block(hash), 'the block it was asked for');
  answerHash = `0x${'cd'.repeat(32)}`;
  t.same(
    (await c.call('eth_getBlockByHash', params, 10_000)).verdict,
    { kind: 'retry', reason: 'wrong_answer', health: false, why: 'not what was asked' },
    'another block is a wrong answer',
  );
});

t.test('a large batch answer: a short result stays text, a long one bytes', async (t) => {
  const c = client(
    t,
    await node(
      t,
      (ids) => `[${ids.map((id, k) => `{"jsonrpc":"2.0","id":${id},"result":${k === 0 ? '"0x1"' : BIG}}`).join(',')}]`,
    ),
  );
  const [a, b] = await Promise.all([c.call('eth_getBalance', '[]', 10_000), c.call('eth_getBalance', '[]', 10_000)]);
  t.same(a!.verdict, { kind: 'result', result: '"0x1"' });
  t.equal(rawResult(t, b!.verdict), BIG);
});

t.test('the pool of large answers full: answers_busy, and the pool given back', async (t) => {
  const pool = new BytePool(2 * MB);
  for (const declareLength of [true, false]) {
    const c = client(
      t,
      await node(t, ([id]) => `{"jsonrpc":"2.0","id":${id},"result":${BIG}}`, { declareLength }),
      pool,
    );
    const r = await c.call('eth_getLogs', '[{}]', 10_000);
    t.same(
      r.verdict,
      { kind: 'retry', reason: 'answers_busy', health: false },
      declareLength ? 'a declared length over the pool' : 'counted as bytes arrive',
    );
    t.equal(pool.held, 0, 'nothing held after');
  }
  const small = client(t, await node(t, ([id]) => `{"jsonrpc":"2.0","id":${id},"result":"0x1"}`), new BytePool(0));
  t.same(
    (await small.call('eth_chainId', '[]', 10_000)).verdict,
    { kind: 'result', result: '"0x1"' },
    'an answer below 1 MiB never counts',
  );
});

t.test("a call's request budget: response_too_large past it, given back; kept when answered", async (t) => {
  const url = await node(t, ([id]) => `{"jsonrpc":"2.0","id":${id},"result":${BIG}}`);
  const c = client(t, url);
  const tight = new BytePool(MB);
  const r = await c.call('eth_getLogs', '[{}]', 10_000, { budget: tight });
  t.same(r.verdict, { kind: 'retry', reason: 'response_too_large', health: false });
  t.equal(tight.held, 0, 'the budget is given back');
  const roomy = new BytePool(8 * MB);
  const ok = await c.call('eth_getLogs', '[{}]', 10_000, { budget: roomy });
  t.equal(rawResult(t, ok.verdict), BIG);
  t.ok(roomy.held >= BIG.length, 'the answer stays counted against its request');
  roomy.close();
  t.same(
    (await c.call('eth_getLogs', '[{}]', 10_000, { budget: roomy })).verdict.kind,
    'retry',
    'a closed budget cuts the next call off',
  );
});
