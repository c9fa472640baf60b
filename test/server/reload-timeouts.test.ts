// Reloaded HTTP timeouts reach both listeners that serve JSON-RPC over HTTP: server.port and
// server.wsPort. Started with a body timeout of two minutes and reloaded to one second, a client
// trickling its body on either port is cut off with 408 within seconds.

import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startAnvil } from '../helpers/anvil.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

/** Sends headers and part of a body, then nothing more; collects what the server answers. */
function slowBody(t: Test, port: number): Promise<{ received: () => string; closed: () => boolean }> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1');
    t.teardown(() => socket.destroy());
    let data = '';
    let closed = false;
    socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
    socket.on('close', () => (closed = true));
    socket.on('error', () => undefined);
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.write(
        'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"jsonrpc":',
      );
      resolve({ received: () => data, closed: () => closed });
    });
  });
}

t.test('a reload to shorter timeouts applies on server.port and server.wsPort alike', async (t) => {
  const a = await startAnvil();
  t.teardown(() => a.stop());
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-reload-timeouts-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.yaml');
  const sy = await startSwitchyard(
    t,
    {
      upstreams: [{ name: 'node-a', url: a.url }],
      server: { wsPort: 0, headersTimeoutMs: 10_000, bodyTimeoutMs: 120_000 },
    },
    { configFile: file },
  );
  writeFileSync(
    file,
    [
      'server: { host: 127.0.0.1, port: 0, wsPort: 0, headersTimeoutMs: 1000, bodyTimeoutMs: 1000 }',
      'admin: { host: 127.0.0.1, port: 0 }',
      'upstreams:',
      `  - { name: node-a, url: "${a.url}" }`,
      'routing: { headPollMs: 100 }',
      'rateLimit: { perIp: null }',
      'log: { level: silent }',
      '',
    ].join('\n'),
  );
  const res = await request(`${sy.adminUrl}/-/reload`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
  });
  t.same(await res.body.json(), { reloaded: true });

  const { http, ws } = sy.app.ports;
  const clients = await Promise.all([slowBody(t, http), slowBody(t, ws!)]);
  // The old body timeout is two minutes: 408 within 20 s can only come from the reloaded one.
  for (const [name, c] of [
    ['server.port', clients[0]!],
    ['server.wsPort', clients[1]!],
  ] as const) {
    await waitFor(`${name}: 408 for the slow body`, () => c.received().startsWith('HTTP/1.1 408'), {
      timeoutMs: 20_000,
    });
    t.pass(`${name}: the slow body got 408 under the reloaded timeout`);
    await waitFor(`${name}: connection closed`, () => c.closed(), { timeoutMs: 20_000 });
  }
});
