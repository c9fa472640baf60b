/**
 * The plain lane's reading of a request head (http-lane.ts): what it reads itself, and what it
 * leaves to node:http. A request is plain when its head and its whole body are in the bytes read so
 * far and it is `POST <path> HTTP/1.1` with headers that are tokens and printable ASCII, none
 * repeated, none folded, a Host, a Content-Length of digits (no tab) within `maxBodyBytes`, and no
 * Transfer-Encoding, Expect, Upgrade, Proxy-Connection or Connection other than keep-alive.
 *
 * The head is read byte by byte, its strings cut from one latin1 string of it, and the header
 * names clients send most are matched against constant strings rather than made and lower-cased
 * anew. Reading it as lines matched by regular expressions cost 1.4 us for wrk's head of three
 * headers and 3.3 us for undici's of nine; this, 0.6 and 1.3 us (a loop of 1,000,000 reads).
 */

/** A request head the lane read, and where its body lies in the bytes. */
export interface PlainHead {
  url: string;
  headers: Record<string, string>;
  bodyStart: number;
  bodyEnd: number;
  /** Its Content-Length is over maxBodyBytes: the body is not read (bodyEnd is bodyStart), the answer is a 413. */
  tooLarge: boolean;
}

/** node:http's limit on a request head (--max-http-header-size's default): a larger one is node's to refuse. */
const MAX_HEAD_BYTES = 16 * 1024;
export const HEAD_END = Buffer.from('\r\n\r\n');
const REQUEST_START = Buffer.from('POST /');
const VERSION = Buffer.from(' HTTP/1.1\r\n');
const DIGITS = /^\d{1,15}$/;
/**
 * Headers whose presence makes a request node:http's: what they ask for, the lane does not do; and
 * Proxy-Connection, which node:http's parser reads as Connection (`close` ends the connection).
 */
const NOT_PLAIN = new Set([
  'transfer-encoding',
  'expect',
  'upgrade',
  'http2-settings',
  'proxy-connection',
  '__proto__',
]);
const TAB = 9;
const CR = 13;
const LF = 10;
const COLON = 58;
/** Per byte: 1 when it may be in a header name (an RFC 9110 token), 2 when in a value (tab, printable ASCII). */
const BYTE = byteClasses();

function byteClasses(): Uint8Array {
  const classes = new Uint8Array(256);
  classes[9] = 2;
  for (let c = 0x20; c <= 0x7e; c++) classes[c] = 2;
  for (const c of "!#$%&'*+.^_`|~-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    classes[c.charCodeAt(0)]! |= 1;
  return classes;
}

/** The header names clients send most (browsers, undici, ethers, viem, wrk), by length. */
const KNOWN_NAMES = [
  'host',
  'content-type',
  'content-length',
  'connection',
  'accept',
  'accept-encoding',
  'accept-language',
  'user-agent',
  'origin',
  'referer',
  'sec-fetch-mode',
  'sec-fetch-site',
  'sec-fetch-dest',
  'x-request-id',
  'x-api-key',
  'authorization',
  'traceparent',
  'tracestate',
  'x-forwarded-for',
  'cache-control',
  'pragma',
];
const KNOWN_BY_LENGTH: { name: string; bytes: Buffer }[][] = [];
for (const name of KNOWN_NAMES) (KNOWN_BY_LENGTH[name.length] ??= []).push({ name, bytes: Buffer.from(name) });

/**
 * The known name the token in `buf` from `from` to `to` spells in any case, or undefined. Letters
 * are folded by setting bit 0x20, which leaves '-' and digits as they are; the other token bytes
 * it would change are in no known name.
 */
function knownName(buf: Buffer, from: number, to: number): string | undefined {
  const candidates = KNOWN_BY_LENGTH[to - from];
  if (candidates === undefined) return undefined;
  next: for (const { name, bytes } of candidates) {
    for (let k = 0; k < bytes.length; k++) if ((buf[from + k]! | 0x20) !== bytes[k]) continue next;
    return name;
  }
  return undefined;
}

/** Whether `bytes` are in `buf` at `at`, ending by `limit`. */
function holdsAt(buf: Buffer, at: number, bytes: Buffer, limit: number): boolean {
  if (at + bytes.length > limit) return false;
  for (let k = 0; k < bytes.length; k++) if (buf[at + k] !== bytes[k]) return false;
  return true;
}

/**
 * A plain request's head and where its body lies in `buf`, or null: not plain (yet), node:http's.
 * `end`: where the head ends (HEAD_END's place), when the caller found it already.
 */
export function readPlain(buf: Buffer, maxBodyBytes: number, end = buf.indexOf(HEAD_END)): PlainHead | null {
  if (end < 0 || end > MAX_HEAD_BYTES || !holdsAt(buf, 0, REQUEST_START, end + 2)) return null;
  // The request line: `POST /<path> HTTP/1.1`, the path printable ASCII without spaces.
  let i = REQUEST_START.length;
  while (i < end && buf[i]! > 0x20 && buf[i]! < 0x7f) i++;
  if (!holdsAt(buf, i, VERSION, end + 2)) return null;
  // Through the last header's CR LF: every line ends with one, and none holds a CR of its own.
  const head = buf.toString('latin1', 0, end + 2);
  const url = head.slice(REQUEST_START.length - 1, i);
  const headers: Record<string, string> = {};
  for (i += VERSION.length; i < end + 2; ) {
    i = readHeader(buf, head, i, headers);
    if (i < 0) return null;
  }
  const length = headers['content-length'];
  if (headers.host === undefined || length === undefined || !DIGITS.test(length)) return null;
  if (headers.connection !== undefined && headers.connection.toLowerCase() !== 'keep-alive') return null;
  if (Number(length) > maxBodyBytes) return { url, headers, bodyStart: end + 4, bodyEnd: end + 4, tooLarge: true };
  const bodyEnd = end + 4 + Number(length);
  if (bodyEnd > buf.length) return null;
  return { url, headers, bodyStart: end + 4, bodyEnd, tooLarge: false };
}

/**
 * The header line at `from` (in `buf`, and in `head`, its latin1 text) into `headers`: its name
 * lower-cased, its value without the spaces and tabs around it. Where the next line starts, or -1
 * when the line is not plain: a name that is not a token, a byte in the value that is not a tab or
 * printable ASCII, a CR without its LF, a name node:http must see (NOT_PLAIN), a Content-Length
 * with a tab, or one the headers hold already (a plain object's own names too: `constructor`).
 */
function readHeader(buf: Buffer, head: string, from: number, headers: Record<string, string>): number {
  let i = from;
  while ((BYTE[buf[i]!]! & 1) !== 0) i++;
  if (i === from || buf[i] !== COLON) return -1;
  const name = knownName(buf, from, i) ?? head.slice(from, i).toLowerCase();
  i++;
  while (buf[i] === 0x20 || buf[i] === 9) i++;
  const start = i;
  while ((BYTE[buf[i]!]! & 2) !== 0) i++;
  if (buf[i] !== CR || buf[i + 1] !== LF) return -1;
  let stop = i;
  while (stop > start && (buf[stop - 1] === 0x20 || buf[stop - 1] === TAB)) stop--;
  if (NOT_PLAIN.has(name) || headers[name] !== undefined) return -1;
  // node:http refuses a tab after a Content-Length's digits (400) and reads one before them: either
  // way the tab makes the request node:http's to read.
  if (name === 'content-length' && buf.subarray(from, i).includes(TAB)) return -1;
  headers[name] = head.slice(start, stop);
  return i + 2;
}
