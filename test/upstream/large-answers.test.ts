// Large node answers (over 1 MiB) at the upstream client: checked piece by piece and classified
// from spans (a result byte for byte, an error by its code and message, a batch by its ids), cut
// off when not JSON (a bad answer), when the process's pool of large answers is full
// (answers_busy, the pool given back), or when a call's request budget runs out
// (response_too_large, the budget given back). The node is a fake: anvil cannot answer megabytes
// of chosen text.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { upstreamSchema } from '../../src/config/schema.js';
import { BytePool } from '../../src/upstream/answer-bytes.js';
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

function client(t: Test, url: string, pool = new BytePool(128 * MB)): HttpUpstreamClient {
  const c = new HttpUpstreamClient(upstreamSchema.parse({ name: 'big', url }), { pool });
  t.teardown(() => c.close());
  return c;
}

t.test('a large result, byte for byte; a large error by its code and message', async (t) => {
  const ok = client(t, await node(t, ([id]) => `{"jsonrpc":"2.0","id":${id},"result":${BIG}}\n`));
  const r = await ok.call('eth_getLogs', '[{}]', 10_000);
  t.same(r.verdict, { kind: 'result', result: BIG });
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
  t.same(a!.verdict, { kind: 'result', result: BIG });
  t.match(b!.verdict, { kind: 'node-error', code: 3, message: 'execution reverted' });
  t.same(d!.verdict, { kind: 'result', result: BIG });
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
  t.same(ok.verdict, { kind: 'result', result: BIG });
  t.ok(roomy.held >= BIG.length, 'the answer stays counted against its request');
  roomy.close();
  t.same(
    (await c.call('eth_getLogs', '[{}]', 10_000, { budget: roomy })).verdict.kind,
    'retry',
    'a closed budget cuts the next call off',
  );
});
