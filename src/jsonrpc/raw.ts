/**
 * JSON text kept as the bytes a node sent: a large result (an eth_getLogs array of 60 MB) goes
 * from the node's socket to the client's as the Buffers it arrived in, checked on the way
 * (jsonrpc/check.ts) but never decoded into one string, copied whole, or encoded again. Joining
 * JSON text around it (an answer's envelope, a batch's brackets, a split call's chunks) adds
 * Buffers beside it; nothing copies it.
 * Refuses: reading it (the spans recorded while it was checked say what it holds).
 */

export class RawText {
  /**
   * `length`: its length in characters, as a string of it would have (the bounds that count
   * characters count it so). `members`: the text of the short top-level members of the object it
   * holds that answers are checked by (methods/identity.ts), when it is an object.
   */
  constructor(
    readonly chunks: readonly Buffer[],
    readonly byteLength: number,
    readonly length: number,
    readonly members: ReadonlyMap<string, string> = NO_MEMBERS,
  ) {}

  /** The whole text as one string: a copy of all of it, for the few readers that need one. */
  toString(): string {
    return Buffer.concat(this.chunks as Buffer[], this.byteLength).toString('utf8');
  }

  /** Whether it holds only JSON whitespace (read up to its first other byte). */
  isBlank(): boolean {
    for (const c of this.chunks)
      for (let i = 0; i < c.length; i++) {
        const b = c[i]!;
        if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return false;
      }
    return true;
  }

  /** Whether its first byte (the text is JSON, so no whitespace leads) is `c`. */
  startsWith(c: number): boolean {
    return this.chunks.length > 0 && this.chunks[0]![0] === c;
  }
}

const NO_MEMBERS: ReadonlyMap<string, string> = new Map();

/** A JSON value's text: a string, or the bytes of a large one. */
export type JsonText = string | RawText;

/** The text as a string (a RawText is copied whole: only for readers that cannot do without). */
export function textOf(text: JsonText): string {
  return typeof text === 'string' ? text : text.toString();
}

/** Texts and bytes one after the other, as one RawText; strings are encoded, bytes kept as they are. */
export function joinRaw(parts: readonly JsonText[]): RawText {
  const chunks: Buffer[] = [];
  let bytes = 0;
  let length = 0;
  for (const p of parts) {
    if (typeof p === 'string') {
      if (p.length === 0) continue;
      const b = Buffer.from(p, 'utf8');
      chunks.push(b);
      bytes += b.length;
      length += p.length;
    } else {
      for (const c of p.chunks) chunks.push(c);
      bytes += p.byteLength;
      length += p.length;
    }
  }
  return new RawText(chunks, bytes, length);
}

/**
 * The text between the first and last bytes of a RawText holding an array (its brackets
 * stripped; the text is compact JSON a node sent, so they are its first and last bytes when no
 * whitespace surrounds them), or null when it does not open and close so.
 */
export function arrayInside(raw: RawText): RawText | null {
  const chunks = raw.chunks.filter((c) => c.length > 0);
  const first = chunks[0];
  const last = chunks[chunks.length - 1];
  if (first === undefined || last === undefined || first[0] !== 0x5b || last[last.length - 1] !== 0x5d) return null;
  if (raw.byteLength < 2) return null;
  const inner = chunks.slice();
  if (inner.length === 1) inner[0] = first.subarray(1, first.length - 1);
  else {
    inner[0] = first.subarray(1);
    inner[inner.length - 1] = last.subarray(0, last.length - 1);
  }
  return new RawText(inner, raw.byteLength - 2, raw.length - 2);
}
