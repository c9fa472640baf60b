/**
 * The devnet's memory of its one chain: every block it produced, with what is needed to rebuild it
 * byte for byte on another anvil (raw transactions in order, timestamp, base fee). It also owns the
 * rules that make a block reproducible (timestamp schedule, EIP-1559 base fee). It never talks to a node.
 */

export interface BlockRecord {
  number: number;
  hash: string;
  parentHash: string;
  timestamp: number;
  baseFee: bigint;
  gasUsed: bigint;
  gasLimit: bigint;
  txHashes: string[];
  rawTxs: string[];
}

/** Header fields as anvil returns them from eth_getBlockByNumber(_, false). */
export interface RpcBlockHeader {
  number: string;
  hash: string;
  parentHash: string;
  timestamp: string;
  baseFeePerGas?: string;
  gasUsed: string;
  gasLimit: string;
  transactions: string[];
}

// EIP-1559 constants (London): gas target is half the limit, the fee moves by at most 1/8 a block.
const ELASTICITY = 2n;
const CHANGE_DENOMINATOR = 8n;

/**
 * The base fee of the block after `parent`, as in EIP-1559. Every node is told this value explicitly
 * before each block because anvil's own tracker is not restored by anvil_rollback, so two nodes with
 * different histories of retries would otherwise disagree.
 */
export function nextBaseFee(parent: Pick<BlockRecord, 'baseFee' | 'gasUsed' | 'gasLimit'>): bigint {
  const target = parent.gasLimit / ELASTICITY;
  if (target === 0n || parent.gasUsed === target) return parent.baseFee;
  if (parent.gasUsed > target) {
    const delta = (parent.baseFee * (parent.gasUsed - target)) / target / CHANGE_DENOMINATOR;
    return parent.baseFee + (delta > 0n ? delta : 1n);
  }
  const delta = (parent.baseFee * (target - parent.gasUsed)) / target / CHANGE_DENOMINATOR;
  return parent.baseFee - delta;
}

export function recordFromHeader(header: RpcBlockHeader, rawTxs: string[]): BlockRecord {
  return {
    number: Number(BigInt(header.number)),
    hash: header.hash,
    parentHash: header.parentHash,
    timestamp: Number(BigInt(header.timestamp)),
    baseFee: BigInt(header.baseFeePerGas ?? '0x0'),
    gasUsed: BigInt(header.gasUsed),
    gasLimit: BigInt(header.gasLimit),
    txHashes: header.transactions.map((h) => h.toLowerCase()),
    rawTxs,
  };
}

export class DevnetChain {
  private readonly blocks: BlockRecord[];
  private readonly txs = new Set<string>();
  private readonly stepSeconds: number;

  /** `stepSeconds` is the timestamp distance between blocks; it is at least 1 because anvil refuses a
   * timestamp that does not move forward. */
  constructor(genesis: BlockRecord, stepSeconds: number) {
    if (genesis.number !== 0) throw new Error(`expected genesis block 0, got block ${genesis.number}`);
    this.blocks = [genesis];
    this.stepSeconds = Math.max(1, Math.floor(stepSeconds));
  }

  get head(): BlockRecord {
    return this.blocks[this.blocks.length - 1]!;
  }

  get headNumber(): number {
    return this.blocks.length - 1;
  }

  get genesis(): BlockRecord {
    return this.blocks[0]!;
  }

  block(n: number): BlockRecord | undefined {
    return this.blocks[n];
  }

  hasTx(hash: string): boolean {
    return this.txs.has(hash.toLowerCase());
  }

  /** The schedule is a pure function of the height, so a node rebuilt from genesis gets the same
   * timestamps without any clock being involved. */
  timestampFor(n: number): number {
    return this.genesis.timestamp + n * this.stepSeconds;
  }

  append(block: BlockRecord): void {
    const head = this.head;
    if (block.number !== head.number + 1 || block.parentHash !== head.hash) {
      throw new Error(
        `block ${block.number} (parent ${block.parentHash}) does not extend head ${head.number} (${head.hash})`,
      );
    }
    this.blocks.push(block);
    for (const h of block.txHashes) this.txs.add(h);
  }
}
