// The plain lane's head reader (server/http-head.ts) against a reading of the same rules by lines
// and regular expressions: the same answer for every head, plain or not, including heads made by
// mutating plain ones byte by byte.
import t from 'tap';
import { readPlain } from '../../src/server/http-head.js';

const REQUEST_LINE = /^POST (\/[\x21-\x7e]*) HTTP\/1\.1$/;
const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([\t\x20-\x7e]*?)[ \t]*$/;
const NOT_PLAIN = new Set([
  'transfer-encoding',
  'expect',
  'upgrade',
  'http2-settings',
  'proxy-connection',
  '__proto__',
]);

/** The rules read the plain way: split into lines, each matched whole. */
function byLines(buf: Buffer, maxBodyBytes: number): ReturnType<typeof readPlain> {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0 || end > 16 * 1024) return null;
  const lines = buf.toString('latin1', 0, end).split('\r\n');
  const first = REQUEST_LINE.exec(lines[0]!);
  if (first === null) return null;
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const h = HEADER_LINE.exec(line);
    if (h === null) return null;
    const name = h[1]!.toLowerCase();
    if (NOT_PLAIN.has(name) || headers[name] !== undefined) return null;
    if (name === 'content-length' && line.includes('\t')) return null;
    headers[name] = h[2]!;
  }
  const length = headers['content-length'];
  if (headers.host === undefined || length === undefined || !/^\d{1,15}$/.test(length)) return null;
  if (headers.connection !== undefined && headers.connection.toLowerCase() !== 'keep-alive') return null;
  if (Number(length) > maxBodyBytes)
    return { url: first[1]!, headers, bodyStart: end + 4, bodyEnd: end + 4, tooLarge: true };
  const bodyEnd = end + 4 + Number(length);
  if (bodyEnd > buf.length) return null;
  return { url: first[1]!, headers, bodyStart: end + 4, bodyEnd, tooLarge: false };
}

const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}';
const HEADS = [
  `POST / HTTP/1.1\r\nHost: 127.0.0.1:8545\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n`,
  `POST /key/abc HTTP/1.1\r\nhost: a\r\nconnection: keep-alive\r\ncontent-type: application/json\r\naccept: */*\r\naccept-language: *\r\nsec-fetch-mode: cors\r\nuser-agent: node\r\naccept-encoding: gzip, deflate\r\ncontent-length: ${BODY.length}\r\n\r\n`,
  `POST / HTTP/1.1\r\nHOST: a\r\nCONTENT-LENGTH: ${BODY.length}\r\nX-Request-ID:  \t id-1 \t\r\nTraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\nx-empty:\r\n\r\n`,
];

t.test('plain heads read as the rules say, in any case of their names', async (t) => {
  for (const head of HEADS) {
    const buf = Buffer.from(head + BODY);
    const read = readPlain(buf, 1000);
    t.not(read, null, 'plain');
    t.same(read, byLines(buf, 1000));
  }
  t.same(readPlain(Buffer.from(HEADS[2]! + BODY), 1000)?.headers, {
    host: 'a',
    'content-length': String(BODY.length),
    'x-request-id': 'id-1',
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    'x-empty': '',
  });
});

t.test('heads that are not plain, one fault each', async (t) => {
  const base = HEADS[0]!;
  const faults: [string, string][] = [
    ['a name a plain object has', base.replace('Host', 'constructor: 1\r\nHost')],
    ['an empty name', base.replace('Host', ': 1\r\nHost')],
    ['a line without a colon', base.replace('Host', 'X-A 1\r\nHost')],
    ['a CR inside a value', base.replace('127.0.0.1', '127.0\r.0.1')],
    ['a LF inside a value', base.replace('127.0.0.1', '127.0\n.0.1')],
    ['DEL in a value', base.replace('127.0.0.1', '127.0\x7f.0.1')],
    ['DEL in the path', base.replace('POST /', 'POST /\x7f')],
    ['a tab in the path', base.replace('POST /', 'POST /\t')],
    ['two spaces before the version', base.replace(' HTTP', '  HTTP')],
    ['lower-case method', base.replace('POST', 'post')],
    ['the head ends after the request line', 'POST / HTTP/1.1\r\n\r\n'],
    ['Host in capitals, twice', base.replace('Host', 'HOST: b\r\nHost')],
    ['an uppercase Transfer-Encoding', base.replace('Host', 'TRANSFER-ENCODING: chunked\r\nHost')],
    ['Connection: Upgrade', base.replace('Host', 'Connection: Upgrade\r\nHost')],
    ['Proxy-Connection (node:http reads it as Connection)', base.replace('Host', 'Proxy-Connection: close\r\nHost')],
    ['a tab after the Content-Length (node:http: 400)', base.replace(`${BODY.length}\r\n`, `${BODY.length}\t\r\n`)],
    [
      'a tab before the Content-Length',
      base.replace(`Content-Length: ${BODY.length}`, `Content-Length:\t${BODY.length}`),
    ],
    ['a head shorter than its request line', 'POST /\r\n\r\n'],
    ['nothing but the end of a head', '\r\n\r\n'],
  ];
  for (const [why, head] of faults) {
    const buf = Buffer.from(head + BODY, 'latin1');
    t.equal(readPlain(buf, 1000), null, why);
    t.equal(byLines(buf, 1000), null, `${why}: by lines as well`);
  }
});

/** A small deterministic generator (mulberry32), so a failure can be read again. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

t.test('the same answer as the reading by lines, for 30,000 mutated heads', async (t) => {
  const next = random(186);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const bytes = ['\t', ' ', ':', '\r', '\n', '\r\n', '\x00', '\x7f', '\xe9', 'a', 'A', '-', '_', '"', '0'];
  const lines = [
    'Host: b',
    'Connection: close',
    'Expect: 100-continue',
    'Content-Length: 1',
    'X-A:  2 ',
    'cOnTeNt-TyPe: x',
  ];
  let plain = 0;
  let differ: string | null = null;
  for (let n = 0; n < 30_000 && differ === null; n++) {
    let text = pick(HEADS) + BODY;
    for (let m = 1 + Math.floor(next() * 3); m > 0; m--) {
      const at = Math.floor(next() * (text.length - BODY.length));
      const what = next();
      if (what < 0.4) text = text.slice(0, at) + pick(bytes) + text.slice(at);
      else if (what < 0.6) text = text.slice(0, at) + text.slice(at + 1);
      else if (what < 0.8) {
        const c = text[at]!;
        text = text.slice(0, at) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + text.slice(at + 1);
      } else {
        const line = text.indexOf('\r\n', at);
        if (line > 0) text = `${text.slice(0, line + 2)}${pick(lines)}\r\n${text.slice(line + 2)}`;
      }
    }
    const buf = Buffer.from(text, 'latin1');
    const limit = pick([10, 1000]);
    const read = readPlain(buf, limit);
    if (read !== null) plain++;
    if (JSON.stringify(read) !== JSON.stringify(byLines(buf, limit))) differ = JSON.stringify(text);
  }
  t.equal(differ, null, 'no head read otherwise');
  // Both kinds were made in numbers: the comparison covered plain heads and faults alike.
  t.ok(plain > 3_000 && plain < 27_000, `${plain} plain heads of 30,000`);
});
