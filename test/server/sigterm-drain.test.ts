/**
 * SIGTERM (SPEC 9): /ready turns 503 at once; for server.shutdownDelayMs calls are still answered,
 * with Connection: close; then new connections are refused, the call already in flight finishes
 * with its answer (Connection: close as well), and the process exits 0.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { startFakeNode } from '../helpers/fake-node.js';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const CHAIN_ID = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}';

t.test(
  'SIGTERM: unready, serves with Connection: close for the delay, then drains in-flight calls and exits 0',
  async (t) => {
    let slowCalls = 0;
    let release: () => void = () => undefined;
    const released = new Promise<void>((r) => (release = r));
    const node = await startFakeNode(t, (method) => {
      if (method === 'eth_getBalance') {
        slowCalls++;
        // Answers only once the test has seen new connections refused: the call spans the drain.
        return { defer: async () => (await released, { result: '0x2a' }) };
      }
      return undefined;
    });
    const dir = t.testdir();
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      `
server: { host: 127.0.0.1, port: 0, wsPort: null, shutdownDelayMs: 3000, shutdownGraceMs: 20000 }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [ { name: slow, url: "${node.url}" } ]
routing: { headPollMs: 100 }
log: { level: info }
`,
    );
    const cli = runCli(t, ['--config', file]);
    const ports = await waitFor('listening line', () => listeningPorts(cli.stdout()));
    const base = `http://127.0.0.1:${ports.http}`;
    const admin = `http://127.0.0.1:${ports.admin}`;
    await waitFor('ready', async () => (await request(`${admin}/ready?upstreams=1`)).statusCode === 200);

    const inFlight = request(base, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'slow',
        method: 'eth_getBalance',
        params: ['0x0000000000000000000000000000000000000000', '0x1'],
      }),
    }).then(async (r) => ({ status: r.statusCode, body: await r.body.text(), connection: r.headers.connection }));
    await waitFor('the slow call reached the node', () => slowCalls === 1);

    cli.proc.kill('SIGTERM');
    await waitFor('/ready turns 503', async () => (await request(`${admin}/ready`)).statusCode === 503, {
      timeoutMs: 5000,
    });
    // Within the delay: still answered, and told to close the connection.
    const during = await request(base, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: CHAIN_ID,
    });
    const duringBody = await during.body.text();
    t.equal(during.statusCode, 200, 'a call during the shutdown delay is answered');
    t.match(duringBody, /"result":"0x/, 'with its result');
    t.equal(during.headers.connection, 'close', 'and Connection: close');

    // After the delay: new connections are refused (each attempt on a fresh connection).
    let refused = '';
    await waitFor(
      'new connections refused after the delay',
      async () => {
        refused = await request(base, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: CHAIN_ID,
          reset: true,
        }).then(
          async (r) => (await r.body.text(), `answered ${r.statusCode}`),
          (e: { code?: string }) => e.code ?? 'error',
        );
        return /ECONNREFUSED|ECONNRESET|answered 503/.test(refused);
      },
      { timeoutMs: 15000 },
    );
    t.match(refused, /ECONNREFUSED|ECONNRESET|answered 503/, `a new connection is refused (${refused})`);
    t.equal(cli.proc.exitCode, null, 'still running while a call is in flight');

    release();
    const done = await inFlight;
    t.equal(done.status, 200, 'the in-flight call finished');
    t.equal(done.body, '{"jsonrpc":"2.0","id":"slow","result":"0x2a"}');
    t.equal(done.connection, 'close', 'a call that began before SIGTERM is answered with Connection: close too');
    t.equal(await cli.exited, 0, 'exit code 0');
  },
);
