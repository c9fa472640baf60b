/**
 * The in-memory response cache: an LRU bounded by bytes (key + raw answer text), holding answers as
 * the exact text a node returned so a hit is never re-serialised.
 * Head-scoped entries are keyed with the reorg generation they were filled under; a reorg bumps
 * the generation, which makes every unfinalized entry unreachable at once (they age out of the LRU).
 * Entries are the bare answer strings (no wrapper object): on a cache of millions of small answers
 * one heap object less per entry is less work for every garbage collection.
 */
import { LRUCache } from 'lru-cache';
import type { CacheClass } from './plan.js';

/**
 * Per-entry heap not in the strings' characters: the entry object, the LRU's map slot and index
 * arrays, string headers. Measured at about 260 bytes on Node 20 for a balance-sized entry.
 */
const ENTRY_OVERHEAD = 256;

/**
 * A copy of `s` that owns its characters. Answers are slices of the node's response text (for a
 * batch, of the whole batch), and a V8 slice keeps its parent alive: a cached 10-byte balance
 * would otherwise pin a 100 kB batch response and the byte bound would be fiction.
 */
function own(s: string): string {
  // Concatenating makes a new string; slicing it flattens that string into one fresh copy (V8),
  // so the result refers only to its own characters: one copy, where a Buffer round trip made two.
  return s.length < 13 ? s : (' ' + s).slice(1);
}

export interface StoreStats {
  entries: number;
  bytes: number;
  maxBytes: number;
  evictions: number;
  generation: number;
}

export class MemoryStore {
  private readonly lru: LRUCache<string, string> | null;
  private gen = 0;
  private evictions = 0;

  constructor(readonly maxBytes: number) {
    this.lru =
      maxBytes > 0
        ? new LRUCache<string, string>({
            maxSize: maxBytes,
            sizeCalculation: (v, k) => k.length + v.length + ENTRY_OVERHEAD,
            // One entry bigger than a tenth of the cache would flush the rest for one answer.
            maxEntrySize: Math.max(1, Math.floor(maxBytes / 10)),
            dispose: (_v, _k, reason) => {
              if (reason === 'evict') this.evictions++;
            },
          })
        : null;
  }

  get generation(): number {
    return this.gen;
  }

  /** The key an entry of this class lives under: head-scoped ones carry the current generation. */
  private slot(key: string, cls: CacheClass, gen: number): string {
    return cls === 'immutable' ? key : `${gen}|${key}`;
  }

  get(key: string, cls: CacheClass): string | undefined {
    return this.lru?.get(this.slot(key, cls === 'tx' ? 'immutable' : cls, this.gen));
  }

  /** `gen` is the generation the answer was fetched under: a reorg meanwhile makes it stale on arrival. */
  set(key: string, value: string, cls: CacheClass, gen: number): void {
    if (this.lru === null || (cls !== 'immutable' && gen !== this.gen)) return;
    this.lru.set(own(this.slot(key, cls, gen)), own(value));
  }

  /** A reorg: every entry that is not immutable is dropped. */
  dropUnfinalized(): void {
    this.gen++;
  }

  stats(): StoreStats {
    return { entries: this.lru?.size ?? 0, bytes: this.lru?.calculatedSize ?? 0, maxBytes: this.maxBytes, evictions: this.evictions, generation: this.gen };
  }
}
