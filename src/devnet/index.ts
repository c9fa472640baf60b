/**
 * The embedded devnet: N real anvil nodes on one chain, kept block-for-block identical, with
 * controls to make a node lag, stall, die and come back (SPEC section 10). It owns the anvil
 * processes it starts and nothing else; Switchyard talks to the nodes like to any other upstream.
 */
export type { Devnet, DevnetNodeInfo, DevnetNodeState, DevnetOptions } from './types.js';
export { startDevnet } from './fleet.js';
export { runDevnetCommand, DEVNET_USAGE, type DevnetCommandOptions } from './cli.js';
