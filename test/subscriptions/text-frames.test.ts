/**
 * Every frame Switchyard sends over a WebSocket is a text frame: answers and notifications alike.
 * A client that follows the WebSocket API (a browser wallet, Node's own WebSocket, which viem uses
 * on Node 22) hands a binary frame over as a Blob, which no JSON-RPC client reads: viem's
 * watchBlocks saw "[object Blob]" where notifications were written as binary frames.
 */
import t from 'tap';
import WebSocket from 'ws';
import { startStack } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

t.test('answers and newHeads notifications are text frames', async (t) => {
  const { sy, devnet } = await startStack(t, { config: { server: { wsPort: 0 } } });
  const ws = new WebSocket(`ws://127.0.0.1:${sy.app.ports.ws}`);
  t.teardown(() => ws.terminate());
  const frames: { binary: boolean; text: string }[] = [];
  ws.on('message', (data, isBinary) => frames.push({ binary: isBinary, text: String(data) }));
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }));
  await waitFor('the subscription id', () => frames.length > 0);
  await waitFor('two notifications', async () => {
    await devnet.mine(1);
    return frames.filter((f) => f.text.includes('"eth_subscription"')).length >= 2;
  });
  const answer = frames[0]!;
  t.equal(answer.binary, false, 'the answer to eth_subscribe is a text frame');
  t.match(answer.text, /"id":1,"result":"0x/, 'and it is that answer');
  const notes = frames.filter((f) => f.text.includes('"eth_subscription"')).slice(0, 2);
  t.same(
    notes.map((f) => f.binary),
    [false, false],
    'notifications are text frames',
  );
});
