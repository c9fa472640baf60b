/**
 * A signed transfer of 1 wei from the first anvil dev account at a given nonce (chain 0xba): a
 * nonce ahead of the account's is a gap, which anvil holds on eth_sendRawTransactionSync.
 */
import { Wallet } from 'ethers';
import { DEV_KEY } from './anvil.js';

const wallet = new Wallet(DEV_KEY);

/** The account the transfers are sent from. */
export const TRANSFER_FROM = wallet.address;

export function signTransfer(nonce: number): Promise<string> {
  return wallet.signTransaction({
    to: '0x000000000000000000000000000000000000dEaD',
    value: 1n,
    nonce,
    gasLimit: 21_000n,
    maxFeePerGas: 20_000_000_000n,
    maxPriorityFeePerGas: 1n,
    chainId: 186n,
    type: 2,
  });
}
