/**
 * Calls Switchyard answers itself. eth_chainId and net_version come from configuration (every
 * upstream is verified against it); eth_blockNumber is the fleet's never-decreasing head, so no
 * client sees it go backwards when the node that answered last time fails or lags.
 */
import { rpcErrors } from '../jsonrpc/errors.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { Fleet } from '../upstream/fleet.js';
import { toQuantity } from '../jsonrpc/hex.js';

export function answerLocally(method: string, chainId: number, fleet: Fleet): Outcome {
  switch (method) {
    case 'eth_chainId':
      return { result: `"${toQuantity(chainId)}"` };
    case 'net_version':
      return { result: `"${chainId}"` };
    case 'net_listening':
      return { result: 'true' };
    case 'eth_accounts':
      // Switchyard holds no keys and never lets a node sign for a client.
      return { result: '[]' };
    case 'eth_blockNumber': {
      if (fleet.healthyCount() === 0) return { error: rpcErrors.noUpstream('none healthy') };
      const n = fleet.blockNumber();
      return n < 0 ? { error: rpcErrors.noUpstream('no head known yet') } : { result: `"${toQuantity(n)}"` };
    }
    default:
      return { error: rpcErrors.methodNotFound(method) };
  }
}
