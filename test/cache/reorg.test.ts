/**
 * A reorg makes unfinalized cache entries unreachable: an unfinalized block, a balance at `latest`
 * and a receipt read (and cached, where their class allows) before the chain is replaced on every
 * node are answered with the new chain's values after Switchyard's head tracker sees the reorg.
 * The new chain has the same height as the old one, so the head-scoped keys are the same and only
 * the reorg (not a new head number) can make the old entries go. Finalized entries survive.
 */
import t, { type Test } from 'tap';
import type { RunningSwitchyard } from '../helpers/switchyard.js';
import { nextBaseFee } from '../../src/devnet/chain.js';
import {
  cacheHits,
  hex,
  KEYS,
  metric,
  rawCall,
  rawMember,
  result,
  signTx,
  startProxiedStack,
  status,
  waitSynced,
} from './fixtures/tools.js';
import { waitFor } from '../helpers/wait.js';

interface Header {
  number: string;
  hash: string;
  timestamp: string;
  baseFeePerGas: string;
  gasUsed: string;
  gasLimit: string;
  transactions: string[];
}

const header = (url: string, n: number | string): Promise<Header> =>
  result<Header>(url, 'eth_getBlockByNumber', [typeof n === 'number' ? hex(n) : n, false]);
const parent = (h: Header) => ({
  baseFee: BigInt(h.baseFeePerGas),
  gasUsed: BigInt(h.gasUsed),
  gasLimit: BigInt(h.gasLimit),
});

/**
 * Replaces the top `depth` blocks on every node, identically: roll back, offer `rawTxs`, mine
 * `depth` blocks with explicit timestamps (shifted by `shift` seconds, so they differ from the old
 * ones) and base fees, as the devnet does to keep hashes equal. Returns the new blocks.
 */
async function reorgEveryNode(
  t: Test,
  nodes: string[],
  depth: number,
  rawTxs: string[],
  shift: number,
): Promise<Header[]> {
  const top = Number((await header(nodes[0]!, 'latest')).number);
  const base = await header(nodes[0]!, top - depth);
  const made: Header[] = [];
  for (const url of nodes) {
    await result(url, 'anvil_rollback', [depth]);
    t.equal((await header(url, 'latest')).hash, base.hash, 'rolled back to the common ancestor');
    for (const raw of rawTxs) await result(url, 'eth_sendRawTransaction', [raw]);
    let prev = base;
    for (let i = 0; i < depth; i++) {
      const fee = made[i] ? BigInt(made[i]!.baseFeePerGas) : nextBaseFee(parent(prev));
      await result(url, 'anvil_setNextBlockBaseFeePerGas', [hex(fee)]);
      await result(url, 'evm_mine', [Number(BigInt(prev.timestamp)) + shift]);
      const got = await header(url, 'latest');
      if (!made[i]) made.push(got);
      t.equal(got.hash, made[i]!.hash, `new block ${Number(got.number)} identical on every node`);
      prev = got;
    }
  }
  return made;
}

/** Until Switchyard has counted a reorg beyond `before` and sees every node at `head`. */
async function waitReorgSeen(sy: RunningSwitchyard, before: number, head: number): Promise<void> {
  await waitFor(
    'switchyard sees the reorg and the new chain on every node',
    async () => {
      const s = await status(sy);
      return (
        (await metric(sy, 'switchyard_reorgs_total')) > before &&
        s.fleetHead === head &&
        s.upstreams.every((u: { head: number }) => u.head === head)
      );
    },
    { timeoutMs: 30_000 },
  );
}

t.test('after a reorg, unfinalized reads return the new chain; finalized entries stay cached', async (t) => {
  const { devnet, proxies, sy } = await startProxiedStack(t, { nodes: 3 });
  const nodes = devnet.nodes().map((n) => n.url);
  const node = nodes[0]!;
  const X = '0x00000000000000000000000000000000000000b1';
  const ONE = 10n ** 18n;

  await devnet.mine(12);
  const t1 = await result<string>(node, 'eth_sendRawTransaction', [
    await signTx(KEYS[0], { nonce: 0, to: X, value: ONE }),
  ]);
  await devnet.mine(); // block 13 holds T1
  const N = await devnet.mine(); // head 14
  const { finalized } = await waitSynced(sy, node);
  t.ok(
    finalized < N - 2 && finalized >= 2,
    `block 2 is finalized, N-1 and N are not (finalized ${finalized}, head ${N})`,
  );

  // Before: each read three times, so the ones whose class allows it are in the cache (a
  // head-scoped read with a key per address or call is kept from its second miss on).
  const readUntilKept = async (method: string, params: unknown[]) => {
    await rawCall(sy.url, method, params);
    const first = await rawCall(sy.url, method, params);
    const before = await cacheHits(sy);
    const second = await rawCall(sy.url, method, params);
    return { first, second, hit: (await cacheHits(sy)) - before === 1 };
  };
  const finBefore = await readUntilKept('eth_getBlockByNumber', ['0x2', true]);
  t.ok(finBefore.hit, 'a finalized block is cached');
  const blockBefore = await readUntilKept('eth_getBlockByNumber', [hex(N), false]);
  t.ok(blockBefore.hit, 'the unfinalized head block is cached (head-scoped)');
  const oldHash = blockBefore.second.json.result.hash as string;
  const balBefore = await readUntilKept('eth_getBalance', [X, 'latest']);
  t.equal(balBefore.second.json.result, hex(ONE), 'balance at latest: 1 ether');
  t.ok(balBefore.hit, 'the balance at latest is cached (head-scoped)');
  const receiptBefore = await readUntilKept('eth_getTransactionReceipt', [t1]);
  t.equal(receiptBefore.second.json.result?.blockNumber, hex(N - 1), 'the receipt is in block N-1');
  const oldBlockN1 = receiptBefore.second.json.result.blockHash as string;

  // The reorg: every node rolls back two blocks and mines two different ones, identically (explicit
  // timestamps and base fees), the first with another transfer to X, so state differs too.
  const reorgsBefore = await metric(sy, 'switchyard_reorgs_total');
  const [newN1, newN] = (await reorgEveryNode(
    t,
    nodes,
    2,
    [await signTx(KEYS[1], { nonce: 0, to: X, value: 2n * ONE })],
    7,
  )) as [Header, Header];
  t.equal(Number(newN.number), N, 'the new chain has the same height');
  t.not(newN.hash, oldHash, 'and another block at it');
  const t2 = newN1.transactions[0]!;
  t.equal(newN1.transactions.length, 1, 'the new block N-1 holds only the other transfer');

  await waitReorgSeen(sy, reorgsBefore, N);
  t.pass('switchyard_reorgs_total increased and /status shows the fleet at the new head');

  const blockAfter = await rawCall(sy.url, 'eth_getBlockByNumber', [hex(N), false]);
  t.equal(blockAfter.json.result?.hash, newN.hash, 'the block at N is the new chain block');
  const direct = await rawCall(node, 'eth_getBlockByNumber', [hex(N), false]);
  t.equal(rawMember(blockAfter.text, 'result'), rawMember(direct.text, 'result'), 'byte for byte the node answer');
  const n1After = await rawCall(sy.url, 'eth_getBlockByNumber', [hex(N - 1), false]);
  t.equal(n1After.json.result?.hash, newN1.hash, 'so is the block at N-1');

  const balAfter = await rawCall(sy.url, 'eth_getBalance', [X, 'latest']);
  t.equal(balAfter.json.result, hex(2n * ONE), 'the balance at latest is the new chain value (2 ether, not 1)');
  t.equal(balAfter.json.result, await result(node, 'eth_getBalance', [X, hex(N)]), 'as the node says');

  const receiptAfter = await rawCall(sy.url, 'eth_getTransactionReceipt', [t1]);
  const nodeReceipt = await result(node, 'eth_getTransactionReceipt', [t1]);
  t.same(receiptAfter.json.result, nodeReceipt, 'the old transaction receipt is what the new chain says');
  t.ok(
    receiptAfter.json.result === null || receiptAfter.json.result.blockHash !== oldBlockN1,
    'null, or in a new block, never the dropped one',
  );
  const t2Receipt = await rawCall(sy.url, 'eth_getTransactionReceipt', [t2]);
  t.equal(t2Receipt.json.result?.blockHash, newN1.hash, 'the new transfer receipt is in the new block N-1');

  const hitsBefore = await cacheHits(sy);
  const finAfter = await rawCall(sy.url, 'eth_getBlockByNumber', ['0x2', true]);
  t.equal((await cacheHits(sy)) - hitsBefore, 1, 'the finalized block is still served from the cache after the reorg');
  t.equal(rawMember(finAfter.text, 'result'), rawMember(finBefore.first.text, 'result'), 'unchanged');

  await t.test('a call asked after a reorg never shares an answer fetched before it', async (t) => {
    const Y = '0x00000000000000000000000000000000000000b2';
    // The node answers call 1 (old chain: Y has nothing) but the answer is held on its way back.
    const holds = proxies.map((p) => p.hold('eth_getBalance', [Y, hex(N)], { afterNode: true, once: true }));
    const call1 = rawCall(sy.url, 'eth_getBalance', [Y, 'latest']);
    await waitFor('the node answered call 1', () => holds.some((h) => h.held === 1));
    for (const h of holds) if (h.held === 0) h.release(); // only call 1 is held, wherever call 2 goes

    const reorgs = await metric(sy, 'switchyard_reorgs_total');
    const [block] = await reorgEveryNode(
      t,
      nodes,
      1,
      [await signTx(KEYS[2], { nonce: 0, to: Y, value: 3n * ONE })],
      11,
    );
    t.equal(Number(block!.number), N, 'the chain is replaced at the same height again');
    await waitReorgSeen(sy, reorgs, N);

    const coalesced = await metric(sy, 'switchyard_coalesced_calls_total');
    let settled = false;
    const call2 = rawCall(sy.url, 'eth_getBalance', [Y, 'latest']).finally(() => (settled = true));
    await waitFor(
      'call 2 answered or joined the call in flight',
      async () => settled || (await metric(sy, 'switchyard_coalesced_calls_total')) > coalesced,
    );
    for (const h of holds) h.release();
    const [, second] = await Promise.all([call1, call2]);
    t.equal(second.json.result, hex(3n * ONE), 'call 2 (asked after the reorg) gets the new chain balance');
    t.equal(second.json.result, await result(node, 'eth_getBalance', [Y, hex(N)]), 'as the node says');
  });
});
