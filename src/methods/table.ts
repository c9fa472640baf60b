/**
 * The method table: for each JSON-RPC method Switchyard knows, where its block parameter sits,
 * which upstream capability it needs, and how it is handled. Everything method-specific is read
 * from here (policy, routing, metrics labels), so adding a method is one line.
 * Refuses: deciding anything at run time (policy.ts, routing/ do that from these facts).
 */

export type Handling =
  /** Forwarded to one upstream chosen by block height. */
  | 'read'
  /** State-changing: eth_sendRawTransaction. */
  | 'write'
  /** Answered by Switchyard itself. */
  | 'local'
  /** Creates a node-side filter; the returned id is made to carry the upstream (routing/filters). */
  | 'filter-new'
  /** Uses a filter id: goes to the upstream that holds it. */
  | 'filter-use'
  /** WebSocket only. */
  | 'subscription';

export interface MethodSpec {
  handling: Handling;
  /** Index of the block parameter (number, tag or EIP-1898 object) in params. */
  block?: number;
  /** Index of a filter object whose fromBlock/toBlock/blockHash decide eligibility (eth_getLogs). */
  filterObject?: number;
  capability?: 'debug';
  /**
   * Reads the state at its block parameter (balances, code, storage, execution): a node whose
   * earliest block with state is above that block cannot answer it (upstream/serving.ts). Blocks,
   * transactions and receipts are no state: a pruned node still serves them.
   */
  state?: boolean;
  /**
   * How an answer may be cached (cache/plan.ts); absent = never.
   *   block: keyed by the block parameter: immutable at a finalized number or a block hash, head-scoped
   *          at an unfinalized number or a missing block parameter
   *   hash:  a lookup by block hash: immutable
   *   tx:    a transaction/receipt by hash: immutable once its block is finalized, else not stored
   *   head:  no block parameter, answer depends on the head (gas price): head-scoped
   *   logs:  eth_getLogs: by its range (all finalized: immutable; all <= head: head-scoped) or blockHash
   */
  cache?: 'block' | 'hash' | 'tx' | 'head' | 'logs';
  /** Index of a block-count parameter (eth_feeHistory): a quantity from 1 to MAX_BLOCK_COUNT. */
  blockCount?: number;
  /** A null answer may mean "this node has not seen it yet": retried once on a node as far ahead. */
  nullMayLag?: boolean;
  /** The node holds the call until the transaction is mined (eth_sendRawTransactionSync). */
  waitsForReceipt?: boolean;
  /**
   * The caller decides how much work the node does (EVM execution of any gas, a trace, a log
   * range): sent alone, never in a batch with other calls; a timeout, or a connection lost after
   * sending, is answered at once and not run on another node, and is no mark against the node
   * (upstream/classify.ts expensiveVerdict). Errors meaning "this node can't" still fail over.
   */
  expensive?: boolean;
  /**
   * The node holds the call for long by design (a transaction waiting to be mined, a trace): it
   * goes on the node's held lane (upstreams[].heldConnections, upstream/client.ts), so it never
   * takes a connection other calls need, and its timeout is no mark against the node
   * (upstream/classify.ts heldVerdict). Allowed methods named like a trace are held too (heldName).
   */
  held?: boolean;
}

const read = (extra: Omit<MethodSpec, 'handling'> = {}): MethodSpec => ({ handling: 'read', ...extra });

export const METHODS: Readonly<Record<string, MethodSpec>> = Object.freeze({
  eth_chainId: { handling: 'local' },
  net_version: { handling: 'local' },
  net_listening: { handling: 'local' },
  eth_accounts: { handling: 'local' },
  eth_blockNumber: { handling: 'local' },

  eth_blobBaseFee: read({ cache: 'head' }),
  eth_call: read({ state: true, block: 1, cache: 'block', expensive: true }),
  eth_createAccessList: read({ state: true, block: 1, cache: 'block', expensive: true }),
  eth_estimateGas: read({ state: true, block: 1, cache: 'block', expensive: true }),
  eth_feeHistory: read({ block: 1, blockCount: 0, cache: 'block' }),
  eth_gasPrice: read({ cache: 'head' }),
  eth_getBalance: read({ state: true, block: 1, cache: 'block' }),
  eth_getBlockByHash: read({ nullMayLag: true, cache: 'hash' }),
  eth_getBlockByNumber: read({ block: 0, nullMayLag: true, cache: 'block' }),
  eth_getBlockReceipts: read({ block: 0, cache: 'block' }),
  eth_getBlockTransactionCountByHash: read({ cache: 'hash' }),
  eth_getBlockTransactionCountByNumber: read({ block: 0, cache: 'block' }),
  eth_getCode: read({ state: true, block: 1, cache: 'block' }),
  eth_getLogs: read({ filterObject: 0, cache: 'logs', expensive: true }),
  eth_getProof: read({ state: true, block: 2, cache: 'block' }),
  // The raw bytes are what the hash is of: immutable whenever the node has them.
  eth_getRawTransactionByHash: read({ nullMayLag: true, cache: 'hash' }),
  eth_getStorageAt: read({ state: true, block: 2, cache: 'block' }),
  eth_getTransactionByBlockHashAndIndex: read({ cache: 'hash' }),
  eth_getTransactionByBlockNumberAndIndex: read({ block: 0, cache: 'block' }),
  eth_getTransactionByHash: read({ nullMayLag: true, cache: 'tx' }),
  eth_getTransactionCount: read({ state: true, block: 1, cache: 'block' }),
  eth_getTransactionReceipt: read({ nullMayLag: true, cache: 'tx' }),
  eth_getUncleByBlockHashAndIndex: read({ cache: 'hash' }),
  eth_getUncleByBlockNumberAndIndex: read({ block: 0, cache: 'block' }),
  eth_getUncleCountByBlockHash: read({ cache: 'hash' }),
  eth_getUncleCountByBlockNumber: read({ block: 0, cache: 'block' }),
  eth_maxPriorityFeePerGas: read({ cache: 'head' }),
  eth_protocolVersion: read(),
  eth_simulateV1: read({ state: true, block: 1, expensive: true }),
  eth_syncing: read(),
  eth_sendRawTransaction: { handling: 'write' },
  // EIP-7966: sends and waits for the receipt. One attempt with its own timeout, never retried.
  eth_sendRawTransactionSync: { handling: 'write', waitsForReceipt: true, held: true },

  eth_newFilter: { handling: 'filter-new' },
  eth_newBlockFilter: { handling: 'filter-new' },
  eth_newPendingTransactionFilter: { handling: 'filter-new' },
  eth_getFilterChanges: { handling: 'filter-use' },
  eth_getFilterLogs: { handling: 'filter-use', expensive: true },
  eth_uninstallFilter: { handling: 'filter-use' },

  eth_subscribe: { handling: 'subscription' },
  eth_unsubscribe: { handling: 'subscription' },

  net_peerCount: read(),
  web3_clientVersion: read(),
  web3_sha3: read(),

  debug_traceTransaction: read({ capability: 'debug', expensive: true, held: true }),
  debug_traceCall: read({ state: true, block: 1, capability: 'debug', expensive: true, held: true }),
  debug_traceBlockByNumber: read({ state: true, block: 0, capability: 'debug', expensive: true, held: true }),
  debug_traceBlockByHash: read({ capability: 'debug', expensive: true, held: true }),
  debug_getRawBlock: read({ block: 0, capability: 'debug' }),
  debug_getRawHeader: read({ block: 0, capability: 'debug' }),
  debug_getRawReceipts: read({ block: 0, capability: 'debug' }),
  debug_getRawTransaction: read({ capability: 'debug' }),
});

/**
 * A method outside the table forwarded by methods.allow or methods.extensions is held when it is
 * named like a trace (OpenEthereum/erigon/reth `trace_*`, geth's other `debug_trace*`): the node
 * may run it for long, like the table's traces.
 */
export function heldName(method: string): boolean {
  return method.startsWith('trace_') || method.startsWith('debug_trace');
}

/** geth's cap on eth_feeHistory's block count; larger counts are refused before reaching a node. */
export const MAX_BLOCK_COUNT = 1024;

/** Methods that act with a node's keys: never forwarded, whatever the table or allow list says. */
export const SIGNING_METHODS: ReadonlySet<string> = new Set([
  'eth_sendTransaction',
  'eth_sign',
  'eth_signTransaction',
  'eth_signTypedData',
  'eth_signTypedData_v1',
  'eth_signTypedData_v3',
  'eth_signTypedData_v4',
]);
