/**
 * newPendingTransactions relayed from the nodes' own ws subscriptions: each hash once although
 * every node with a `ws` address reports it, and still relayed after the node the transaction was
 * sent to is killed (the feed goes on from the others). A feed that stays open but silent while
 * another delivers is replaced (a fake ws node: no real node stays open and silent on demand).
 */
import t from 'tap';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { startDevnet } from '../../src/devnet/index.js';
import { DEV_ADDRESS } from '../helpers/anvil.js';
import { call } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket } from '../helpers/ws.js';

t.test('pending transactions: once each, through a node failure', async (t) => {
  const devnet = await startDevnet({ nodes: 2, chainId: 186, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  const sy = await startSwitchyard(t, {
    upstreams: devnet.nodes().map((n) => ({ name: n.name, url: n.url, ws: n.wsUrl })),
  });
  const ws = await openSocket(t, sy.url.replace('http', 'ws'));
  const sub = (await ws.ask('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newPendingTransactions"]}'))
    .result as string;
  const hashes = (): string[] =>
    ws.messages.filter((m) => m.params?.subscription === sub).map((m) => m.params.result as string);
  const send = async (url: string): Promise<string> =>
    (await call(url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: DEV_ADDRESS, value: '0x1' }])).result as string;
  // The upstream feeds open when the first client subscribes: send until one is relayed.
  const sent: string[] = [];
  await waitFor('a pending hash relayed', async () => {
    sent.push(await send(devnet.nodes()[0]!.url));
    return hashes().length > 0;
  });
  for (let i = 0; i < 3; i++) sent.push(await send(devnet.nodes()[0]!.url));
  await waitFor('the last hash relayed', () => hashes().includes(sent.at(-1)!));
  await devnet.kill(0);
  const after = await send(devnet.nodes()[1]!.url);
  await waitFor('a hash sent after the kill relayed', () => hashes().includes(after));
  const got = hashes();
  t.equal(new Set(got).size, got.length, `${got.length} hashes, none twice`);
  t.ok(
    sent.slice(-3).every((h) => got.includes(h)),
    'every hash sent once the feed was up is relayed',
  );
});

t.test('a pending feed that stays open but silent while another delivers is replaced', async (t) => {
  const devnet = await startDevnet({ nodes: 1, chainId: 186, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  const node = devnet.nodes()[0]!;
  // A node whose ws feed accepts the subscription and then says nothing, with the socket open.
  const silent = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await once(silent, 'listening');
  t.teardown(() => new Promise<void>((resolve) => silent.close(() => resolve())));
  // Counted: subscriptions to pending transactions (the head tracker opens its own newHeads socket).
  let connections = 0;
  silent.on('connection', (socket) => {
    socket.on('message', (data) => {
      if (String(data).includes('newPendingTransactions')) connections++;
      socket.send('{"jsonrpc":"2.0","id":1,"result":"0x1"}');
    });
  });
  const silentUrl = `ws://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'talks', url: node.url, ws: node.wsUrl },
      { name: 'silent', url: node.url, ws: silentUrl },
    ],
  });
  const ws = await openSocket(t, sy.url.replace('http', 'ws'));
  const sub = (await ws.ask('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newPendingTransactions"]}'))
    .result as string;
  const relayed = (): number => ws.messages.filter((m) => m.params?.subscription === sub).length;
  await waitFor('the silent feed connected', () => connections >= 1);
  // Keep the talking node delivering until the silent feed has been dropped and opened again.
  await waitFor(
    'the silent feed replaced',
    async () => {
      await call(node.url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: DEV_ADDRESS, value: '0x1' }]);
      return connections >= 2;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
  t.ok(relayed() > 0, `hashes kept flowing from the other node (${relayed()})`);
  t.equal(connections, 2, 'the silent feed was reconnected once');
});
