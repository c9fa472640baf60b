/**
 * Connections refused with a raw answer are closed for good, not half-closed (issue 22, item 7):
 * idle connections answered 408 by the headers timeout, and WebSocket upgrades refused past the
 * per-IP socket cap, give their file descriptors back within moments of the answer even when the
 * peer never closes its side. Measured on the built process (/proc/<pid>/fd) while another client
 * calls every 50 ms.
 */
import { connect, type Socket } from 'node:net';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { request } from 'undici';
import WebSocket from 'ws';
import { startAnvil } from '../helpers/anvil.js';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const HEADERS_MS = 1_500;
const HELD = 300;
/** Descriptors the process may open besides the held connections (upstream pool, timers, logs). */
const FD_MARGIN = 30;
/** From the answer to the close: a silent client's linger (keepAliveTimeoutMs, 5 s), Node's 1 s timeout check, slack. */
const FREED_WITHIN_MS = 10_000;

const anvil = await startAnvil();
t.teardown(() => anvil.stop());

const open = new Set<Socket>();
t.teardown(() => {
  for (const s of open) s.destroy();
});

interface Held {
  socket: Socket;
  received: () => string;
}

/** A peer that never closes its side: allowHalfOpen keeps it open after the server's FIN. */
function dial(port: number): Promise<Held> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    open.add(socket);
    let data = '';
    socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.once('close', () => open.delete(socket));
    socket.once('connect', () => resolve({ socket, received: () => data }));
    socket.once('error', reject);
  });
}

async function dialMany(port: number, n: number): Promise<Held[]> {
  const out: Held[] = [];
  // In rounds of 100: a listen backlog is finite, and this is about holding connections.
  while (out.length < n)
    out.push(...(await Promise.all(Array.from({ length: Math.min(100, n - out.length) }, () => dial(port)))));
  return out;
}

/** Another client: one call every 50 ms until stopped; failures and the slowest answer. */
function otherClient(url: string): { stop: () => Promise<{ calls: number; failures: number; maxMs: number }> } {
  let running = true;
  let calls = 0;
  let failures = 0;
  let maxMs = 0;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const r = await request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}',
        });
        const text = await r.body.text();
        if (r.statusCode !== 200 || !text.includes('"result"')) failures++;
      } catch {
        failures++;
      }
      calls++;
      maxMs = Math.max(maxMs, performance.now() - started);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { calls, failures, maxMs };
    },
  };
}

async function start(t: Test): Promise<{ pid: number; port: number; url: string }> {
  const file = join(t.testdir(), 'config.yaml');
  writeFileSync(
    file,
    `
server: { host: 127.0.0.1, port: 0, wsPort: null, headersTimeoutMs: ${HEADERS_MS}, maxConnectionsPerIp: 2000 }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [ { name: solo, url: "${anvil.url}" } ]
routing: { headPollMs: 100 }
subscriptions: { maxConnectionsPerIp: 1 }
uptime: { store: null }
log: { level: info, requests: 'off' }
`,
  );
  const cli = runCli(t, ['--config', file]);
  t.teardown(() => cli.proc.kill('SIGKILL'));
  const ports = await waitFor('listening line', () => listeningPorts(cli.stdout()));
  const url = `http://127.0.0.1:${ports.http}`;
  await waitFor(
    'ready',
    async () => (await request(`http://127.0.0.1:${ports.admin}/ready?upstreams=1`)).statusCode === 200,
  );
  return { pid: cli.proc.pid!, port: ports.http, url };
}

const fds = (pid: number): number => readdirSync(`/proc/${pid}/fd`).length;

t.test(`${HELD} idle connections answered 408 give their descriptors back though the peers never close`, async (t) => {
  const sy = await start(t);
  const other = otherClient(sy.url);
  await waitFor('the other client is served', async () => (await request(sy.url)).statusCode === 200);
  const baseline = fds(sy.pid);
  const held = await dialMany(sy.port, HELD);
  const peak = await waitFor('the process holds the connections', () => {
    const n = fds(sy.pid);
    return n >= baseline + HELD - FD_MARGIN ? n : undefined;
  });
  t.pass(`the process holds the ${HELD} connections (${baseline} -> ${peak} descriptors)`);
  await waitFor(
    'every idle connection answered 408',
    () => held.every((h) => h.received().startsWith('HTTP/1.1 408')),
    { timeoutMs: HEADERS_MS + 15_000 },
  );
  const answeredAt = performance.now();
  await waitFor(`descriptors back to ${baseline} + ${FD_MARGIN}`, () => fds(sy.pid) <= baseline + FD_MARGIN, {
    timeoutMs: FREED_WITHIN_MS,
  });
  const after = fds(sy.pid);
  t.pass(
    `descriptors ${peak} -> ${after} within ${Math.round(performance.now() - answeredAt)} ms of the last 408 (baseline ${baseline})`,
  );
  t.ok(
    held.every((h) => !h.socket.destroyed),
    'the peers still hold their side open',
  );
  const o = await other.stop();
  t.equal(o.failures, 0, `the other client: 0 failures of ${o.calls} calls`);
  t.ok(o.maxMs < 3_000, `the other client's slowest call: ${Math.round(o.maxMs)} ms`);
});

t.test(`${HELD} upgrades refused past the per-IP socket cap give their descriptors back`, async (t) => {
  const sy = await start(t);
  const other = otherClient(sy.url);
  // The one socket the cap allows this IP.
  const ws = new WebSocket(sy.url.replace('http', 'ws'), { perMessageDeflate: false });
  t.teardown(() => ws.terminate());
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const baseline = fds(sy.pid);
  const held = await dialMany(sy.port, HELD);
  for (const h of held) {
    h.socket.write(
      'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
  }
  await waitFor('every upgrade refused with 429', () => held.every((h) => h.received().startsWith('HTTP/1.1 429')), {
    timeoutMs: 15_000,
  });
  const answeredAt = performance.now();
  await waitFor(`descriptors back to ${baseline} + ${FD_MARGIN}`, () => fds(sy.pid) <= baseline + FD_MARGIN, {
    timeoutMs: FREED_WITHIN_MS,
  });
  t.pass(
    `descriptors back to ${fds(sy.pid)} within ${Math.round(performance.now() - answeredAt)} ms of the last 429 (baseline ${baseline})`,
  );
  t.ok(
    held.every((h) => !h.socket.destroyed),
    'the peers still hold their side open',
  );
  t.equal(ws.readyState, WebSocket.OPEN, 'the socket the cap admitted is still open');
  const o = await other.stop();
  t.equal(o.failures, 0, `the other client: 0 failures of ${o.calls} calls`);
  t.ok(o.maxMs < 3_000, `the other client's slowest call: ${Math.round(o.maxMs)} ms`);
});
