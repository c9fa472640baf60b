/**
 * The in-memory response cache: an LRU bounded by bytes (key + raw answer text), holding answers as
 * the exact text a node returned so a hit is never re-serialised.
 * Head-scoped entries carry the reorg generation they were filled under; a reorg bumps the
 * generation, which makes every unfinalized entry unreachable at once (they age out of the LRU).
 */
import { LRUCache } from 'lru-cache';
import type { CacheClass } from './plan.js';

interface Entry {
  value: string;
  cls: CacheClass;
  gen: number;
}

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
  return s.length < 13 ? s : Buffer.from(s, 'utf8').toString('utf8');
}

export interface StoreStats {
  entries: number;
  bytes: number;
  maxBytes: number;
  evictions: number;
  generation: number;
}

export class MemoryStore {
  private readonly lru: LRUCache<string, Entry> | null;
  private gen = 0;
  private evictions = 0;

  constructor(readonly maxBytes: number) {
    this.lru =
      maxBytes > 0
        ? new LRUCache<string, Entry>({
            maxSize: maxBytes,
            sizeCalculation: (e, k) => k.length + e.value.length + ENTRY_OVERHEAD,
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

  get(key: string): string | undefined {
    const e = this.lru?.get(key);
    if (e === undefined) return undefined;
    if (e.cls !== 'immutable' && e.gen !== this.gen) {
      this.lru!.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** `gen` is the generation the answer was fetched under: a reorg meanwhile makes it stale on arrival. */
  set(key: string, value: string, cls: CacheClass, gen: number): void {
    if (this.lru === null || (cls !== 'immutable' && gen !== this.gen)) return;
    this.lru.set(own(key), { value: own(value), cls, gen });
  }

  /** A reorg: every entry that is not immutable is dropped. */
  dropUnfinalized(): void {
    this.gen++;
  }

  stats(): StoreStats {
    return { entries: this.lru?.size ?? 0, bytes: this.lru?.calculatedSize ?? 0, maxBytes: this.maxBytes, evictions: this.evictions, generation: this.gen };
  }
}
