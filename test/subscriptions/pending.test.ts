/**
 * newPendingTransactions relayed from the nodes' own ws subscriptions: each hash once although
 * every node with a `ws` address reports it, and still relayed after the node the transaction was
 * sent to is killed (the feed goes on from the others).
 */
import t from 'tap';
import { startDevnet } from '../../src/devnet/index.js';
import { DEV_ADDRESS } from '../helpers/anvil.js';
import { call } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket } from '../helpers/ws.js';

t.test('pending transactions: once each, through a node failure', async (t) => {
  const devnet = await startDevnet({ nodes: 2, chainId: 186, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  const sy = await startSwitchyard(t, { upstreams: devnet.nodes().map((n) => ({ name: n.name, url: n.url, ws: n.wsUrl })) });
  const ws = await openSocket(t, sy.url.replace('http', 'ws'));
  const sub = (await ws.ask('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newPendingTransactions"]}')).result as string;
  const hashes = (): string[] => ws.messages.filter((m) => m.params?.subscription === sub).map((m) => m.params.result as string);
  const send = async (url: string): Promise<string> => (await call(url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: DEV_ADDRESS, value: '0x1' }])).result as string;
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
