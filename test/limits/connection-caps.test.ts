/**
 * server.maxConnections and server.maxConnectionsPerIp (issue 22, item 7): a connection past
 * either cap is closed at once, unanswered, and counted; another client (another IP for the
 * per-IP cap; anyone once a place is free for the total) still gets through. "Another IP" is a
 * second loopback address (127.0.0.2..) bound with localAddress.
 */
import { connect, type Socket } from 'node:net';
import t from 'tap';
import { Agent, request } from 'undici';
import { startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const anvil = await startAnvil();
t.teardown(() => anvil.stop());

const open = new Set<Socket>();
t.teardown(() => {
  for (const s of open) s.destroy();
});

interface Conn {
  socket: Socket;
  /** ms from connect to close, once closed. */
  closedAfter: () => number | undefined;
  received: () => string;
}

function dial(port: number, from: string): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect({ port, host: '127.0.0.1', localAddress: from });
    open.add(socket);
    let closedAt: number | undefined;
    let data = '';
    socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.once('close', () => {
      open.delete(socket);
      closedAt = performance.now() - started;
    });
    socket.once('connect', () => resolve({ socket, closedAfter: () => closedAt, received: () => data }));
    socket.once('error', reject);
  });
}

const CALL = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}';

/** One call from `from` on a fresh connection, closed after. */
async function callFrom(sy: RunningSwitchyard, from: string): Promise<{ status: number; text: string; ms: number }> {
  const agent = new Agent({ localAddress: from });
  const started = performance.now();
  try {
    const r = await request(sy.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: CALL,
      dispatcher: agent,
    });
    return { status: r.statusCode, text: await r.body.text(), ms: performance.now() - started };
  } finally {
    await agent.close();
  }
}

async function connectionStats(
  sy: RunningSwitchyard,
): Promise<{ open: number; refused: { total: number; ip: number } }> {
  return (await get(`${sy.adminUrl}/status`)).json().limits.connections;
}

t.test('server.maxConnectionsPerIp: one IP past its cap is closed at once; another IP is served', async (t) => {
  const PER_IP = 20;
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: anvil.url }],
    server: { maxConnectionsPerIp: PER_IP, maxConnections: 1000 },
  });
  const port = sy.app.ports.http;
  const held = await Promise.all(Array.from({ length: PER_IP }, () => dial(port, '127.0.0.2')));
  await waitFor(`${PER_IP} connections counted`, async () => (await connectionStats(sy)).open === PER_IP);
  const extra = await Promise.all(Array.from({ length: 5 }, () => dial(port, '127.0.0.2')));
  await waitFor('the 5 past the cap closed', () => extra.every((c) => c.closedAfter() !== undefined), {
    timeoutMs: 5_000,
  });
  t.ok(
    extra.every((c) => c.received() === ''),
    'closed unanswered',
  );
  t.ok(
    Math.max(...extra.map((c) => c.closedAfter()!)) < 2_000,
    `at once (slowest ${Math.round(Math.max(...extra.map((c) => c.closedAfter()!)))} ms)`,
  );
  t.ok(
    held.every((c) => c.closedAfter() === undefined),
    `the ${PER_IP} within the cap stay open`,
  );
  const other = await callFrom(sy, '127.0.0.3');
  t.equal(other.text, '{"jsonrpc":"2.0","id":1,"result":"0xba"}', 'another IP is answered');
  t.ok(other.ms < 2_000, `quickly (${Math.round(other.ms)} ms)`);
  const stats = await connectionStats(sy);
  t.equal(stats.refused.ip, 5, '/status counts 5 refused for the per-IP cap');
  t.same(
    metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_connections_refused_total', { reason: 'ip' }),
    [5],
    'and the metric',
  );
  // A place freed by a close is taken again.
  held[0]!.socket.destroy();
  await waitFor('the close counted', async () => (await connectionStats(sy)).open < PER_IP);
  const again = await callFrom(sy, '127.0.0.2');
  t.equal(again.status, 200, 'the capped IP gets a freed place back');
});

t.test(
  'server.maxConnections: past the total every new connection is closed at once; a freed place serves another client',
  async (t) => {
    const TOTAL = 30;
    const sy = await startSwitchyard(t, {
      upstreams: [{ name: 'a', url: anvil.url }],
      server: { maxConnections: TOTAL, maxConnectionsPerIp: 20 },
    });
    const port = sy.app.ports.http;
    // The ready check used the admin port only: no JSON-RPC connection is open yet.
    const held = [
      ...(await Promise.all(Array.from({ length: 15 }, () => dial(port, '127.0.0.4')))),
      ...(await Promise.all(Array.from({ length: 15 }, () => dial(port, '127.0.0.5')))),
    ];
    await waitFor(`${TOTAL} connections counted`, async () => (await connectionStats(sy)).open === TOTAL);
    const extra = await Promise.all(['127.0.0.6', '127.0.0.7', '127.0.0.8'].map((ip) => dial(port, ip)));
    await waitFor('the 3 past the total closed', () => extra.every((c) => c.closedAfter() !== undefined), {
      timeoutMs: 5_000,
    });
    t.ok(Math.max(...extra.map((c) => c.closedAfter()!)) < 2_000, 'each at once, whatever its IP');
    t.equal((await connectionStats(sy)).refused.total, 3, '/status counts 3 refused for the total');
    t.same(
      metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_connections', {}),
      [TOTAL],
      'switchyard_connections reads the total',
    );
    for (const c of held.slice(0, 5)) c.socket.destroy();
    await waitFor('the closes counted', async () => (await connectionStats(sy)).open === TOTAL - 5);
    const other = await callFrom(sy, '127.0.0.6');
    t.equal(other.text, '{"jsonrpc":"2.0","id":1,"result":"0xba"}', 'another client is served once places are free');
  },
);

t.test('a trusted proxy counts only in the total', async (t) => {
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'a', url: anvil.url }],
    server: { maxConnections: 1000, maxConnectionsPerIp: 5, trustedProxies: ['127.0.0.9'] },
  });
  const port = sy.app.ports.http;
  const held = await Promise.all(Array.from({ length: 12 }, () => dial(port, '127.0.0.9')));
  await waitFor('12 connections counted', async () => (await connectionStats(sy)).open === 12);
  t.ok(
    held.every((c) => c.closedAfter() === undefined),
    '12 connections from the balancer, over the per-IP cap of 5, all stay open',
  );
  t.equal((await connectionStats(sy)).refused.ip, 0, 'none refused');
});
