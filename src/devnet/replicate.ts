/**
 * Block replication between anvil nodes: the leader mines a block from every node's pending
 * transactions, and any other node is brought to a height of the recorded chain by replaying the
 * recorded blocks (same raw transactions, timestamp, base fee) until its hashes match. It decides
 * nothing about which node leads or how far a node should be; the devnet tells it.
 */
import type { Logger } from 'pino';
import { toQuantity } from '../jsonrpc/hex.js';
import { type BlockRecord, type DevnetChain, type RpcBlockHeader, nextBaseFee, recordFromHeader } from './chain.js';
import { type DevnetNode, DevnetRpcError } from './node.js';

export interface ReplicaContext {
  chain: DevnetChain;
  /** Raw transactions (by lowercase hash) that were seen in some node's discarded block and are not
   * in the chain yet; they go to the next leader so that rolling a node back never loses them. */
  strays: Map<string, string>;
  logger: Logger;
}

// A replay only misses when stray transactions sat in the node's pool; each miss rolls them out of
// the pool, so a handful of attempts is plenty.
const MAX_REPLAY_ATTEMPTS = 6;
const MAX_ROLLBACK_BLOCKS = 256;

type TxPoolContent = Record<'pending' | 'queued', Record<string, Record<string, { hash: string }>>>;

const num = (header: RpcBlockHeader): number => Number(BigInt(header.number));

async function latest(node: DevnetNode): Promise<RpcBlockHeader> {
  return node.rpc<RpcBlockHeader>('eth_getBlockByNumber', ['latest', false]);
}

/** A node refusing a transaction (already known, nonce too low, replaced) is an answer, not a
 * failure: the replay compares hashes afterwards. Only transport errors propagate. */
async function offer(node: DevnetNode, raw: string, log: Logger): Promise<void> {
  try {
    await node.rpc('eth_sendRawTransaction', [raw]);
  } catch (err) {
    if (!(err instanceof DevnetRpcError)) throw err;
    log.trace({ node: node.name, err: err.message }, 'transaction refused');
  }
}

/** Keeps the transactions of a block that is about to be rolled back, unless the chain has them. */
async function salvage(ctx: ReplicaContext, node: DevnetNode, header: RpcBlockHeader): Promise<void> {
  for (const h of header.transactions.map((x) => x.toLowerCase())) {
    if (ctx.chain.hasTx(h) || ctx.strays.has(h)) continue;
    const raw = await node.rpc<string | null>('eth_getRawTransactionByHash', [h]);
    if (raw) ctx.strays.set(h, raw);
  }
}

/**
 * Brings `node` to height `target` of the recorded chain: first rolls back any block the record does
 * not have (a stray block, or one a killed leader mined but never reported), then replays the
 * missing blocks. A node already above `target` on the recorded chain is left where it is.
 * Returns the node's head afterwards.
 */
export async function syncNode(ctx: ReplicaContext, node: DevnetNode, target: number): Promise<number> {
  const { chain } = ctx;
  let head = await latest(node);
  for (let rolled = 0; chain.block(num(head))?.hash !== head.hash; rolled++) {
    if (num(head) === 0)
      throw new Error(`${node.name}: genesis ${head.hash} differs from the devnet's ${chain.genesis.hash}`);
    if (rolled >= MAX_ROLLBACK_BLOCKS)
      throw new Error(`${node.name}: more than ${MAX_ROLLBACK_BLOCKS} blocks off the chain`);
    await salvage(ctx, node, head);
    await node.rpc('anvil_rollback', [1]);
    head = await latest(node);
  }
  let n = num(head);
  const to = Math.min(target, chain.headNumber);
  for (; n < to; n++) await replayBlock(ctx, node, chain.block(n + 1)!);
  return n;
}

/** Replays one recorded block into `node` with its front closed (node.ts `exclusive`): no client
 * transaction enters the pool meanwhile, and no client sees the node before the block matches. */
function replayBlock(ctx: ReplicaContext, node: DevnetNode, block: BlockRecord): Promise<void> {
  return node.exclusive(() => replayAttempts(ctx, node, block));
}

async function replayAttempts(ctx: ReplicaContext, node: DevnetNode, block: BlockRecord): Promise<void> {
  for (let attempt = 1; attempt <= MAX_REPLAY_ATTEMPTS; attempt++) {
    for (const raw of block.rawTxs) await offer(node, raw, ctx.logger);
    await node.rpc('anvil_setNextBlockBaseFeePerGas', [toQuantity(block.baseFee)]);
    await node.rpc('evm_mine', [block.timestamp]);
    const got = await latest(node);
    if (got.hash === block.hash) return;
    // A transaction in this node's pool that the block lacks got mined too (one sent over a
    // WebSocket connection, which the front does not hold, or on a node kept behind, one a later
    // block has), or arrival order differed. Mined transactions leave the pool, so after the
    // rollback the next attempt holds only what the block needs.
    ctx.logger.debug(
      { node: node.name, block: block.number, attempt, got: got.transactions.length, want: block.txHashes.length },
      'replay mismatch, rolling back',
    );
    await salvage(ctx, node, got);
    await node.rpc('anvil_rollback', [num(got) - (block.number - 1)]);
  }
  throw new Error(
    `${node.name}: block ${block.number} did not reproduce ${block.hash} in ${MAX_REPLAY_ATTEMPTS} attempts`,
  );
}

/** Hands the leader every transaction waiting in any other node's pool (pending and nonce-gapped
 * alike) plus the salvaged strays, so a transaction sent to any node lands in the next block. */
async function gatherPending(ctx: ReplicaContext, leader: DevnetNode, others: DevnetNode[]): Promise<void> {
  const wanted = new Map(ctx.strays);
  for (const node of others) {
    try {
      const pool = await node.rpc<TxPoolContent>('txpool_content');
      for (const group of [pool.pending, pool.queued]) {
        for (const bySender of Object.values(group ?? {})) {
          // Object.values walks integer-like keys in ascending order, so nonces stay in order.
          for (const tx of Object.values(bySender)) {
            const h = tx.hash.toLowerCase();
            if (ctx.chain.hasTx(h) || wanted.has(h)) continue;
            const raw = await node.rpc<string | null>('eth_getRawTransactionByHash', [h]);
            if (raw) wanted.set(h, raw);
          }
        }
      }
    } catch (err) {
      ctx.logger.warn({ node: node.name, err: String(err) }, 'could not read pending transactions');
    }
  }
  for (const [h, raw] of wanted) {
    await offer(leader, raw, ctx.logger);
    ctx.strays.delete(h);
  }
}

/** Mines the next block on `leader` (which must be at the recorded head) and records it. */
export async function produceBlock(
  ctx: ReplicaContext,
  leader: DevnetNode,
  others: DevnetNode[],
): Promise<BlockRecord> {
  const { chain } = ctx;
  await gatherPending(ctx, leader, others);
  const parent = chain.head;
  const number = parent.number + 1;
  await leader.rpc('anvil_setNextBlockBaseFeePerGas', [toQuantity(nextBaseFee(parent))]);
  await leader.rpc('evm_mine', [chain.timestampFor(number)]);
  const header = await latest(leader);
  if (num(header) !== number || header.parentHash !== parent.hash) {
    // Left for syncNode to roll back on the next attempt; its transactions are salvaged then.
    throw new Error(`${leader.name}: mined block ${num(header)} does not extend recorded head ${parent.number}`);
  }
  const rawTxs: string[] = [];
  for (const h of header.transactions) {
    const raw = await leader.rpc<string | null>('eth_getRawTransactionByHash', [h]);
    if (!raw) throw new Error(`${leader.name}: no raw form of mined transaction ${h}`);
    rawTxs.push(raw);
  }
  const record = recordFromHeader(header, rawTxs);
  chain.append(record);
  return record;
}
