/**
 * A subscription's notifications wait for the answer of the very frame that made it: an earlier
 * frame answered first does not release them. A real anvil behind a fake node that holds chosen
 * eth_calls until the test lets them go.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startFakeNode, type FakeAnswer } from '../helpers/fake-node.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { call, get } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket } from '../helpers/ws.js';

t.test("a newHeads notification never arrives before the answer that gave the subscription's id", async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  // eth_calls by their data: held until the test releases them; everything else goes to anvil.
  const gates = new Map<string, { reached: boolean; open: () => void; opened: Promise<void> }>();
  for (const data of ['0x01', '0x02']) {
    let open: () => void = () => undefined;
    const opened = new Promise<void>((r) => (open = r));
    gates.set(data, { reached: false, open, opened });
  }
  const forward = async (method: string, params: unknown[]): Promise<FakeAnswer> => {
    const r = await call(anvil.url, method, params);
    return 'error' in r ? { error: r.error } : { result: r.result };
  };
  const node = await startFakeNode(t, (method, params) => {
    const gate = method === 'eth_call' ? gates.get((params[0] as { data: string }).data) : undefined;
    if (gate === undefined) return { defer: () => forward(method, params) };
    gate.reached = true;
    return { defer: async () => (await gate.opened, { result: '0x' }) };
  });
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'gated', url: node.url, maxBatchSize: 1 }] });
  const ws = await openSocket(t, sy.url.replace('http', 'ws'));
  const order: string[] = [];
  ws.socket.on('message', (data) => {
    const m = JSON.parse(data.toString());
    order.push(
      Array.isArray(m) ? 'frame 2 answer' : m.method === 'eth_subscription' ? 'notification' : `answer ${m.id}`,
    );
  });
  const ethCall = (id: number, data: string): object => ({
    jsonrpc: '2.0',
    id,
    method: 'eth_call',
    params: [{ to: '0x0000000000000000000000000000000000000001', data }, 'latest'],
  });

  ws.socket.send(JSON.stringify(ethCall(1, '0x01')));
  await waitFor('frame 1 at the node', () => gates.get('0x01')!.reached);
  ws.socket.send(
    JSON.stringify([{ jsonrpc: '2.0', id: 2, method: 'eth_subscribe', params: ['newHeads'] }, ethCall(3, '0x02')]),
  );
  // The batch's eth_call reached the node: its eth_subscribe has been worked on.
  await waitFor('frame 2 at the node', () => gates.get('0x02')!.reached);

  gates.get('0x01')!.open();
  await waitFor('frame 1 answered', () => order.includes('answer 1'));
  await call(anvil.url, 'evm_mine', []);
  const notified = async (): Promise<number> =>
    metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_ws_notifications_total', {
      kind: 'newHeads',
    })[0] ?? 0;
  await waitFor('the new head notified to the subscription', async () => (await notified()) >= 1);

  gates.get('0x02')!.open();
  await waitFor(
    'frame 2 answered and the head delivered',
    () => order.includes('frame 2 answer') && order.includes('notification'),
  );
  t.same(
    order,
    ['answer 1', 'frame 2 answer', 'notification'],
    'the notification comes after the answer carrying its id',
  );
});
