/**
 * HEAD is answered like GET and, like GET and OPTIONS, is no call: refused (an unknown path, or
 * during the drain) it adds nothing to switchyard_calls_total, while a refused POST counts as one.
 */
import { connect, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { startFakeNode, startHoldingNode } from '../helpers/fake-node.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

async function refused(adminUrl: string, reason: string): Promise<number> {
  return (
    metricSamples((await get(`${adminUrl}/metrics`)).text, 'switchyard_calls_total', {
      method: 'invalid',
      reason,
    })[0] ?? 0
  );
}

t.test('HEAD on an unknown path: 404, no call counted (a POST there counts one)', async (t) => {
  const node = await startFakeNode(t, () => undefined);
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'a', url: node.url }] });
  const before = await refused(sy.adminUrl, 'NOT_FOUND');
  for (const method of ['HEAD', 'GET', 'OPTIONS'] as const) {
    const res = await request(`${sy.url}/nope`, { method });
    await res.body.text();
    if (method !== 'OPTIONS') t.equal(res.statusCode, 404, method);
  }
  t.equal(await refused(sy.adminUrl, 'NOT_FOUND'), before, 'HEAD, GET and OPTIONS are no calls');
  t.equal((await post(`${sy.url}/nope`, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}')).status, 404);
  t.equal(await refused(sy.adminUrl, 'NOT_FOUND'), before + 1, 'the POST is one refused call');
});

/** A raw connection to url and the text it has received so far. */
function rawConnection(t: Test, url: string): Promise<{ socket: Socket; seen: () => string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let seen = '';
    const socket = connect(Number(port), hostname, () => resolve({ socket, seen: () => seen }));
    socket.on('data', (d: Buffer) => (seen += d.toString()));
    socket.on('error', reject);
    t.teardown(() => socket.destroy());
  });
}

t.test('HEAD during the drain: no call counted (a POST then counts one)', async (t) => {
  // eth_getBalance is held until release(): the call spans the drain.
  const { node, held, release } = await startHoldingNode(t);
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'slow', url: node.url }],
    server: { shutdownDelayMs: 0, shutdownGraceMs: 20_000 },
  });
  // A call in flight keeps its connection open through the drain: requests pipelined behind it
  // reach the front while it refuses with SHUTTING_DOWN. Its body is chunked, so node:http reads
  // this connection from its first request on: the plain lane would work on what is pipelined
  // behind its call only once the call is answered (http-lane.ts).
  const conn = await rawConnection(t, sy.url);
  conn.socket.write(
    chunkedPost(
      '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x0000000000000000000000000000000000000000","latest"]}',
    ),
  );
  await waitFor('the slow call reached the node', () => held() === 1);
  const before = await refused(sy.adminUrl, 'SHUTTING_DOWN');

  const drained = sy.app.drain({ delay: false });
  // One write, so both are parsed and handled in one turn: once the POST is counted, so is the HEAD if it counts.
  conn.socket.write(
    `HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n${rawPost('{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}')}`,
  );
  await waitFor('the pipelined POST refused', async () => (await refused(sy.adminUrl, 'SHUTTING_DOWN')) > before);
  t.equal(await refused(sy.adminUrl, 'SHUTTING_DOWN'), before + 1, 'the POST is one refused call, the HEAD none');

  release();
  await waitFor('the call in flight answered', () => /^HTTP\/1\.1 200 /.test(conn.seen()));
  await drained;
});

function chunkedPost(body: string): string {
  return `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
}

function rawPost(body: string): string {
  return `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
