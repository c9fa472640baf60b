/**
 * ConnectionCaps' choice of the connection that makes room (src/limits/connections.ts), on real
 * sockets with the caps driven directly: the longest idle goes first; one that read a byte since
 * it went idle is busy; one still writing its answer to a client that does not read is passed
 * over for the next; a cap lowered below the connections open closes nothing; with none idle the
 * new connection is refused.
 */
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { ConnectionCaps, type ConnectionLimits } from '../../src/limits/connections.js';
import { Metrics } from '../../src/metrics/registry.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { waitFor } from '../helpers/wait.js';

interface Rig {
  caps: ConnectionCaps;
  limits: ConnectionLimits;
  metrics: Metrics;
  /** Server-side sockets the caps admitted, in order. */
  admitted: Socket[];
  /** Opens a client connection; resolves with it and its server side (null when refused). */
  dial: () => Promise<{ client: Socket; server: Socket | null }>;
}

async function rig(t: Test, maxConnections: number): Promise<Rig> {
  const limits: ConnectionLimits = { maxConnections, maxConnectionsPerIp: 1_000 };
  const metrics = new Metrics({ processMetrics: false });
  const caps = new ConnectionCaps(limits, { address: (r) => r ?? '', trusted: () => false }, metrics);
  const admitted: Socket[] = [];
  const clients: Socket[] = [];
  const accepted: ((s: Socket | null) => void)[] = [];
  const server: Server = createServer((socket) => {
    socket.on('error', () => undefined);
    const ok = caps.admit(socket);
    if (ok) admitted.push(socket);
    accepted.shift()?.(ok ? socket : null);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(async () => {
    for (const c of clients) c.destroy();
    for (const s of admitted) s.destroy();
    await new Promise((r) => server.close(r));
  });
  const port = (server.address() as AddressInfo).port;
  return {
    caps,
    limits,
    metrics,
    admitted,
    dial: async () => {
      const serverSide = new Promise<Socket | null>((r) => accepted.push(r));
      const client = connect({ port, host: '127.0.0.1' });
      client.on('error', () => undefined);
      clients.push(client);
      await once(client, 'connect');
      return { client, server: await serverSide };
    },
  };
}

const evicted = async (m: Metrics): Promise<number> =>
  metricSamples(await m.registry.metrics(), 'switchyard_connections_evicted_total', { reason: 'total' })[0] ?? 0;

t.test('the longest idle goes first; one that read a byte since it went idle is busy', async (t) => {
  const r = await rig(t, 3);
  const a = await r.dial();
  const b = await r.dial();
  const c = await r.dial();
  for (const x of [a, b, c]) r.caps.idle(x.server!);
  // a starts a request: the byte read makes it busy, though it went idle first.
  a.client.write('P');
  await once(a.server!, 'data');
  const d = await r.dial();
  t.ok(d.server !== null, 'a fourth connection is admitted');
  t.ok(b.server!.destroyed && !a.server!.destroyed && !c.server!.destroyed, 'b, the longest idle not busy, was closed');
  t.equal(await evicted(r.metrics), 1, 'counted');
  t.equal(r.caps.stats().open, 3, 'still 3 open');
});

t.test('one still writing its answer to a client that does not read is passed over', async (t) => {
  const r = await rig(t, 2);
  const slow = await r.dial();
  const next = await r.dial();
  slow.client.pause();
  // More than the kernel's buffers hold: the rest waits in the socket's own buffer.
  slow.server!.write(Buffer.alloc(32 * 1024 * 1024));
  await waitFor('the answer is still being written', () => slow.server!.writableLength > 0);
  r.caps.idle(slow.server!);
  r.caps.idle(next.server!);
  const newcomer = await r.dial();
  t.ok(newcomer.server !== null, 'the newcomer is admitted');
  t.ok(next.server!.destroyed, 'the next idle was closed');
  t.notOk(slow.server!.destroyed, 'the one still writing was not');
  // Now nothing else is idle: the one still writing is passed over again, and a newcomer refused.
  const refused = await r.dial();
  t.equal(refused.server, null, 'with only a connection still writing, a newcomer is refused');
  t.notOk(slow.server!.destroyed, 'and the one still writing stays');
  t.same(r.caps.stats().refused, { total: 1, ip: 0 });
});

t.test('a cap lowered below the connections open closes nothing; none idle: refused', async (t) => {
  const r = await rig(t, 3);
  const open = [await r.dial(), await r.dial(), await r.dial()];
  for (const x of open) r.caps.idle(x.server!);
  r.limits.maxConnections = 1;
  const over = await r.dial();
  t.equal(over.server, null, 'over the lowered cap, a newcomer is refused');
  t.ok(
    open.every((x) => !x.server!.destroyed),
    'no idle connection was closed: one close would not make room',
  );
  r.limits.maxConnections = 4;
  const fourth = await r.dial();
  t.ok(fourth.server !== null, 'a place free: admitted');
  // The fourth never sent a request, so it is not idle; the other three are busy from here on.
  for (const x of open) {
    x.client.write('P');
    await once(x.server!, 'data');
  }
  const fifth = await r.dial();
  t.equal(fifth.server, null, 'with none idle, refused as before');
  t.equal(await evicted(r.metrics), 0, 'nothing evicted');
});
