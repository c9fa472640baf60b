/**
 * A large node answer (past LARGE_ANSWER_BYTES) as it is received and after: its bytes gathered a
 * piece of DECODE_BYTES at a time, each piece decoded and fed to the JSON checker
 * (jsonrpc/check.ts) and its string let go, the bytes kept. What the answer holds is then read
 * from the checker's spans: a short member (an id, an error) as a string, a long one (a 60 MB
 * result) as the bytes it arrived in (jsonrpc/raw.ts), so no turn of the event loop decodes,
 * joins or copies the whole answer.
 * The bytes must be UTF-8, as JSON between systems must be (RFC 8259): bytes passed on are the
 * bytes checked, so a piece that is not is the answer not being JSON (it used to be decoded with
 * U+FFFD in place of the bad bytes).
 * Refuses: what the answer means (answers.ts), and the byte pools (exchange.ts).
 */
import { isUtf8 } from 'node:buffer';
import { type Checked, JsonChecker } from '../jsonrpc/check.js';
import { type JsonText, RawText } from '../jsonrpc/raw.js';
import type { Span } from '../jsonrpc/scan.js';

/**
 * A large answer is decoded and checked about this many bytes at a time, one step per turn of the
 * event loop across all answers being received: the socket reads of one turn can bring megabytes
 * (libuv reads a busy socket up to 32 times per event), and checking them all in that turn held
 * the loop 100 to 250 ms of CPU with four answers flowing. The decoded strings are let go as soon
 * as they are checked (only the bytes are kept), so they cost the young generation nothing to keep.
 */
const DECODE_BYTES = 256 * 1024;

/**
 * A member of a large answer at least this long is passed on as its bytes; a shorter one is
 * decoded (the small results of a large batch answer, which the cache and the identity checks
 * read as strings).
 */
export const RAW_FROM_CHARS = 64 * 1024;

/** The longest member of a result object kept as text for the identity checks (a hash is 66 characters). */
const MAX_INNER_CHARS = 256;

/** Bytes of the answer and the characters they decode to (as many as bytes when all are ASCII). */
interface Piece {
  buf: Buffer;
  /** The piece's first character's index in the whole text. */
  char: number;
  chars: number;
}

/** Large answers with bytes waiting to be checked, served one piece a turn, in turn. */
const waiting: LargeAnswer[] = [];
let stepping = false;

function queue(a: LargeAnswer): void {
  waiting.push(a);
  if (!stepping) {
    stepping = true;
    setImmediate(step);
  }
}

function step(): void {
  stepping = false;
  waiting.shift()?.step();
  if (waiting.length > 0 && !stepping) {
    stepping = true;
    setImmediate(step);
  }
}

/**
 * A large answer being received: its chunks gathered, checked a piece a turn (queue), kept as
 * bytes. `done` is told once: the answer read (after its last byte and its last piece), or null
 * the moment it is found not JSON.
 */
export class LargeAnswer {
  private readonly checker = new JsonChecker();
  private readonly pieces: Piece[] = [];
  private chars = 0;
  private queued = false;
  private ended = false;
  private over = false;

  constructor(
    private waiting: Buffer[],
    private waitingSize: number,
    private readonly done: (body: LargeBody | null) => void,
  ) {
    this.next();
  }

  push(chunk: Buffer): void {
    this.waiting.push(chunk);
    this.waitingSize += chunk.length;
    this.next();
  }

  /** The last byte has arrived: what waits is checked, then the answer read. */
  end(): void {
    this.ended = true;
    this.next();
  }

  /** The exchange ended otherwise (cut off, timed out): nothing more is checked or told. */
  cancel(): void {
    this.over = true;
  }

  private next(): void {
    if (this.over || this.queued) return;
    if (this.waitingSize >= DECODE_BYTES || (this.ended && this.waitingSize > 0)) {
      this.queued = true;
      queue(this);
    } else if (this.ended) this.finish();
  }

  /**
   * About DECODE_BYTES of what waits, chunk by chunk as the socket gave them (no copy made to join
   * them): each decoded up to its last whole character (a character cut at a chunk's end is
   * completed with the next chunk's bytes) and checked, its string let go at once.
   */
  step(): void {
    this.queued = false;
    if (this.over) return;
    const waiting = this.waiting;
    let k = 0;
    let done = 0;
    while (k < waiting.length && done < DECODE_BYTES) {
      const bytes = waiting[k]!;
      const last = this.ended && k === waiting.length - 1;
      const cut = last ? bytes.length : wholeChars(bytes);
      if (cut < bytes.length) {
        if (k === waiting.length - 1) break; // its other bytes are still to come
        waiting[k + 1] = Buffer.concat([bytes.subarray(cut), waiting[k + 1]!]);
      }
      k++;
      done += bytes.length;
      this.waitingSize -= cut;
      if (!this.check(bytes.subarray(0, cut))) return this.bad();
    }
    this.waiting = waiting.slice(k);
    this.next();
  }

  /** Decodes one piece and checks it; false when it is not UTF-8 or the text is found not JSON. */
  private check(piece: Buffer): boolean {
    if (!isUtf8(piece)) return false;
    const text = piece.toString('utf8');
    this.pieces.push({ buf: piece, char: this.chars, chars: text.length });
    this.chars += text.length;
    return this.checker.push(text);
  }

  private bad(): void {
    this.over = true;
    this.done(null);
  }

  private finish(): void {
    this.over = true;
    const checked = this.checker.end();
    this.done(checked === null ? null : new LargeBody(this.pieces, checked));
  }
}

/** How many of `bytes` end on a whole UTF-8 character (a character cut at the end waits for its other bytes). */
function wholeChars(bytes: Buffer): number {
  const n = bytes.length;
  for (let i = n - 1; i >= 0 && i >= n - 4; i--) {
    const b = bytes[i]!;
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: the character began before it
    const size = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return i + size > n ? i : n;
  }
  return n;
}

/** A large answer received whole and found JSON: what it holds, read from its bytes by the checker's spans. */
export class LargeBody {
  constructor(
    private readonly pieces: readonly Piece[],
    readonly checked: Checked,
  ) {}

  /** The text at `span` as a string (a copy: for short members). */
  text(span: Span): string {
    return this.raw(span).toString();
  }

  /**
   * The value at `span`: its bytes when it is long (with the short members of it `inner` names,
   * when it is an object), else its text.
   */
  value(span: Span, inner?: ReadonlyMap<string, Span>): JsonText {
    if (span.end - span.start < RAW_FROM_CHARS) return this.text(span);
    const members = new Map<string, string>();
    if (inner !== undefined)
      for (const [k, s] of inner) if (s.end - s.start <= MAX_INNER_CHARS) members.set(k, this.text(s));
    return this.raw(span, members);
  }

  private raw(span: Span, members?: ReadonlyMap<string, string>): RawText {
    const [p0, b0] = this.at(span.start, false);
    const [p1, b1] = this.at(span.end, true);
    const chunks: Buffer[] = [];
    if (p0 === p1) chunks.push(this.pieces[p0]!.buf.subarray(b0, b1));
    else {
      chunks.push(this.pieces[p0]!.buf.subarray(b0));
      for (let p = p0 + 1; p < p1; p++) chunks.push(this.pieces[p]!.buf);
      chunks.push(this.pieces[p1]!.buf.subarray(0, b1));
    }
    let bytes = 0;
    for (const c of chunks) bytes += c.length;
    return new RawText(chunks, bytes, span.end - span.start, members);
  }

  /**
   * The piece holding character `c` and the byte it starts at in that piece. `end`: `c` ends a
   * span, so a `c` on a boundary between pieces is the end of the earlier one.
   */
  private at(c: number, end: boolean): [number, number] {
    const pieces = this.pieces;
    let lo = 0;
    let hi = pieces.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      const from = pieces[mid]!.char;
      if (from < c || (from === c && !end)) lo = mid;
      else hi = mid - 1;
    }
    const p = pieces[lo]!;
    const local = c - p.char;
    // A span starts and ends on JSON punctuation, never inside a character's bytes or a surrogate pair.
    const byte = p.buf.length === p.chars ? local : Buffer.byteLength(p.buf.toString('utf8').slice(0, local), 'utf8');
    return [lo, byte];
  }
}
