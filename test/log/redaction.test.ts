/**
 * No upstream URL or credential reaches a log line: an error whose message quotes a URL with
 * credentials is logged through the `err` serializer with the URL scrubbed (message and stack),
 * and a Switchyard whose upstream (credentials in its URL) cannot be reached logs, at debug,
 * nothing that carries the credentials, the host:port or the path, while its state change says why.
 */
import t from 'tap';
import { Writable } from 'node:stream';
import { createLogger, redactUrls } from '../../src/log/logger.js';
import { call } from '../helpers/rpc.js';
import { freePort } from '../helpers/ports.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

function capture(): { text: () => string; stream: Writable } {
  let out = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      out += chunk.toString();
      done();
    },
  });
  return { text: () => out, stream };
}

t.test('the err serializer scrubs URLs from message and stack', async (t) => {
  const log = capture();
  const logger = createLogger('debug', log.stream);
  const err = new Error(
    'connect ECONNREFUSED https://alice:s3cret-key@rpc.example.com:8545/v2/APIKEY123 and 10.1.2.3:8545',
  );
  logger.error({ err }, 'failed');
  logger.warn({ err: new TypeError('fetch failed for wss://bob:pw@node.example/ws') }, 'failed');
  const text = log.text();
  for (const secret of ['s3cret', 'alice', 'APIKEY123', 'rpc.example.com', '10.1.2.3', 'bob:pw', 'node.example'])
    t.notOk(text.includes(secret), `no ${secret}`);
  t.match(text, /\[url\]/);
  t.match(text, /"type":"TypeError"/, 'the error type is kept');
  t.equal(redactUrls('see http://a:b@h:1/p?q=1 now'), 'see [url] now');
});

t.test('stack frames keep their file and line while URLs in the same error are scrubbed', async (t) => {
  const log = capture();
  const logger = createLogger('debug', log.stream);
  const err = new Error('connect ECONNREFUSED https://alice:s3cret@rpc.example.com/v2/KEY 10.1.2.3:8545');
  // The frames an ESM process writes: file URLs of its own modules, with line and column.
  err.stack = [
    `Error: ${err.message}`,
    '    at send (file:///app/dist/upstream/client.js:212:17)',
    '    at file:///app/src/routing/failover.ts:301:5',
    '    at process.processTicksAndRejections (node:internal/process/task_queues:105:5)',
  ].join('\n');
  logger.error({ err }, 'failed');
  const stack = (JSON.parse(log.text()) as { err: { stack: string } }).err.stack;
  t.match(stack, 'at send (file:///app/dist/upstream/client.js:212:17)', 'a dist frame with file and line');
  t.match(stack, 'at file:///app/src/routing/failover.ts:301:5', 'a source-mapped frame with file and line');
  t.match(stack, 'node:internal/process/task_queues:105:5', 'a node frame');
  for (const secret of ['s3cret', 'alice', 'rpc.example.com', 'KEY', '10.1.2.3'])
    t.notMatch(stack, secret, `no ${secret}`);
  t.equal(redactUrls('at f (file:///a/b.js:1:2) via http://h:1/k'), 'at f (file:///a/b.js:1:2) via [url]');
  // A real stack of this process: its first frame names this file.
  const real = new Error('x');
  t.match(redactUrls(real.stack ?? ''), /redaction\.test\.ts:\d+:\d+/, 'a live frame keeps file and line');
});

t.test('an unreachable upstream with credentials in its URL leaves no trace of them in the log', async (t) => {
  const log = capture();
  const port = await freePort();
  const url = `http://operator:VerySecretToken@127.0.0.1:${port}/rpc/KEY-42`;
  const sy = await startSwitchyard(
    t,
    { upstreams: [{ name: 'hidden', url }], log: { level: 'debug' } },
    { logger: createLogger('debug', log.stream), waitReady: false },
  );
  const answer = await call(sy.url, 'eth_getBalance', ['0x0000000000000000000000000000000000000000', 'latest']);
  t.ok(answer.error, 'no node: an error answer');
  await waitFor('the probe logged the node down', () => log.text().includes('"upstream":"hidden"'));
  const text = log.text();
  for (const secret of ['VerySecretToken', 'operator', 'KEY-42', `127.0.0.1:${port}`])
    t.notOk(text.includes(secret), `no ${secret} in ${text.split('\n').length} lines`);
  const line = await waitFor('the state change logged', () =>
    log
      .text()
      .split('\n')
      .find((l) => l.includes('upstream state changed') && l.includes('"to":"down"')),
  );
  t.match(
    JSON.parse(line),
    { upstream: 'hidden', from: 'connecting', to: 'down', why: 'eth_chainId: transport' },
    'it says why, without the address',
  );
});
