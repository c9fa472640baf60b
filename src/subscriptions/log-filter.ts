/**
 * The filter of a `logs` subscription: `{ address?, topics? }` as in eth_getLogs (no block range),
 * parsed once, matched against a block's logs, and keyed so that subscriptions with the same filter
 * share one matching pass per block (logs-fanout.ts).
 * Owns: filter syntax and matching. Refuses: delivery.
 */
import { type RpcError, rpcErrors } from '../jsonrpc/errors.js';
import { isAddress, isHash } from '../jsonrpc/hex.js';

/** One log of a block, as the node sent it (chain.ts fetches them). */
export interface LogEntry {
  address: string;
  topics: string[];
  [k: string]: unknown;
}

export interface LogFilter {
  addresses: Set<string> | null;
  topics: (Set<string> | null)[];
  /** Equal for filters that match the same logs in the same way (lowercase, sorted, no trailing wildcards). */
  key: string;
}

export function parseFilter(v: unknown): LogFilter | RpcError {
  if (v === undefined || v === null) return withKey(null, []);
  if (typeof v !== 'object' || Array.isArray(v)) return rpcErrors.invalidParams('expected a logs filter object');
  const o = v as { address?: unknown; topics?: unknown };
  let addresses: Set<string> | null = null;
  if (o.address !== undefined && o.address !== null) {
    const list = Array.isArray(o.address) ? o.address : [o.address];
    if (!list.every(isAddress)) return rpcErrors.invalidParams('address: expected an address or a list of addresses');
    if (list.length > 0) addresses = new Set((list as string[]).map((a) => a.toLowerCase()));
  }
  const topics: (Set<string> | null)[] = [];
  if (o.topics !== undefined && o.topics !== null) {
    if (!Array.isArray(o.topics) || o.topics.length > 4)
      return rpcErrors.invalidParams('topics: expected a list of at most 4 positions');
    for (const t of o.topics as unknown[]) {
      if (t === null) topics.push(null);
      else {
        const list = Array.isArray(t) ? t : [t];
        if (!list.every(isHash))
          return rpcErrors.invalidParams('topics: expected 32-byte hex topics, lists of them, or null');
        topics.push(list.length === 0 ? null : new Set((list as string[]).map((x) => x.toLowerCase())));
      }
    }
  }
  return withKey(addresses, topics);
}

function withKey(addresses: Set<string> | null, topics: (Set<string> | null)[]): LogFilter {
  // A wildcard at the end matches what its absence matches: [T, null] is [T].
  while (topics.length > 0 && topics.at(-1) === null) topics.pop();
  const part = (s: Set<string> | null): string => (s === null ? '*' : [...s].sort().join(','));
  return { addresses, topics, key: [part(addresses), ...topics.map(part)].join('|') };
}

/** A log's address and topics, lowercased once per block for every filter that looks at it. */
export interface LogKeys {
  address: string;
  topics: string[];
}

/** A node's log as the filters read it; what is not a string matches no filter that names it. */
export function logKeys(log: LogEntry): LogKeys {
  if (typeof log !== 'object' || log === null) return { address: '', topics: [] };
  const topics = Array.isArray(log.topics) ? log.topics : [];
  return {
    address: typeof log.address === 'string' ? log.address.toLowerCase() : '',
    topics: topics.map((t) => (typeof t === 'string' ? t.toLowerCase() : '')),
  };
}

export function matches(f: LogFilter, log: LogKeys): boolean {
  if (f.addresses !== null && !f.addresses.has(log.address)) return false;
  for (let i = 0; i < f.topics.length; i++) {
    const want = f.topics[i];
    if (want === null || want === undefined) continue;
    const got = log.topics[i];
    if (got === undefined || !want.has(got)) return false;
  }
  return true;
}
