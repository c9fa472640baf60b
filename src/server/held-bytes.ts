/**
 * The bytes the plain lane (http-lane.ts) read off one connection and has not worked on yet. A head
 * sent a byte per write, while an answer is owed, arrives as thousands of chunks: joining all that
 * is held and searching it again for the head's end on each one cost time in the square of the
 * head's size (0.32 s of CPU for 60 KiB). Here a chunk is copied once into room kept behind the
 * bytes (which doubles when it runs out), and the search for the head's end starts where the last
 * one stopped.
 */
import { HEAD_END } from './http-head.js';

export class HeldBytes {
  /** The bytes, from `start` to `end`; past `end`, room this object owns (when `owned`). */
  private buf: Buffer | null = null;
  private start = 0;
  private end = 0;
  /** Whether `buf` was allocated here: a chunk read off the socket is never written past its end. */
  private owned = false;
  /** No head end begins before this many bytes from `start` (the last search found none there). */
  private searched = 0;

  get length(): number {
    return this.end - this.start;
  }

  append(chunk: Buffer): void {
    if (this.buf === null) {
      this.buf = chunk;
      this.start = 0;
      this.end = chunk.length;
      this.owned = false;
      this.searched = 0;
      return;
    }
    if (!this.owned || this.end + chunk.length > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(2 * this.length, this.length + chunk.length, 4096));
      this.buf.copy(grown, 0, this.start, this.end);
      this.buf = grown;
      this.end = this.length;
      this.start = 0;
      this.owned = true;
    }
    chunk.copy(this.buf, this.end);
    this.end += chunk.length;
  }

  /** The bytes held (a view: valid until the next append or take). */
  view(): Buffer {
    return this.buf === null ? EMPTY : this.buf.subarray(this.start, this.end);
  }

  /** Where the first head end lies in view(), or -1; the bytes searched before are not searched again. */
  headEnd(): number {
    if (this.buf === null) return -1;
    const from = Math.max(0, this.searched - (HEAD_END.length - 1));
    const at = this.view().indexOf(HEAD_END, from);
    this.searched = at < 0 ? this.length : at;
    return at;
  }

  /** Drops the first `n` bytes (a request worked on). */
  take(n: number): void {
    this.start += n;
    this.searched = 0;
    if (this.start >= this.end) this.clear();
  }

  /** Drops everything; returns what was held (for node:http), or null. */
  clear(): Buffer | null {
    const rest = this.length > 0 ? this.view() : null;
    this.buf = null;
    this.start = 0;
    this.end = 0;
    this.searched = 0;
    return rest;
  }
}

const EMPTY = Buffer.alloc(0);
