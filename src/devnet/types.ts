/**
 * The devnet's public shapes, shared by the fleet, its control API and its command line.
 */
import type { Logger } from 'pino';

export interface DevnetOptions {
  /** How many anvil nodes; default 3. */
  nodes: number;
  chainId: number;
  /** A block every blockTimeMs; 0 = no automatic blocks, only devnet.mine(). */
  blockTimeMs: number;
  /** Interface every node (and the control API) listens on; default '127.0.0.1'. */
  host?: string;
  /** Node i listens on basePort + i; 0 or undefined = free ports picked by the OS. */
  basePort?: number;
  /** Control HTTP API port; undefined = no control API, 0 = a free port. */
  controlPort?: number;
  /** anvil --slots-in-an-epoch: safe = head - K, finalized = head - 2K; default 4. */
  slotsInAnEpoch?: number;
  /** Genesis timestamp; default 1_700_000_000. Block n gets genesis + n * max(1, block time in s). */
  genesisTimestamp?: number;
  logger?: Logger;
}

export type DevnetNodeState = 'running' | 'lagging' | 'stalled' | 'killed';

export interface DevnetNodeInfo {
  index: number;
  /** node-0, node-1, ... */
  name: string;
  /** http://host:port */
  url: string;
  /** ws://host:port (anvil serves WebSocket on its HTTP port) */
  wsUrl: string;
  pid: number | null;
  state: DevnetNodeState;
  /** The node's last known head. */
  head: number;
  /** How many blocks the node is behind the devnet's head. */
  lag: number;
}

export interface Devnet {
  readonly chainId: number;
  readonly controlUrl: string | null;
  nodes(): DevnetNodeInfo[];
  /** Mines `count` (default 1) blocks now on every live node, kept identical; returns the new head. */
  mine(count?: number): Promise<number>;
  /** Node stays `blocks` behind the others (0 = catch up and follow). */
  lag(index: number, blocks: number): Promise<void>;
  /** Node keeps answering but stops getting new blocks. */
  stall(index: number): Promise<void>;
  /** Undoes lag/stall: the node catches up with every missed block, same hashes. */
  resume(index: number): Promise<void>;
  /** SIGKILLs the node's process (by pid). */
  kill(index: number): Promise<void>;
  /** Starts the node again on the same port, replays the chain into it, then it follows again. */
  restart(index: number): Promise<void>;
  /** Kills every process the devnet started and closes the control API; idempotent. */
  stop(): Promise<void>;
}
