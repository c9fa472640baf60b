// Request lines: X-Request-Id is honoured when sent and returned always; the request line carries
// it, the user agent and the API key's name (never the key); log.requests picks which requests get
// a line; errors are logged with their stack through pino's serializer.

import t from 'tap';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/log/logger.js';
import { startAnvil } from '../helpers/anvil.js';
import { post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

function capture(): { lines: () => Record<string, unknown>[]; stream: Writable } {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      out.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((l) => l !== ''),
      );
      cb();
    },
  });
  return { lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>), stream };
}

const KEY = 'k-0123456789abcdef0123';

t.test('X-Request-Id round trip; request line with user agent and key name', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const log = capture();
  const sy = await startSwitchyard(
    t,
    {
      upstreams: [{ name: 'node-a', url: anvil.url }],
      log: { level: 'info' },
      rateLimit: { apiKeys: [{ name: 'partner-1', key: KEY, ratePerSec: 100, burst: 100 }] },
    },
    { logger: createLogger('info', log.stream) },
  );
  const body = { jsonrpc: '2.0', id: 1, method: 'eth_chainId' };

  const sent = await post(sy.url, body, {
    'x-request-id': 'trace-abc.123',
    'user-agent': 'probe/1.0',
    'x-api-key': KEY,
  });
  t.equal(sent.headers['x-request-id'], 'trace-abc.123', 'a sent X-Request-Id comes back');
  const own = await post(sy.url, body);
  t.match(String(own.headers['x-request-id']), /^[0-9a-f]{6}-[0-9a-z]+$/, 'without one, an id is made and returned');
  const hostile = await post(sy.url, body, { 'x-request-id': 'a b"c' });
  t.not(hostile.headers['x-request-id'], 'a b"c', 'an id that is not a plain token is replaced');
  t.equal(
    (await post(sy.url, '{}', { 'content-type': 'text/plain', 'x-request-id': 'rejected-1' })).headers['x-request-id'],
    'rejected-1',
    'returned on a refused request too',
  );

  const line = await waitFor('the request line', () =>
    log.lines().find((l) => l.msg === 'request' && l.req === 'trace-abc.123'),
  );
  t.equal(line.ua, 'probe/1.0', 'user agent logged');
  t.equal(line.apiKey, 'partner-1', 'the key is logged by name');
  t.notOk(JSON.stringify(log.lines()).includes(KEY), 'the key itself is in no line');
  t.ok(
    log.lines().some((l) => l.msg === 'request' && l.req === own.headers['x-request-id']),
    "the made-up id is the line's req",
  );
});

t.test('log.requests: errors logs only requests with an error; off logs none, lifecycle lines stay', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  for (const mode of ['errors', 'off'] as const) {
    const log = capture();
    const sy = await startSwitchyard(
      t,
      { upstreams: [{ name: 'node-a', url: anvil.url }], log: { level: 'info', requests: mode } },
      { logger: createLogger('info', log.stream) },
    );
    await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, { 'x-request-id': `ok-${mode}` });
    await post(sy.url, { jsonrpc: '2.0', id: 2, method: 'foo_bar' }, { 'x-request-id': `bad-${mode}` });
    await post(sy.url, { jsonrpc: '2.0', id: 3, method: 'eth_chainId' }, { 'x-request-id': `last-${mode}` });
    const reqs = log
      .lines()
      .filter((l) => l.msg === 'request')
      .map((l) => l.req);
    t.same(reqs, mode === 'errors' ? [`bad-${mode}`] : [], `${mode}: request lines`);
    t.ok(
      log.lines().some((l) => l.msg === 'switchyard listening'),
      `${mode}: lifecycle lines stay`,
    );
    await sy.close();
  }
});

t.test('errors are logged with type and stack, URLs scrubbed', async (t) => {
  const log = capture();
  const logger = createLogger('info', log.stream);
  const err = new Error('connect ECONNREFUSED http://user:secret@10.1.2.3:8545/key');
  logger.error({ err }, 'boom');
  const line = await waitFor('the line', () => log.lines()[0]);
  const e = line.err as { type: string; message: string; stack: string };
  t.equal(e.type, 'Error');
  t.match(e.stack, /request-id\.test\.ts/, 'the stack is there');
  t.notMatch(JSON.stringify(line), /secret|10\.1\.2\.3/, 'no URL or address');
});

t.test('debug lines: failover and breaker transitions carry the request id', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const { startFakeNode } = await import('../helpers/fake-node.js');
  const broken = await startFakeNode(t, (m) => (m === 'eth_getBalance' ? { status: 500, body: 'down' } : undefined));
  broken.head = 0; // at the anvil's height, so both are eligible for `latest`
  const log = capture();
  const sy = await startSwitchyard(
    t,
    {
      upstreams: [
        { name: 'broken', url: broken.url, maxBatchSize: 1, weight: 1000 },
        { name: 'good', url: anvil.url },
      ],
      log: { level: 'debug' },
      routing: { breaker: { failureThreshold: 1, cooldownMs: 600_000 } },
    },
    { logger: createLogger('debug', log.stream) },
  );
  // The broken node weighs most, so it is chosen first; the call fails over to the good one.
  // Each call asks for another address: no cache hit.
  const balance = (id: number): object => ({
    jsonrpc: '2.0',
    id,
    method: 'eth_getBalance',
    params: [`0x${(id + 1).toString(16).padStart(40, '0')}`, 'latest'],
  });
  for (let i = 0; i < 30 && !broken.calls.some((c) => c.method === 'eth_getBalance'); i++) {
    t.match((await post(sy.url, balance(i), { 'x-request-id': `dbg-${i}` })).json().result, /^0x/, 'answered');
  }
  const failover = await waitFor('a failover line', () => log.lines().find((l) => l.msg === 'failover'));
  t.match(failover, { level: 'debug', upstream: 'broken', reason: 'http_5xx', method: 'eth_getBalance' });
  t.match(String(failover.req), /^dbg-\d+$/, 'the failover line carries the request id');
  const breaker = log.lines().find((l) => l.msg === 'breaker state changed');
  t.match(breaker, { upstream: 'broken', from: 'closed', to: 'open', req: failover.req });
  t.ok(
    log.lines().some((l) => l.msg === 'probe: head' && l.upstream === 'good'),
    'probe lines at debug',
  );
});
