/**
 * Cacheability: for one call (after `latest` was pinned to the head snapshot), the cache key and
 * class, or null. An allow-list driven by the method table: a method without a `cache` entry,
 * extensions, `pending`/`safe`/`finalized`/`earliest` tags, and malformed params are never cached.
 *   immutable: valid forever (memory LRU, and the Redis second level when configured)
 *   head:      valid while the fleet head and reorg generation are the ones it was filled under
 *   tx:        looked up like immutable; stored only if the answer's block is finalized
 */
import type { MethodSpec } from '../methods/table.js';
import { heightOf, isHash, isHexText } from '../jsonrpc/hex.js';
import { identityOf, type Identity } from '../methods/identity.js';
import type { CacheClass } from '../metrics/labels.js';

export interface CachePlan {
  /** The entry's key: method and canonical params. A head-scoped entry is served only for `head` (store.ts). */
  key: string;
  cls: CacheClass;
  /**
   * Identical calls in flight share one upstream call under this key. It leaves the head out
   * whenever the params name a fixed block (a number at or below the head, a hash): the answer does
   * not change when the head moves, so calls asked across a head change still share one call.
   */
  shareKey: string;
  /** The head snapshot the plan was made under: a head-scoped entry is looked up in that head's table. */
  head: number;
  /**
   * A head-scoped answer with a key of its own per address or call (not a fee read, one key per
   * head): kept only when its key misses a second time within the head (store.ts).
   */
  secondMiss: boolean;
  /** The key's hash, for the miss sets; worked out once, at the first lookup or store that needs it. */
  keyHash?: number;
  /** What the answer must carry (methods/identity.ts): a value read back from Redis is held to it. */
  identity?: Identity | null;
}

export interface ChainView {
  head: number;
  finalized: number;
}

/** Hex text already in lower case (most of it): quoted as it is, no lower-cased copy made. */
const LOWER_HEX = /^0x[0-9a-f]*$/;

/** JSON with sorted keys and lower-cased hex, so equivalent calls share one entry. */
export function canonical(v: unknown): string {
  // Hex text needs no escaping: quoted as is, without JSON.stringify.
  if (typeof v === 'string')
    return LOWER_HEX.test(v) ? `"${v}"` : isHexText(v) ? `"${v.toLowerCase()}"` : JSON.stringify(v);
  if (Array.isArray(v)) {
    // A loop of concatenations: no intermediate array per level (this runs for every cacheable call).
    let out = '[';
    for (let i = 0; i < v.length; i++) out += i === 0 ? canonical(v[i]) : `,${canonical(v[i])}`;
    return `${out}]`;
  }
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** The class of data at a block reference, or null when a tag or malformed value makes it uncacheable. */
function classOfBlock(ref: unknown, view: ChainView): 'immutable' | 'head' | null {
  if (typeof ref === 'string') {
    const n = heightOf(ref);
    if (n === null) return null;
    if (n <= view.finalized) return 'immutable';
    return n <= view.head ? 'head' : null;
  }
  if (ref !== null && typeof ref === 'object' && !Array.isArray(ref)) {
    const o = ref as { blockHash?: unknown; blockNumber?: unknown };
    if (typeof o.blockHash === 'string') return isHash(o.blockHash) ? 'immutable' : null;
    return classOfBlock(o.blockNumber, view);
  }
  return null;
}

function classOfLogs(filter: unknown, view: ChainView): 'immutable' | 'head' | null {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) return null;
  const f = filter as { blockHash?: unknown; fromBlock?: unknown; toBlock?: unknown };
  if (f.blockHash !== undefined) return isHash(f.blockHash) ? 'immutable' : null;
  // A missing end means `latest` at the node: not a fixed range.
  const from = classOfBlock(f.fromBlock, view);
  const to = classOfBlock(f.toBlock, view);
  if (from === null || to === null) return null;
  return from === 'immutable' && to === 'immutable' ? 'immutable' : 'head';
}

export function planCache(
  method: string,
  spec: MethodSpec,
  params: readonly unknown[],
  view: ChainView,
): CachePlan | null {
  let cls: CacheClass | null;
  /** The answer depends on the head itself (not only on a block the params name). */
  let headBound = false;
  switch (spec.cache) {
    case 'hash':
      cls = 'immutable';
      break;
    case 'tx':
      cls = 'tx';
      break;
    case 'head':
      cls = 'head';
      headBound = true;
      break;
    case 'logs':
      cls = classOfLogs(params[spec.filterObject ?? 0], view);
      break;
    case 'block': {
      const ref = params[spec.block ?? 0];
      // An optional block left out (eth_estimateGas, eth_call) means the node's latest: head-scoped.
      cls = ref === undefined ? 'head' : classOfBlock(ref, view);
      headBound = ref === undefined;
      break;
    }
    default:
      return null;
  }
  if (cls === null) return null;
  const text = canonical(params);
  const key = `${method}:${text}`;
  return {
    key,
    cls,
    shareKey: headBound ? `${method}@${view.head}:${text}` : key,
    head: view.head,
    secondMiss: cls === 'head' && spec.cache !== 'head',
    keyHash: undefined,
    identity: cls === 'head' ? null : identityOf(method, params),
  };
}
