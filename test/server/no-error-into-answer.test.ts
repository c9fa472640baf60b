/**
 * An error answer is never written into an answer already being sent (SPEC 6, issue 42 item 5): on
 * node:http's path (server.plainLane false), a malformed request pipelined behind a 20 MB answer
 * still being written makes node's parser report a client error while that answer is on the
 * socket. An `HTTP/1.1 400` written at that moment would land in the middle of the answer's body,
 * and closing at once (Node's own default handler) cuts a valid call's answer short: the answer
 * goes out whole, then the connection closes. The client stops reading once the answer's head is
 * in (so the answer stays in flight), sends the malformed request, then reads to the end.
 * Asserted: the answer's body is exactly its Content-Length of the node's result, and whatever
 * follows it (if anything) starts as an answer of its own. The node is a fake one: a real anvil
 * does not answer an eth_call with 20 MB.
 */
import { connect, type Socket } from 'node:net';
import t from 'tap';
import { startFakeNode } from '../helpers/fake-node.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const RESULT = `0x${'ab'.repeat(10 * 1024 * 1024)}`;
const CALL = JSON.stringify({
  jsonrpc: '2.0',
  id: 7,
  method: 'eth_call',
  params: [{ to: `0x${'11'.repeat(20)}` }, 'latest'],
});

t.test('a malformed request behind an answer being written gets no 400 inside that answer', async (t) => {
  const node = await startFakeNode(t, (method) => (method === 'eth_call' ? { result: RESULT } : undefined));
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'fake', url: node.url }],
    server: { plainLane: false },
  });
  const port = Number(new URL(sy.url).port);

  for (let round = 0; round < 3; round++) {
    const socket: Socket = connect(port, '127.0.0.1');
    t.teardown(() => socket.destroy());
    const chunks: Buffer[] = [];
    let closed = false;
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('close', () => (closed = true));
    socket.on('error', () => undefined);
    socket.write(
      `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(CALL)}\r\n\r\n${CALL}`,
    );
    await waitFor('the answer head', () => Buffer.concat(chunks).includes('\r\n\r\n'), { timeoutMs: 30_000 });
    // Stop reading: the server's writes fill the socket buffers, so the answer stays in flight.
    socket.pause();
    socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header Line\r\n\r\n');
    socket.resume();
    await waitFor('the connection closed', () => closed, { timeoutMs: 60_000 });

    const all = Buffer.concat(chunks);
    const headEnd = all.indexOf('\r\n\r\n');
    const head = all.subarray(0, headEnd).toString('latin1');
    t.match(head, /^HTTP\/1\.1 200 /, `round ${round}: the call's answer comes first`);
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
    const body = all.subarray(headEnd + 4, headEnd + 4 + length);
    t.equal(body.length, length, `round ${round}: the whole body arrived (${length} bytes)`);
    const parsed = JSON.parse(body.toString('utf8')) as { id: number; result: string };
    t.equal(parsed.id, 7, `round ${round}: its id`);
    t.ok(parsed.result === RESULT, `round ${round}: the node's result, byte for byte`);
    const after = all.subarray(headEnd + 4 + length).toString('latin1');
    t.ok(after === '' || after.startsWith('HTTP/1.1 '), `round ${round}: nothing but an answer of its own follows`);
  }
});
