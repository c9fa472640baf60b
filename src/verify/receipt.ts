/**
 * A receipt's consensus encoding from its JSON form, as a block's receiptsRoot commits to it: the
 * status (or, before Byzantium, the post-state root), the cumulative gas used, the logs bloom and
 * the logs (address, topics, data), in the typed envelope of its transaction's type. Every other
 * member (gas used, effective gas price, from, to, contract address) is derived, not committed.
 */
import { RLP, type Input } from '@ethereumjs/rlp';
import { data, list, quantity, record } from './fields.js';

type Receipt = Record<string, unknown>;

/** The receipt's encoding, or null for a type these rules do not know (0 to 4). */
export function receiptEncoding(r: Receipt): Uint8Array | null {
  const type = r.type === undefined ? 0 : Number(r.type);
  if (!(type >= 0 && type <= 4 && Number.isInteger(type))) return null;
  const body = RLP.encode([
    r.root !== undefined && r.root !== null ? data(r, 'root', 32) : quantity(r, 'status'),
    quantity(r, 'cumulativeGasUsed'),
    data(r, 'logsBloom', 256),
    list(r, 'logs').map(logEncoding),
  ]);
  if (type === 0) return body;
  const out = new Uint8Array(body.length + 1);
  out[0] = type;
  out.set(body, 1);
  return out;
}

function logEncoding(entry: unknown): Input {
  const log = record(entry, 'logs');
  return [data(log, 'address', 20), list(log, 'topics').map((t) => data({ t }, 't', 32)), data(log, 'data')];
}
