/**
 * A transaction's signed encoding from the members of its JSON form (types 0 to 4: legacy,
 * EIP-2930, EIP-1559, EIP-4844, EIP-7702): its hash is the keccak-256 of it, and a block's
 * transactionsRoot is the trie of them. Members outside the signed payload (`from`, `hash`,
 * `blockHash`, an EIP-1559 transaction's effective `gasPrice`, annotations such as
 * `blockTimestamp`) are not in it, so they are not verified here.
 */
import { RLP, type Input } from '@ethereumjs/rlp';
import { keccak } from './keccak.js';
import { addressOrNull, data, list, Malformed, quantity, record } from './fields.js';

type Tx = Record<string, unknown>;

/** The transaction's encoding, or null for a type these rules do not know. */
export function transactionEncoding(tx: Tx): Uint8Array | null {
  const type = tx.type === undefined ? 0 : Number(tx.type);
  switch (type) {
    case 0:
      return RLP.encode([
        quantity(tx, 'nonce'),
        quantity(tx, 'gasPrice'),
        quantity(tx, 'gas'),
        addressOrNull(tx, 'to'),
        quantity(tx, 'value'),
        input(tx),
        quantity(tx, 'v'),
        quantity(tx, 'r'),
        quantity(tx, 's'),
      ]);
    case 1:
      return typed(1, [
        quantity(tx, 'chainId'),
        quantity(tx, 'nonce'),
        quantity(tx, 'gasPrice'),
        quantity(tx, 'gas'),
        addressOrNull(tx, 'to'),
        quantity(tx, 'value'),
        input(tx),
        accessList(tx),
        ...signature(tx),
      ]);
    case 2:
      return typed(2, [...dynamicFee(tx), accessList(tx), ...signature(tx)]);
    case 3:
      return typed(3, [
        ...dynamicFee(tx),
        accessList(tx),
        quantity(tx, 'maxFeePerBlobGas'),
        list(tx, 'blobVersionedHashes').map((h) => data({ h }, 'h', 32)),
        ...signature(tx),
      ]);
    case 4:
      return typed(4, [...dynamicFee(tx), accessList(tx), authorizations(tx), ...signature(tx)]);
    default:
      return null;
  }
}

/** keccak-256 of the encoding, or null for an unknown type. */
export function transactionHash(tx: Tx): Uint8Array | null {
  const encoded = transactionEncoding(tx);
  return encoded === null ? null : keccak(encoded);
}

/** The type byte, then the RLP list: EIP-2718's typed envelope. */
function typed(type: number, fields: Input[]): Uint8Array {
  const body = RLP.encode(fields);
  const out = new Uint8Array(body.length + 1);
  out[0] = type;
  out.set(body, 1);
  return out;
}

/** The members EIP-1559 and its successors open with, up to the input. */
function dynamicFee(tx: Tx): Input[] {
  return [
    quantity(tx, 'chainId'),
    quantity(tx, 'nonce'),
    quantity(tx, 'maxPriorityFeePerGas'),
    quantity(tx, 'maxFeePerGas'),
    quantity(tx, 'gas'),
    addressOrNull(tx, 'to'),
    quantity(tx, 'value'),
    input(tx),
  ];
}

/** Older nodes call the input `data`. */
function input(tx: Tx): Uint8Array {
  return tx.input === undefined && tx.data !== undefined ? data(tx, 'data') : data(tx, 'input');
}

/** A typed transaction's y parity: `yParity`, or `v` from nodes that write only that. */
function signature(tx: Tx): Uint8Array[] {
  const parity = tx.yParity !== undefined ? quantity(tx, 'yParity') : quantity(tx, 'v');
  return [parity, quantity(tx, 'r'), quantity(tx, 's')];
}

function accessList(tx: Tx): Input {
  return list(tx, 'accessList').map((entry) => {
    const e = record(entry, 'accessList');
    return [data(e, 'address', 20), list(e, 'storageKeys').map((k) => data({ k }, 'k', 32))];
  });
}

function authorizations(tx: Tx): Input {
  return list(tx, 'authorizationList').map((entry) => {
    const a = record(entry, 'authorizationList');
    const parity = a.yParity !== undefined ? quantity(a, 'yParity') : quantity(a, 'v');
    return [
      quantity(a, 'chainId'),
      data(a, 'address', 20),
      quantity(a, 'nonce'),
      parity,
      quantity(a, 'r'),
      quantity(a, 's'),
    ];
  });
}

export { Malformed };
