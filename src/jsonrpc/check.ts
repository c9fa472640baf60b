/**
 * A JSON checker fed in pieces, for large node answers: it validates the text as it arrives (the
 * whole JSON grammar, as JSON.parse would, but building no values) and records where the members
 * a JSON-RPC reader needs are: `id`, `result`, `error` of a top-level object, or of each element of
 * a top-level array (a batch answer). A large answer is then classified from these spans, with no
 * JSON.parse and no second walk over its text, and the work is spread over the pieces as they come
 * off the socket instead of one long block of the event loop.
 * Refuses: meaning (upstream/answers.ts reads the spans); numbers longer than MAX_TOKEN characters and
 * nesting deeper than MAX_DEPTH (no node answers so; a lying one is refused, not indulged).
 */
import { isWs, type Span } from './scan.js';

/** What a valid text holds at its top level: the wanted members of an object, or of each array element. */
export type Checked =
  | { kind: 'object'; members: Map<string, Span>; inner: Map<string, Span> }
  | { kind: 'array'; elements: { span: Span; members: Map<string, Span>; inner: Map<string, Span> }[] }
  | { kind: 'other' };

const WANTED = ['id', 'result', 'error'];
/**
 * The members of a `result` object (`inner`) an answer is checked by (methods/identity.ts) or a
 * block's height read from: recorded so that a large result need not be read again for them.
 */
const WANTED_INNER = ['number', 'hash', 'transactionHash', 'blockNumber'];
const MAX_DEPTH = 1024;
/** The longest number or literal accepted; a key longer than this is never one of WANTED either. */
const MAX_TOKEN = 256;

const VALUE = 0;
const VALUE_OR_CLOSE = 1;
const KEY = 2;
const KEY_OR_CLOSE = 3;
const COLON = 4;
const AFTER = 5;
const STRING = 6;
const ESCAPE = 7;
const UNICODE = 8;
const TOKEN = 9;
const DONE = 10;
const BAD = 11;

const OBJECT = 1;
const ARRAY = 2;

/** The run of plain string characters from lastIndex: everything but a quote, a backslash, a control character. */
const STRING_RUN = /[^"\\\x00-\x1f]*/y;
/** The run of characters a number or a literal may hold. */
const TOKEN_RUN = /[-+.0-9a-zE]*/y;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

export class JsonChecker {
  private state = VALUE;
  private readonly stack: number[] = [];
  /** Characters of the pieces before the current one. */
  private offset = 0;
  private isKey = false;
  /** The current key's raw text (escapes undecoded), while it is short enough to be a wanted one. */
  private keyRaw = '';
  /** Whether the key being read is one that may be recorded (its text is gathered then). */
  private keepKey = false;
  private hexLeft = 0;
  private token = '';
  /** Where the value now open at depth d started (d <= 3). */
  private readonly starts = [0, 0, 0, 0];
  /** The key whose value is read at depth d (d = 1, 2, 3). */
  private readonly keys = ['', '', '', ''];
  private top: Checked = { kind: 'other' };
  private element: Map<string, Span> = new Map();
  private elementInner: Map<string, Span> = new Map();

  /** Reads the next piece; false once the text is known not to be JSON (nothing more is read). */
  push(piece: string): boolean {
    let i = 0;
    const n = piece.length;
    while (i < n && this.state !== BAD) {
      const s = this.state;
      if (s === STRING) {
        STRING_RUN.lastIndex = i;
        STRING_RUN.test(piece);
        const j = STRING_RUN.lastIndex;
        if (this.keepKey && this.keyRaw.length <= MAX_TOKEN)
          this.keyRaw += piece.slice(i, Math.min(j, i + MAX_TOKEN + 1));
        if (j === n) break;
        const c = piece.charCodeAt(j);
        if (c === 0x22) this.endString(j);
        else if (c === 0x5c) {
          if (this.keepKey) this.keyRaw += '\\';
          this.state = ESCAPE;
        } else this.state = BAD;
        i = j + 1;
        continue;
      }
      const c = piece.charCodeAt(i);
      if (s === ESCAPE || s === UNICODE) {
        this.escaped(c);
        i++;
        continue;
      }
      if (s === TOKEN) {
        TOKEN_RUN.lastIndex = i;
        TOKEN_RUN.test(piece);
        const j = TOKEN_RUN.lastIndex;
        this.token += piece.slice(i, Math.min(j, i + MAX_TOKEN + 1));
        if (this.token.length > MAX_TOKEN) this.state = BAD;
        else if (j < n) this.endToken(j);
        i = j;
        continue;
      }
      if (isWs(c)) {
        i++;
        continue;
      }
      this.structural(c, i);
      i++;
    }
    this.offset += n;
    return this.state !== BAD;
  }

  /** After the last piece: what the text holds, or null when it is not one complete JSON value. */
  end(): Checked | null {
    if (this.state === TOKEN) this.endToken(0);
    return this.state === DONE ? this.top : null;
  }

  private get depth(): number {
    return this.stack.length;
  }

  /** A character outside strings and tokens: a value starting, or punctuation. */
  private structural(c: number, i: number): void {
    const s = this.state;
    if (s === VALUE || s === VALUE_OR_CLOSE) {
      if (c === 0x5d && s === VALUE_OR_CLOSE) return this.close(ARRAY, i);
      this.beginValue(i);
      if (c === 0x7b || c === 0x5b) {
        if (this.depth >= MAX_DEPTH) return void (this.state = BAD);
        this.stack.push(c === 0x7b ? OBJECT : ARRAY);
        if (this.depth === 1)
          this.top =
            c === 0x7b ? { kind: 'object', members: new Map(), inner: new Map() } : { kind: 'array', elements: [] };
        this.state = c === 0x7b ? KEY_OR_CLOSE : VALUE_OR_CLOSE;
      } else if (c === 0x22) {
        this.isKey = false;
        this.state = STRING;
      } else if (c === 0x2d || (c >= 0x30 && c <= 0x39) || c === 0x74 || c === 0x66 || c === 0x6e) {
        this.token = String.fromCharCode(c);
        this.state = TOKEN;
      } else this.state = BAD;
      return;
    }
    if (s === KEY || s === KEY_OR_CLOSE) {
      if (c === 0x7d && s === KEY_OR_CLOSE) return this.close(OBJECT, i);
      if (c !== 0x22) return void (this.state = BAD);
      this.isKey = true;
      this.keyRaw = '';
      // Only keys endValue may record are read: of the top value's members and of the one below.
      this.keepKey = this.depth <= 2 || (this.depth === 3 && this.top.kind === 'array');
      this.state = STRING;
      return;
    }
    if (s === COLON) {
      this.state = c === 0x3a ? VALUE : BAD;
      return;
    }
    if (s === AFTER) {
      const inner = this.stack[this.depth - 1];
      if (c === 0x2c) this.state = inner === OBJECT ? KEY : VALUE;
      else if (c === 0x7d && inner === OBJECT) this.close(OBJECT, i);
      else if (c === 0x5d && inner === ARRAY) this.close(ARRAY, i);
      else this.state = BAD;
      return;
    }
    this.state = BAD; // DONE: only whitespace may follow the value
  }

  private escaped(c: number): void {
    if (this.keepKey) this.keyRaw += String.fromCharCode(c);
    if (this.state === UNICODE) {
      const isHexDigit = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
      if (!isHexDigit) this.state = BAD;
      else if (--this.hexLeft === 0) this.state = STRING;
      return;
    }
    if (c === 0x75) {
      this.hexLeft = 4;
      this.state = UNICODE;
    } else
      this.state =
        c === 0x22 || c === 0x5c || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e || c === 0x72 || c === 0x74
          ? STRING
          : BAD;
  }

  private beginValue(i: number): void {
    const d = this.depth;
    if (d <= 3) this.starts[d] = this.offset + i;
    if (d === 1 && this.top.kind === 'array') {
      this.element = new Map();
      this.elementInner = new Map();
    }
  }

  private endString(j: number): void {
    if (this.isKey) {
      const d = this.depth;
      if (this.keepKey) this.keys[d] = this.keyName();
      this.state = COLON;
      return;
    }
    this.endValue(this.offset + j + 1);
  }

  /** The key just read, decoded when it holds an escape; '' when it cannot be a wanted one. */
  private keyName(): string {
    const raw = this.keyRaw;
    if (raw.length > MAX_TOKEN) return '';
    if (!raw.includes('\\')) return raw;
    return JSON.parse(`"${raw}"`) as string;
  }

  /** The token ends at j of the current piece (0 at the text's end: the piece's offset is already past it). */
  private endToken(j: number): void {
    const t = this.token;
    if (t !== 'true' && t !== 'false' && t !== 'null' && !NUMBER.test(t)) return void (this.state = BAD);
    this.endValue(this.offset + j);
  }

  private close(kind: number, i: number): void {
    if (this.stack.pop() !== kind) return void (this.state = BAD);
    this.endValue(this.offset + i + 1);
  }

  /** The value that began at the current depth ends at `end` (absolute): record it when wanted. */
  private endValue(end: number): void {
    const d = this.depth;
    this.state = d === 0 ? DONE : AFTER;
    if (d > 3) return;
    // A span is made only for a value recorded: a 60 MB array of logs ends millions of values here.
    const top = this.top;
    const keys = this.keys;
    const stack = this.stack;
    if (d === 1) {
      if (top.kind === 'object' && WANTED.includes(keys[1]!)) top.members.set(keys[1]!, this.span(1, end));
      else if (top.kind === 'array')
        top.elements.push({ span: this.span(1, end), members: this.element, inner: this.elementInner });
    } else if (d === 2 && stack[1] === OBJECT) {
      if (top.kind === 'array' && WANTED.includes(keys[2]!)) this.element.set(keys[2]!, this.span(2, end));
      else if (top.kind === 'object' && keys[1] === 'result' && WANTED_INNER.includes(keys[2]!))
        top.inner.set(keys[2]!, this.span(2, end));
    } else if (d === 3 && top.kind === 'array' && stack[1] === OBJECT && stack[2] === OBJECT) {
      if (keys[2] === 'result' && WANTED_INNER.includes(keys[3]!)) this.elementInner.set(keys[3]!, this.span(3, end));
    }
  }

  private span(d: number, end: number): Span {
    return { start: this.starts[d]!, end };
  }
}
