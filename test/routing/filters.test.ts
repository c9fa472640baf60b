/**
 * Filters across two Switchyard processes with the same upstream names (SPEC 4.4): a filter made
 * through one is polled through the other and its changes arrive, because the id itself says which
 * node holds it. Unknown ids and filters whose node was killed are -32000 "filter not found";
 * eth_uninstallFilter works from either replica.
 */
import t from 'tap';
import { Wallet, Transaction, id as topicOf } from 'ethers';
import { startDevnet } from '../../src/devnet/index.js';
import { hash } from '../../src/routing/select.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { DEV_KEY } from '../helpers/anvil.js';
import { get, post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';
import { pingBytecode } from '../clients/fixtures/contract.js';

let nextId = 1;
async function rpc(
  url: string,
  method: string,
  params: unknown[] = [],
): Promise<{ result?: any; error?: { code: number; message: string } }> {
  return (await post(url, { jsonrpc: '2.0', id: nextId++, method, params })).json();
}

t.test('filters made through one replica are polled through another', async (t) => {
  const devnet = await startDevnet({ nodes: 3, chainId: 186, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  await devnet.mine(2);
  const upstreams = devnet.nodes().map((n) => ({ name: n.name, url: n.url }));
  // Separate processes in production; here two apps with nothing shared but the config.
  const a = await startSwitchyard(t, { upstreams });
  const b = await startSwitchyard(t, { upstreams });
  const nodeUrl = devnet.nodes()[0]!.url;
  /** Which devnet node a Switchyard filter id names (its first 8 hex digits). */
  const holder = (fid: string): number =>
    devnet.nodes().findIndex((n) => hash(n.name).toString(16).padStart(8, '0') === fid.slice(2, 10));
  const headOf = async (url: string): Promise<number> => Number((await rpc(url, 'eth_blockNumber')).result);
  const waitHead = (url: string, n: number): Promise<boolean> =>
    waitFor(`head ${n} at ${url}`, async () => (await headOf(url)) >= n);

  await t.test('block filter: new block hashes arrive through the other replica', async (t) => {
    const made = await rpc(a.url, 'eth_newBlockFilter');
    const fid = made.result as string;
    t.match(fid, /^0x[0-9a-f]{9,}$/, `filter id ${fid}`);
    t.ok(holder(fid) >= 0, `the id names node-${holder(fid)}`);
    const head = await devnet.mine(3);
    const hashes: string[] = [];
    for (let n = head - 2; n <= head; n++)
      hashes.push((await rpc(nodeUrl, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false])).result.hash);
    const changes = await rpc(b.url, 'eth_getFilterChanges', [fid]);
    t.same(changes.result, hashes, 'the three new block hashes, in order, polled through replica b');
    t.same(
      (await rpc(a.url, 'eth_getFilterChanges', [fid])).result,
      [],
      'nothing new through replica a: same node-side filter',
    );
    await devnet.mine(1);
    const one = (await rpc(a.url, 'eth_getFilterChanges', [fid])).result as string[];
    t.equal(one.length, 1, 'the next block through replica a');
    t.equal((await rpc(b.url, 'eth_uninstallFilter', [fid])).result, true, 'uninstalled through replica b');
    const gone = await rpc(a.url, 'eth_getFilterChanges', [fid]);
    t.same(
      gone.error && { code: gone.error.code, message: gone.error.message },
      { code: -32000, message: 'filter not found' },
      'then filter not found',
    );
    t.equal((await rpc(a.url, 'eth_uninstallFilter', [fid])).result, false, 'a second uninstall answers false');
  });

  await t.test('log filter: logs arrive through the other replica, eth_getFilterLogs too', async (t) => {
    const wallet = new Wallet(DEV_KEY);
    let nonce = Number((await rpc(a.url, 'eth_getTransactionCount', [wallet.address, 'pending'])).result);
    const send = async (tx: { to?: string; data: string }): Promise<string> => {
      const raw = await wallet.signTransaction({
        ...tx,
        nonce: nonce++,
        gasLimit: 200_000n,
        maxFeePerGas: 10_000_000_000n,
        maxPriorityFeePerGas: 1n,
        chainId: 186n,
        type: 2,
      });
      const r = await rpc(a.url, 'eth_sendRawTransaction', [raw]);
      t.equal(r.result, Transaction.from(raw).hash, 'transaction accepted');
      return r.result as string;
    };
    const deployHash = await send({ data: pingBytecode() });
    const h1 = await devnet.mine(1);
    await waitHead(a.url, h1);
    const receipt = (await rpc(a.url, 'eth_getTransactionReceipt', [deployHash])).result;
    const address = receipt.contractAddress as string;
    t.ok(address, `contract at ${address}`);

    const made = await rpc(a.url, 'eth_newFilter', [{ address, topics: [topicOf('Ping(uint256)')] }]);
    const fid = made.result as string;
    t.ok(holder(fid) >= 0, `log filter ${fid} on node-${holder(fid)}`);
    await send({ to: address, data: `0x${'00'.repeat(4)}${(7).toString(16).padStart(64, '0')}` });
    await send({ to: address, data: `0x${'00'.repeat(4)}${(42).toString(16).padStart(64, '0')}` });
    await devnet.mine(1);
    const changes = (await rpc(b.url, 'eth_getFilterChanges', [fid])).result as { data: string; address: string }[];
    t.same(
      changes.map((l) => BigInt(l.data)),
      [7n, 42n],
      'both Ping logs through replica b',
    );
    t.same((await rpc(b.url, 'eth_getFilterChanges', [fid])).result, [], 'and consumed');
    const all = (await rpc(a.url, 'eth_getFilterLogs', [fid])).result as { data: string }[];
    t.same(
      all.map((l) => BigInt(l.data)),
      [7n, 42n],
      'eth_getFilterLogs through replica a',
    );
    t.equal((await rpc(a.url, 'eth_uninstallFilter', [fid])).result, true, 'uninstalled');
  });

  await t.test('unknown ids: -32000 filter not found', async (t) => {
    const NOT_FOUND = { code: -32000, message: 'filter not found' };
    const tagged = `0x${hash('node-1').toString(16).padStart(8, '0')}${'ab'.repeat(16)}`;
    for (const fid of ['0x0123456789abcdef0123', '0xdeadbeef', 'not-an-id', tagged, `0x${'f'.repeat(8)}01`]) {
      for (const method of ['eth_getFilterChanges', 'eth_getFilterLogs']) {
        const r = await rpc(b.url, method, [fid]);
        t.same(r.error && { code: r.error.code, message: r.error.message }, NOT_FOUND, `${method}(${fid})`);
      }
    }
    const nonString = await rpc(b.url, 'eth_getFilterChanges', [12345]);
    t.equal(nonString.error?.code, -32000, 'a non-string id too');
    const none = await rpc(b.url, 'eth_getFilterChanges', []);
    t.ok(none.error, `no id at all is an error (${JSON.stringify(none.error)})`);
  });

  await t.test('filter whose node is killed: -32000 filter not found', async (t) => {
    // Make filters until one lands on each of two different nodes; kill one holder.
    const byNode = new Map<number, string>();
    for (let i = 0; i < 60 && byNode.size < 2; i++) {
      const fid = (await rpc(i % 2 === 0 ? a.url : b.url, 'eth_newBlockFilter')).result as string;
      if (!byNode.has(holder(fid))) byNode.set(holder(fid), fid);
    }
    t.equal(byNode.size, 2, `filters on two nodes: ${[...byNode.keys()].map((i) => `node-${i}`).join(', ')}`);
    const [[victim, doomed], [survivor, kept]] = [...byNode.entries()] as [[number, string], [number, string]];
    await devnet.kill(victim);
    for (const sy of [a, b]) {
      await waitFor(`node-${victim} down at a replica`, async () => {
        const s = (await get(`${sy.adminUrl}/status`)).json() as { upstreams: { name: string; state: string }[] };
        return s.upstreams.find((u) => u.name === `node-${victim}`)!.state === 'down';
      });
    }
    for (const sy of [a, b]) {
      const r = await rpc(sy.url, 'eth_getFilterChanges', [doomed]);
      t.same(
        r.error && { code: r.error.code, message: r.error.message },
        { code: -32000, message: 'filter not found' },
        `killed node-${victim}'s filter`,
      );
      const u = await rpc(sy.url, 'eth_uninstallFilter', [doomed]);
      t.equal(u.error?.code, -32000, 'uninstall of it too');
    }
    const survivorHead = await devnet.mine(1);
    await waitHead(b.url, survivorHead);
    const live = await rpc(b.url, 'eth_getFilterChanges', [kept]);
    t.ok(
      Array.isArray(live.result) && live.result.length >= 1,
      `node-${survivor}'s filter still works (${JSON.stringify(live.result ?? live.error)})`,
    );
  });
});
