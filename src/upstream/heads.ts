/**
 * The canonical chain as the fleet head sees it: recent block hashes by height, so a reorg (a known
 * height with another hash, or a parent that is not the block we knew) is noticed and published.
 * Only headers from upstreams at the fleet head are fed in: a lagging node on a stale fork is not
 * the chain. Consumers (the cache) only need the first height that changed.
 */
import { heightOf } from '../jsonrpc/hex.js';

export interface Header {
  number: number;
  hash: string;
  parentHash: string;
}

/** A block header from a raw JSON result text, or null if it is not one. */
export function parseHeader(raw: string | unknown): Header | null {
  let v: unknown = raw;
  if (typeof raw === 'string') {
    try {
      v = JSON.parse(raw);
    } catch {
      return null;
    }
  }
  if (v === null || typeof v !== 'object') return null;
  const o = v as { number?: unknown; hash?: unknown; parentHash?: unknown };
  if (typeof o.number !== 'string' || typeof o.hash !== 'string' || typeof o.parentHash !== 'string') return null;
  const number = heightOf(o.number);
  if (number === null) return null;
  return { number, hash: o.hash.toLowerCase(), parentHash: o.parentHash.toLowerCase() };
}

export class Canon {
  private readonly hashes = new Map<number, string>();
  private top = -1;

  constructor(private readonly window = 512) {}

  /** Records a header from the fleet head; returns the first height whose block changed, or null. */
  observe(h: Header): number | null {
    let fork: number | null = null;
    const known = this.hashes.get(h.number);
    if (known !== undefined && known !== h.hash) fork = h.number;
    const parent = this.hashes.get(h.number - 1);
    if (parent !== undefined && parent !== h.parentHash) fork = h.number - 1;
    // A head lower than the highest block we knew means the chain we knew above it is gone.
    if (fork === null && known === undefined && h.number < this.top) fork = h.number;
    if (fork !== null) {
      for (const n of [...this.hashes.keys()]) if (n >= fork) this.hashes.delete(n);
      this.top = fork - 1;
    }
    if (h.number >= 1) this.hashes.set(h.number - 1, h.parentHash);
    this.hashes.set(h.number, h.hash);
    if (h.number > this.top) this.top = h.number;
    for (const n of this.hashes.keys()) if (n < this.top - this.window) this.hashes.delete(n);
    return fork;
  }
}

/**
 * The lowest finalized height among `nodes` (the healthy ones that move the head) within
 * finalityDepth of `head`: a node's `finalized` tag, or its head - finalityDepth. The cache trusts
 * a block as immutable only when every node it may ask agrees.
 */
export function finalizedHeight(
  nodes: readonly { head: number; finalized: number; finalizedSupported: boolean }[],
  head: number,
  finalityDepth: number,
): number {
  let min = Number.POSITIVE_INFINITY;
  for (const u of nodes) {
    if (head - u.head > finalityDepth) continue;
    const f = u.finalizedSupported && u.finalized >= 0 ? u.finalized : u.head - finalityDepth;
    min = Math.min(min, f);
  }
  return Number.isFinite(min) ? Math.max(0, Math.min(min, head)) : Math.max(0, head - finalityDepth);
}
