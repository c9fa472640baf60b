/**
 * A reorg on the devnet, made by hand on every node (the devnet has no reorg control): the last
 * blocks are rolled back and different ones mined in their place, identical on every node
 * (explicit timestamps and base fees, as the devnet's own replication does). Switchyard's block
 * reads at the replaced heights return the new hashes, its head follows the new chain, and
 * switchyard_reorgs_total counts it. Twice: a longer new chain, then one of the same height.
 */
import t from 'tap';
import { startStack } from '../helpers/stack.js';
import { call, get, post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';
import { nextBaseFee, recordFromHeader, type RpcBlockHeader } from '../../src/devnet/chain.js';

const hex = (n: number | bigint): string => `0x${n.toString(16)}`;

async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const r = await call(url, method, params);
  if (r.error) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result as T;
}

t.test('heads and block reads follow a reorg', async (t) => {
  // blockTimeMs 0: the devnet mines only when told, so it never touches the hand-made chain.
  const { sy, devnet } = await startStack(t, { nodes: 3, blockTimeMs: 0 });
  const urls = devnet.nodes().map((n) => n.url);
  await devnet.mine(10);

  const syBlock = async (n: number | 'latest'): Promise<RpcBlockHeader | null> => {
    const r = (
      await post(sy.url, {
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_getBlockByNumber',
        params: [n === 'latest' ? n : hex(n), false],
      })
    ).json();
    return r.result as RpcBlockHeader | null;
  };
  const syHead = async (): Promise<number> =>
    Number((await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' })).json().result);
  const reorgs = async (): Promise<number> =>
    Number(/^switchyard_reorgs_total (\d+)/m.exec((await get(`${sy.adminUrl}/metrics`)).text)?.[1] ?? NaN);
  const nodeHashes = async (url: string, from: number, to: number): Promise<string[]> => {
    const out: string[] = [];
    for (let n = from; n <= to; n++)
      out.push((await rpc<RpcBlockHeader>(url, 'eth_getBlockByNumber', [hex(n), false])).hash);
    return out;
  };

  /**
   * Rolls every node back `depth` blocks and mines `count` new ones on each, identical across
   * nodes and different from the replaced ones (timestamps shifted by `shift` seconds).
   */
  const reorg = async (depth: number, count: number, shift: number): Promise<string[]> => {
    if (depth > 0) await Promise.all(urls.map((u) => rpc(u, 'anvil_rollback', [depth])));
    let parent = await rpc<RpcBlockHeader>(urls[0]!, 'eth_getBlockByNumber', ['latest', false]);
    for (let i = 0; i < count; i++) {
      // anvil_rollback does not restore anvil's base-fee state: every node is told the fee.
      const fee = nextBaseFee(recordFromHeader(parent, []));
      const timestamp = Number(BigInt(parent.timestamp)) + shift;
      await Promise.all(
        urls.map(async (u) => {
          await rpc(u, 'anvil_setNextBlockBaseFeePerGas', [hex(fee)]);
          await rpc(u, 'evm_mine', [timestamp]);
        }),
      );
      const heads = await Promise.all(
        urls.map((u) => rpc<RpcBlockHeader>(u, 'eth_getBlockByNumber', ['latest', false])),
      );
      if (new Set(heads.map((h) => h.hash)).size !== 1)
        throw new Error(`nodes disagree after the reorg: ${heads.map((h) => h.hash).join(' ')}`);
      parent = heads[0]!;
    }
    const top = Number(BigInt(parent.number));
    return nodeHashes(urls[0]!, top - count + 1, top);
  };

  await waitFor('switchyard at block 10', async () => (await syHead()) === 10);
  const old: string[] = [];
  for (let n = 7; n <= 10; n++) old.push((await syBlock(n))!.hash);
  t.same(old, await nodeHashes(urls[0]!, 7, 10), 'before: blocks 7..10 as the nodes have them (now also cached)');
  const reorgsBefore = await reorgs();
  t.equal(reorgsBefore, 0, 'no reorg yet');

  await t.test('deeper: 3 blocks replaced by 4', async (t) => {
    const fresh = await reorg(3, 4, 7); // blocks 8..11
    t.equal(fresh.length, 4);
    t.not(fresh[0], old[1], 'the new block 8 differs from the old one');
    await waitFor('switchyard at the new head 11', async () => (await syBlock('latest'))?.hash === fresh[3]);
    t.equal(await syHead(), 11, 'eth_blockNumber 11');
    const read = [];
    for (let n = 8; n <= 11; n++) read.push((await syBlock(n))?.hash);
    t.same(read, fresh, 'blocks 8..11 read through Switchyard are the new ones');
    t.equal((await syBlock(7))?.hash, old[0], 'block 7 (below the fork) is unchanged');
    t.equal((await syBlock(8))?.parentHash, old[0], 'the new chain hangs off block 7');
    type Status = { fleetHead: number; upstreams: { name: string; head: number }[] };
    const status = await waitFor('every upstream seen at 11', async () => {
      const s = (await get(`${sy.adminUrl}/status`)).json() as Status;
      return s.upstreams.every((u) => u.head === 11) && s;
    });
    t.equal(status.fleetHead, 11, '/status fleet head 11, every upstream at 11');
    await waitFor('reorg counted', async () => (await reorgs()) > reorgsBefore, { timeoutMs: 10_000 });
    t.ok((await reorgs()) > reorgsBefore, `switchyard_reorgs_total ${reorgsBefore} -> ${await reorgs()}`);
  });

  await t.test('same height: the last 2 blocks replaced by 2 others', async (t) => {
    const before = await reorgs();
    const prev = [(await syBlock(10))!.hash, (await syBlock(11))!.hash]; // read, so cached
    const fresh = await reorg(2, 2, 11); // blocks 10..11 again
    t.not(fresh[1], prev[1], 'a different block 11');
    await waitFor('switchyard on the new block 11', async () => (await syBlock('latest'))?.hash === fresh[1]);
    t.equal(await syHead(), 11, 'eth_blockNumber stays 11');
    t.same(
      [(await syBlock(10))?.hash, (await syBlock(11))?.hash],
      fresh,
      'blocks 10 and 11 read through Switchyard are the new ones, not the cached old ones',
    );
    await waitFor('reorg counted', async () => (await reorgs()) > before, { timeoutMs: 10_000 });
    t.ok((await reorgs()) > before, `switchyard_reorgs_total ${before} -> ${await reorgs()}`);
  });

  await t.test('and the chain goes on from the new head', async (t) => {
    const next = await reorg(0, 1, 1); // plain block 12 on the new chain
    await waitFor('block 12', async () => (await syHead()) === 12);
    t.equal((await syBlock(12))?.hash, next[0], 'block 12');
    t.equal((await syBlock(12))?.parentHash, (await syBlock(11))?.hash, 'whose parent is the new block 11');
  });
});
