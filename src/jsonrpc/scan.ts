/**
 * A structural scanner over JSON text that has already been validated by JSON.parse.
 * Owns: finding the raw source text of array elements and object members, so ids, params and
 * results travel as the exact bytes they arrived as (an id of 12345678901234567890 or 1.5 must come
 * back unchanged, which no JS number can promise). Refuses: validation (JSON.parse did it).
 * The depth pre-scan of long bodies runs nestingDepthExceeds, arrayElements and balancedEnd on text
 * JSON.parse has not seen yet: they never throw and always end, whatever the text.
 */

export interface Span {
  start: number;
  end: number;
}

/** JSON whitespace: space, line feed, carriage return, tab. */
export function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

export function skipWs(text: string, i: number): number {
  while (i < text.length && isWs(text.charCodeAt(i))) i++;
  return i;
}

/**
 * Index just past the string that opens at i. The closing quote is found with indexOf (native,
 * much faster than a character loop over long hex strings); a quote preceded by an odd number of
 * backslashes is escaped and the search goes on.
 */
function skipString(text: string, i: number): number {
  let j = text.indexOf('"', i + 1);
  for (;;) {
    if (j < 0) return text.length;
    let k = j - 1;
    while (text.charCodeAt(k) === 0x5c) k--;
    if ((j - 1 - k) % 2 === 0) return j + 1;
    j = text.indexOf('"', j + 1);
  }
}

/** Index just past the value that starts at i (whitespace already skipped). Iterative: no recursion depth. */
export function skipValue(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === 0x22) return skipString(text, i);
  if (c !== 0x7b && c !== 0x5b) {
    // number, true, false, null: runs until a delimiter.
    while (i < text.length) {
      const d = text.charCodeAt(i);
      if (d === 0x2c || d === 0x7d || d === 0x5d || isWs(d)) break;
      i++;
    }
    return i;
  }
  const end = balancedEnd(text, i);
  return end < 0 ? text.length : end;
}

/**
 * For text not yet validated: index just past the array or object that opens at i, or -1 when the
 * text ends before its brackets balance (skipValue cannot tell that from a value closed at the end).
 */
export function balancedEnd(text: string, i: number): number {
  let depth = 0;
  while (i < text.length) {
    const d = text.charCodeAt(i);
    if (d === 0x22) {
      i = skipString(text, i);
      continue;
    }
    if (d === 0x7b || d === 0x5b) depth++;
    else if (d === 0x7d || d === 0x5d) {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return -1;
}

/** The spans of the top-level value's elements when it is an array (the first `limit` of them). */
export function arrayElements(text: string, limit = Number.POSITIVE_INFINITY): Span[] {
  const out: Span[] = [];
  for (let i = firstElement(text); i >= 0 && out.length < limit; ) {
    const end = skipValue(text, i);
    out.push({ start: i, end });
    i = nextElement(text, end);
  }
  return out;
}

/** The span of the top-level array's element `index`: the walk stops there (nothing kept of the others). */
export function elementSpan(text: string, index: number): Span | undefined {
  for (let i = firstElement(text), k = 0; i >= 0; k++) {
    const end = skipValue(text, i);
    if (k === index) return { start: i, end };
    i = nextElement(text, end);
  }
  return undefined;
}

/** Where the top-level array's first element starts; -1 when the text is not an array or it is empty. */
function firstElement(text: string): number {
  const open = skipWs(text, 0);
  if (text.charCodeAt(open) !== 0x5b) return -1;
  const i = skipWs(text, open + 1);
  return text.charCodeAt(i) === 0x5d ? -1 : i;
}

/** Where the element after the one ending at `end` starts; -1 when the array ends there. */
function nextElement(text: string, end: number): number {
  const i = skipWs(text, end);
  return text.charCodeAt(i) === 0x2c ? skipWs(text, i + 1) : -1;
}

/**
 * The spans of the members of the object at span, by key. A repeated key keeps its last value,
 * as JSON.parse does, so the raw text always agrees with the parsed object.
 */
export function objectMembers(text: string, span: Span, wanted: readonly string[]): Map<string, Span> {
  return objectAt(text, span.start, wanted).members;
}

/** objectMembers for the object that opens at `start`, and the index just past it (one pass). */
export function objectAt(
  text: string,
  start: number,
  wanted: readonly string[],
): { members: Map<string, Span>; end: number } {
  const members = new Map<string, Span>();
  let i = skipWs(text, start);
  if (text.charCodeAt(i) !== 0x7b) return { members, end: skipValue(text, i) };
  i = skipWs(text, i + 1);
  if (text.charCodeAt(i) === 0x7d) return { members, end: i + 1 };
  for (;;) {
    const keyEnd = skipString(text, i);
    const key = wantedKey(text, i, keyEnd, wanted);
    i = skipWs(text, keyEnd);
    i = skipWs(text, i + 1); // past ':'
    const end = skipValue(text, i);
    if (key !== undefined) members.set(key, { start: i, end });
    i = skipWs(text, end);
    if (text.charCodeAt(i) !== 0x2c) return { members, end: i + 1 }; // past '}'
    i = skipWs(text, i + 1);
  }
}

/**
 * Which of `wanted` the key string at start..end (quotes included) is, if any: compared in place,
 * with no string made, unless the key holds an escape and must be decoded first.
 */
function wantedKey(text: string, start: number, end: number, wanted: readonly string[]): string | undefined {
  const length = end - start - 2;
  for (const w of wanted) if (w.length === length && text.startsWith(w, start + 1)) return w;
  // Only a key holding an escape can still be one of `wanted`. Looked for within the key alone: a
  // search from the key into the rest of the text would cost the text's length for every key.
  for (let i = start + 1; i < end - 1; i++) {
    if (text.charCodeAt(i) !== 0x5c) continue;
    const key = JSON.parse(text.slice(start, end)) as string;
    return wanted.includes(key) ? key : undefined;
  }
  return undefined;
}

/** Whether the value at span (already-valid JSON) nests arrays/objects deeper than limit; stops early. */
export function nestingDepthExceeds(text: string, limit: number, span: Span = { start: 0, end: text.length }): boolean {
  // Deeper than limit takes limit + 1 openings and as many closings.
  if (span.end - span.start < 2 * (limit + 1)) return false;
  let depth = 0;
  for (let i = span.start; i < span.end; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = skipString(text, i) - 1;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}
