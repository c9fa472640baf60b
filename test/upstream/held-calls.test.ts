/**
 * Held calls at one node's transport (issue 42, items 1 and 2): a call the node holds by design
 * (eth_sendRawTransactionSync of a nonce-gap transaction, which a real anvil holds) timing out is
 * no failure and no breaker mark, while what says the node is failing (a refused connection, a
 * 5xx) still counts; and held calls leave through a pool of their own, so a plain call finds a
 * connection while they are held.
 */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { heldVerdict, type Verdict } from '../../src/upstream/classify.js';
import { HttpUpstreamClient } from '../../src/upstream/client.js';
import { startAnvil } from '../helpers/anvil.js';
import { upstreamConfig } from '../helpers/fake-client.js';
import { startFakeNode } from '../helpers/fake-node.js';
import { signTransfer } from '../helpers/transfer.js';

const HELD = { held: true } as const;

t.test('heldVerdict: the node holding the call is no health signal, the node failing still is', async (t) => {
  const cases: [string, Verdict, boolean][] = [
    ['a timeout once sent', { kind: 'retry', reason: 'timeout', health: true }, false],
    ['a connection lost once sent', { kind: 'retry', reason: 'transport', health: true }, false],
    ['a connection refused', { kind: 'retry', reason: 'transport', health: true, unsent: true }, true],
    ['a connection not made in time', { kind: 'retry', reason: 'timeout', health: true, unsent: true }, true],
    ['an HTTP 5xx', { kind: 'retry', reason: 'http_5xx', health: true }, true],
    ['an unreadable answer', { kind: 'retry', reason: 'bad_body', health: true }, true],
  ];
  for (const [what, v, counts] of cases) {
    const judged = heldVerdict(v);
    t.equal(judged.kind === 'retry' && judged.health, counts, `${what}: ${counts ? 'counts' : 'does not count'}`);
  }
  const result: Verdict = { kind: 'result', result: '"0x1"' };
  t.equal(heldVerdict(result), result, 'an answer is left as it is');
});

t.test('held transactions timing out at a real node: no failure, the breaker stays closed', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const raws = await Promise.all(Array.from({ length: 12 }, (_, k) => signTransfer(500 + k)));

  const client = new HttpUpstreamClient(upstreamConfig('held', { url: anvil.url, maxConnections: 4 }));
  t.teardown(() => client.close());
  const params = (k: number): string => JSON.stringify([raws[k]]);
  // Twice the breaker's threshold (5) of held calls, each held by the node until its timeout.
  const verdicts = await Promise.all(
    Array.from({ length: 6 }, (_, k) => client.call('eth_sendRawTransactionSync', params(k), 300, HELD)),
  );
  const more = await Promise.all(
    Array.from({ length: 6 }, (_, k) => client.call('eth_sendRawTransactionSync', params(6 + k), 300, HELD)),
  );
  t.same(
    [...verdicts, ...more].map((c) => c.verdict),
    Array.from({ length: 12 }, () => ({ kind: 'retry', reason: 'timeout', health: false })),
    'each a timeout that is no health signal',
  );
  t.equal(client.failures, 0, 'no failure counted');
  t.equal(client.breaker.state, 'closed', 'the breaker is closed');
  t.equal(client.latencyMs, 5, 'no latency sample from a held wait');
  t.equal(client.heldInFlight, 0, 'the lane is empty again');

  // The same calls not marked held are what opened breakers before.
  const plain = new HttpUpstreamClient(upstreamConfig('plain', { url: anvil.url, maxConnections: 4 }));
  t.teardown(() => plain.close());
  // Transactions of their own: the node answers a repeat at once ("already known").
  for (let k = 0; k < 5; k++)
    await plain.call('eth_sendRawTransactionSync', JSON.stringify([await signTransfer(600 + k)]), 200);
  t.equal(plain.breaker.state, 'open', 'unmarked, five timeouts open the breaker');
});

t.test('a held call still counts what says the node is failing', async (t) => {
  // A port nothing listens on: the connection is refused.
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  const refused = new HttpUpstreamClient(upstreamConfig('refused', { url: `http://127.0.0.1:${port}` }));
  t.teardown(() => refused.close());
  const r = await refused.call('eth_sendRawTransactionSync', '["0x00"]', 2_000, HELD);
  t.match(r.verdict, { kind: 'retry', reason: 'transport', health: true }, 'a refused connection counts');
  t.equal(refused.failures, 1);

  const failing = await startFakeNode(t, (method) =>
    method === 'debug_traceTransaction' ? { status: 502, body: 'bad gateway' } : undefined,
  );
  const fiveHundred = new HttpUpstreamClient(upstreamConfig('5xx', { url: failing.url }));
  t.teardown(() => fiveHundred.close());
  const f = await fiveHundred.call('debug_traceTransaction', '["0x00"]', 2_000, { expensive: true, held: true });
  t.match(f.verdict, { kind: 'retry', reason: 'http_5xx', health: true }, 'a 5xx counts');
  t.equal(fiveHundred.failures, 1);
});

t.test('held calls leave through a pool of their own: a plain call finds a connection', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const raws = await Promise.all(Array.from({ length: 2 }, (_, k) => signTransfer(700 + k)));
  // One connection for every other call: a held call in it would hold it for its whole timeout.
  const client = new HttpUpstreamClient(
    upstreamConfig('lanes', { url: anvil.url, maxConnections: 1, heldConnections: 2 }),
  );
  t.teardown(() => client.close());
  const held = raws.map((raw) => client.call('eth_sendRawTransactionSync', JSON.stringify([raw]), 5_000, HELD));
  t.equal(client.heldInFlight, 2, 'two held calls in flight');
  const started = performance.now();
  const plain = await client.call('eth_getBalance', '["0x000000000000000000000000000000000000dEaD","latest"]', 5_000);
  const ms = performance.now() - started;
  t.equal(plain.verdict.kind, 'result', 'the plain call is answered');
  t.ok(ms < 2_500, `while both are held, not after them (${ms.toFixed(0)} ms; they are held 5 s)`);
  t.equal(client.heldInFlight, 2, 'the held calls were still held meanwhile');
  await Promise.all(held);
});
