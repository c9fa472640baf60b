/**
 * The held lane on a call's way (SPEC 6, "one client's held calls cost only that client"): a held
 * call (methods/table.ts `held`: eth_sendRawTransactionSync, traces) goes only to a node whose
 * held lane (upstreams[].heldConnections, upstream/client.ts) has a free connection. A node whose
 * lane is full is passed over for that call, as if it were not eligible (nothing was sent, so even
 * a transaction may go to another node); when every node the call could go to was passed over so,
 * the call gets HELD_LANE_FULL at once. Held calls are never queued: a queue behind calls a node
 * holds for up to their timeout would hold a client for as long, and would hide the bound.
 * Refuses: counting held calls (upstream/client.ts), which node is eligible (select.ts).
 */
import { RpcError } from '../jsonrpc/errors.js';
import type { Upstream } from '../upstream/node.js';

/** Whether `u` must be passed over for a call (`held`: the call's Sendable.held): its held lane is full. */
export function laneFull(held: boolean | undefined, u: Upstream): boolean {
  return held === true && !u.heldRoom;
}

/** The answer when every node the call could go to had its held lane full: a held call ends within seconds. */
export function heldLaneFull(): RpcError {
  return new RpcError('HELD_LANE_FULL', { data: { retryAfterSeconds: 1 } });
}
