/**
 * Real WebSocket clients through Switchyard: viem `webSocket()` watchBlocks gets consecutive
 * numbers and watchContractEvent an event exactly once; ethers `WebSocketProvider` the same through
 * on('block') and a contract event; plain calls and batches over the socket keep ids and order;
 * eth_subscribe over HTTP says it needs a WebSocket; eth_unsubscribe answers true then false.
 */
import t from 'tap';
import WebSocket from 'ws';
import { createPublicClient, parseAbi, webSocket } from 'viem';
import { Contract, ContractFactory, JsonRpcProvider, Wallet, WebSocketProvider } from 'ethers';
import { startStack } from '../helpers/stack.js';
import { DEV_KEY } from '../helpers/anvil.js';
import { call, get } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';
import { PING_ABI, pingBytecode } from '../clients/fixtures/contract.js';
import { openSocket } from '../helpers/ws.js';

t.test('viem and ethers over WebSocket', async (t) => {
  const { sy, devnet } = await startStack(t, { config: { server: { wsPort: 0 } } });
  const wsUrl = `ws://127.0.0.1:${sy.app.ports.ws}`;
  await devnet.mine(2);

  const viem = createPublicClient({ transport: webSocket(wsUrl) });
  t.teardown(() => viem.transport.getRpcClient().then((c) => c.close()));
  const ethersWs = new WebSocketProvider(wsUrl, 186, { staticNetwork: true });
  t.teardown(() => ethersWs.destroy());

  const viemBlocks: number[] = [];
  const unwatch = viem.watchBlocks({ onBlock: (b) => viemBlocks.push(Number(b.number)), emitOnBegin: false });
  t.teardown(unwatch);
  const ethersBlocks: number[] = [];
  await ethersWs.on('block', (n: number) => ethersBlocks.push(n));
  // Both subscriptions are live once a mined block reaches them.
  await waitFor('first heads', async () => {
    await devnet.mine(1);
    return viemBlocks.length > 0 && ethersBlocks.length > 0;
  });
  for (let i = 0; i < 5; i++) await devnet.mine(1);
  const head = await devnet.mine(1);
  await waitFor('heads up to the last mined block', () => viemBlocks.at(-1) === head && ethersBlocks.at(-1) === head);
  const consecutive = (xs: number[]): boolean => xs.every((n, i) => i === 0 || n === xs[i - 1]! + 1);
  t.ok(consecutive(viemBlocks) && viemBlocks.length >= 6, `viem watchBlocks: ${viemBlocks.join(',')}`);
  t.ok(consecutive(ethersBlocks) && ethersBlocks.length >= 6, `ethers on('block'): ${ethersBlocks.join(',')}`);

  const wallet = new Wallet(DEV_KEY, new JsonRpcProvider(sy.url, 186, { staticNetwork: true }));
  // The devnet mines only on demand here: each transaction is sent, then a block is mined.
  const deploying = await new ContractFactory(PING_ABI, pingBytecode(), wallet).deploy({ nonce: 0 });
  await devnet.mine(1);
  const contract = (await deploying.waitForDeployment()) as Contract;
  const address = (await contract.getAddress()) as `0x${string}`;
  const viemEvents: bigint[] = [];
  const unwatchEvents = viem.watchContractEvent({
    address,
    abi: parseAbi(['event Ping(uint256 value)']),
    eventName: 'Ping',
    onLogs: (logs) => logs.forEach((l) => viemEvents.push(l.args.value!)),
  });
  t.teardown(unwatchEvents);
  const ethersEvents: bigint[] = [];
  const watched = new Contract(address, PING_ABI, ethersWs);
  await watched.on('Ping', (v: bigint) => ethersEvents.push(v));
  // ethers and viem subscribe asynchronously: wait for both logs subscriptions on the server.
  await waitFor(
    'logs subscriptions',
    async () => ((await get(`${sy.adminUrl}/status`)).json().websocket.subscriptions as number) >= 4,
  );
  const ping = await contract.getFunction('ping')(7n, { nonce: 1 });
  await devnet.mine(1);
  await ping.wait(1, 60_000);
  await waitFor('the event on both clients', () => viemEvents.length > 0 && ethersEvents.length > 0);
  await devnet.mine(3);
  const last = await devnet.mine(1);
  await waitFor('heads after the event', () => viemBlocks.at(-1) === last && ethersBlocks.at(-1) === last);
  t.same(viemEvents, [7n], 'viem watchContractEvent: exactly once');
  t.same(ethersEvents, [7n], 'ethers contract event: exactly once');
});

t.test('calls, batches and subscription ids over a raw socket', async (t) => {
  const { sy, devnet } = await startStack(t, { nodes: 2 });
  await devnet.mine(1);
  // No wsPort here: WebSocket as an upgrade on the HTTP port.
  const ws = await openSocket(t, sy.url.replace('http', 'ws'));
  t.same(await ws.ask('{"jsonrpc":"2.0","id":"a","method":"eth_chainId","params":[]}'), {
    jsonrpc: '2.0',
    id: 'a',
    result: '0xba',
  });
  const batch = (await ws.ask(
    '[{"jsonrpc":"2.0","id":2,"method":"eth_chainId"},{"jsonrpc":"2.0","id":1,"method":"nope_x","params":[]},{"jsonrpc":"2.0","method":"eth_chainId"},{"id":3}]',
  )) as { id: unknown }[];
  t.same(
    batch.map((r) => r.id),
    [2, 1, 3],
    'batch answers in request order (ids kept), notification left out',
  );
  t.equal((await ws.ask('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["nope"]}')).error.code, -32602);
  const sub = (await ws.ask('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads",{}]}'))
    .result as string;
  t.match(sub, /^0x[0-9a-f]{32}$/);
  const mined = await devnet.mine(1);
  const note = await ws.next((m) => m.method === 'eth_subscription');
  t.equal(note.params.subscription, sub);
  t.equal(Number(note.params.result.number), mined, 'the head notification is the mined block');
  t.notOk('transactions' in note.params.result, 'a header, as geth sends it');
  // Announced only when routable: the block it names can be read at once over HTTP.
  t.equal(
    (await call(sy.url, 'eth_getBlockByNumber', [note.params.result.number, false])).result.hash,
    note.params.result.hash,
  );
  t.equal((await ws.ask(`{"jsonrpc":"2.0","id":5,"method":"eth_unsubscribe","params":["${sub}"]}`)).result, true);
  t.equal((await ws.ask(`{"jsonrpc":"2.0","id":6,"method":"eth_unsubscribe","params":["${sub}"]}`)).result, false);

  const overHttp = await call(sy.url, 'eth_subscribe', ['newHeads']);
  t.equal(overHttp.error.code, -32601);
  t.match(overHttp.error.message, /WebSocket/);
  t.ok(ws.socket.readyState === WebSocket.OPEN);
});
