/**
 * The in-memory response cache, bounded by bytes (key + raw answer text), holding answers as the
 * exact text a node returned so a hit is never re-serialised. Two rooms:
 *   - immutable entries in an LRU of up to 3/4 of `maxBytes`;
 *   - head-scoped entries in a table for one head, up to 1/4 of `maxBytes`. The table answers only
 *     lookups made for its head, so once the head moves none of them can be hit again: the table
 *     is dropped as a whole when the first answer for a newer head arrives, and on a reorg. Dead
 *     head-scoped entries never sit in the LRU pushing out immutable ones, and filling the table
 *     costs no LRU bookkeeping; when it is full, further answers for that head are not kept.
 * Entries are the bare answer strings (no wrapper object): on a cache of millions of small answers
 * one heap object less per entry is less work for every garbage collection.
 */
import { LRUCache } from 'lru-cache';
import { own } from '../jsonrpc/own.js';
import type { CacheClass } from '../metrics/labels.js';

/**
 * Per-entry heap not in the strings' characters: the entry object, the LRU's map slot and index
 * arrays, string headers. Measured at about 260 bytes on Node 20 for a balance-sized entry.
 */
const ENTRY_OVERHEAD = 256;

/**
 * Bits of each miss set (128 KiB): with 50,000 distinct keys missed in one block, about 5% of them
 * share a bit with an earlier one and count as asked again, which costs only their keeping.
 */
const MISS_BITS = 1 << 20;

export interface StoreStats {
  entries: number;
  bytes: number;
  maxBytes: number;
  evictions: number;
  generation: number;
}

export class MemoryStore {
  private readonly lru: LRUCache<string, string> | null;
  private readonly maxEntry: number;
  private gen = 0;
  private evictions = 0;
  /** Head-scoped answers of head `headAt` (and generation `gen`), and what they count. */
  private head = new Map<string, string>();
  private headAt = -1;
  private headBytes = 0;
  private readonly headMax: number;

  constructor(readonly maxBytes: number) {
    this.headMax = Math.floor(maxBytes / 4);
    // One entry bigger than a tenth of the cache would flush the rest for one answer.
    this.maxEntry = Math.max(1, Math.floor(maxBytes / 10));
    this.lru =
      maxBytes > 0
        ? new LRUCache<string, string>({
            maxSize: maxBytes - this.headMax,
            sizeCalculation: entrySize,
            maxEntrySize: this.maxEntry,
            dispose: (_v, _k, reason) => {
              if (reason === 'evict') this.evictions++;
            },
          })
        : null;
  }

  /**
   * Which head-scoped keys were looked up and missed at head `missesAt`: a bit per key hash in
   * `once`, and in `again` when it missed a second time (or was asked again while its first call
   * was in flight). An answer whose plan asks for a second miss is kept only when its `again` bit
   * is set: a read asked once per block (a scan over many addresses) never enters the table, where
   * it would be pure cost (a key, an owned copy and a table slot that outlive the young
   * generation), while a read asked again within the block is kept, and identical calls arriving
   * together are kept from their shared answer (the second one missed while the first was out).
   */
  private missesAt = -1;
  private readonly once = new Uint32Array(MISS_BITS / 32);
  private readonly again = new Uint32Array(MISS_BITS / 32);

  get generation(): number {
    return this.gen;
  }

  /** The largest entry kept (a tenth of maxBytes): a larger answer is never copied, nor stored. */
  get maxEntryBytes(): number {
    return this.maxEntry;
  }

  /** `head`: the head a head-scoped entry is wanted for; only the table of that head answers. */
  get(key: string, cls: CacheClass, head = -1): string | undefined {
    if (cls !== 'head') return this.lru?.get(key);
    return head === this.headAt ? this.head.get(key) : undefined;
  }

  /**
   * `gen` is the generation the answer was fetched under: a reorg meanwhile makes a head-scoped
   * answer stale on arrival. `head` is the head a head-scoped answer was fetched for. With
   * `keyHash`, a head-scoped answer is kept only when its key missed twice at `head` (see `missed`).
   */
  set(key: string, value: string, cls: CacheClass, gen: number, head = -1, keyHash?: number): void {
    if (this.lru === null) return;
    // Answers are slices of the node's response text (for a batch, of the whole batch): a cached
    // balance must not pin it. Keys need no copy: planCache builds them from parsed values.
    if (cls !== 'head') {
      this.lru.set(key, own(value));
      return;
    }
    if (gen !== this.gen || head < this.headAt) return;
    if (head > this.headAt) this.dropHead(head);
    if (keyHash !== undefined && !this.missedAgain(keyHash, head)) return;
    const size = entrySize(value, key);
    if (size > this.maxEntry || this.headBytes + size > this.headMax || this.head.has(key)) return;
    this.head.set(key, own(value));
    this.headBytes += size;
  }

  /** A head-scoped lookup of the key with this hash missed at `head`. */
  missed(keyHash: number, head: number): void {
    if (head < this.missesAt) return;
    if (head > this.missesAt) this.forgetMisses(head);
    const bit = 1 << (keyHash & 31);
    const word = (keyHash & (MISS_BITS - 1)) >>> 5;
    if ((this.once[word]! & bit) === 0) this.once[word]! |= bit;
    else this.again[word]! |= bit;
  }

  /**
   * Whether a head-scoped answer asking for a second miss may be in the table for `head`: it was
   * kept only if its key had missed again at that head. Another head's misses do not tell.
   */
  mayHold(keyHash: number, head: number): boolean {
    return head !== this.missesAt || this.missedAgain(keyHash, head);
  }

  private missedAgain(keyHash: number, head: number): boolean {
    return head === this.missesAt && (this.again[(keyHash & (MISS_BITS - 1)) >>> 5]! & (1 << (keyHash & 31))) !== 0;
  }

  private forgetMisses(head: number): void {
    this.once.fill(0);
    this.again.fill(0);
    this.missesAt = head;
  }

  private dropHead(next: number): void {
    this.head = new Map();
    this.headAt = next;
    this.headBytes = 0;
  }

  /** A reorg: every entry that is not immutable is dropped. */
  dropUnfinalized(): void {
    this.gen++;
    this.dropHead(-1);
    this.forgetMisses(-1);
  }

  stats(): StoreStats {
    return {
      entries: (this.lru?.size ?? 0) + this.head.size,
      bytes: (this.lru?.calculatedSize ?? 0) + this.headBytes,
      maxBytes: this.maxBytes,
      evictions: this.evictions,
      generation: this.gen,
    };
  }
}

function entrySize(value: string, key: string): number {
  return key.length + value.length + ENTRY_OVERHEAD;
}
