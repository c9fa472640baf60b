/**
 * A JSON-RPC answer written to an HTTP response: one writeHead with every header (type, length,
 * request id, CORS, the caller's extras), a large body a piece at a time so no turn of the event
 * loop encodes all of it, and gzip for a client that accepts it. Refuses: what the answer says and
 * which headers it gets (http-request.ts).
 */
import type { Writable } from 'node:stream';
import { constants, createGzip, gzip } from 'node:zlib';
import { RawText } from '../jsonrpc/raw.js';
import type { Exchange } from './exchange.js';

/** No headers; compared by identity, so an answer with none takes the short writeHead. */
export const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * One writeHead with every header, then the body: Node writes head and body in one go. `more`:
 * headers as flat name, value pairs (the diagnostic headers), which keep the plain answer's
 * header array (no object built and walked per answer).
 */
export function sendAnswer(
  x: Exchange,
  status: number,
  body: string | Buffer | RawText,
  reqId: string | undefined,
  cors: Readonly<Record<string, string>>,
  extra: Readonly<Record<string, string>>,
  more: readonly string[] = NO_PAIRS,
): void {
  const length = String(body instanceof RawText ? body.byteLength : Buffer.byteLength(body));
  let headers: string[] | Record<string, string>;
  if (cors === NO_HEADERS && extra === NO_HEADERS && reqId !== undefined) {
    const head = ['content-type', 'application/json', 'content-length', length, 'x-request-id', reqId];
    headers = more.length === 0 ? head : head.concat(more);
  } else {
    // Both may name what the answer varies by (Origin, Accept): it varies by both.
    const vary =
      cors.vary !== undefined && extra.vary !== undefined && cors.vary !== extra.vary
        ? { vary: `${cors.vary}, ${extra.vary}` }
        : NO_HEADERS;
    headers = {
      'content-type': 'application/json',
      'content-length': length,
      ...cors,
      ...(reqId === undefined ? {} : { 'x-request-id': reqId }),
      ...extra,
      ...vary,
      ...headersOf(more),
    };
  }
  if (body instanceof RawText) {
    const out = x.response();
    out.writeHead(status, headers);
    return writeRaw(out, body);
  }
  // Bytes made once (uptime/pages/page-memo.ts) are written whole: nothing is left to encode.
  if (typeof body !== 'string' || body.length <= WRITE_PIECE_CHARS) return x.sendWhole(status, headers, body);
  const out = x.response();
  out.writeHead(status, headers);
  writePieces(out, body, 0);
}

/**
 * An answer passed on as the bytes its node sent: its Buffers handed to the socket as they are
 * (nothing encoded or copied; they are held until written, as they were held until now).
 */
function writeRaw(out: Writable, body: RawText): void {
  if (out.destroyed) return;
  for (const chunk of body.chunks) out.write(chunk);
  out.end();
}

const NO_PAIRS: readonly string[] = Object.freeze([]);

/** Flat name, value pairs as an object. */
export function headersOf(pairs: readonly string[]): Record<string, string> {
  const h: Record<string, string> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) h[pairs[i]!] = pairs[i + 1]!;
  return h;
}

/** A body longer than this is written a piece of this many characters at a time. */
const WRITE_PIECE_CHARS = 1024 * 1024;

/**
 * A large body (a 64 MB eth_getLogs answer) written whole is encoded in one turn of the event loop
 * (measured ~0.5 s for 60 MB on a busy 2-core machine, every other client waiting): it goes a
 * piece at a time instead, the next piece after the socket took the last (or on the next turn).
 * A piece never ends between the two halves of a surrogate pair, which would be sent as U+FFFD.
 */
function writePieces(out: Writable, body: string, from: number): void {
  if (out.destroyed) return;
  let to = Math.min(body.length, from + WRITE_PIECE_CHARS);
  const last = body.charCodeAt(to - 1);
  if (to < body.length && last >= 0xd800 && last <= 0xdbff) to--;
  if (to === body.length) return void out.end(body.slice(from));
  const next = (): void => writePieces(out, body, to);
  if (out.write(body.slice(from, to))) setImmediate(next);
  else out.once('drain', next);
}

/** Whether Accept-Encoding allows gzip (listed, or `*`, without q=0). */
function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (name !== 'gzip' && name !== '*') continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (q === undefined || Number(q.slice(2)) > 0) return true;
  }
  return false;
}

/**
 * A JSON-RPC answer of at least server.gzipMinBytes goes out gzip-compressed when the client
 * accepts it (fast level: large answers are repetitive JSON, and the proxy's CPU is the cost).
 * Compression runs on the thread pool, not the event loop.
 */
export function sendLargeAnswer(
  x: Exchange,
  status: number,
  body: string | Buffer | RawText,
  reqId: string,
  cors: Readonly<Record<string, string>>,
  extra: Readonly<Record<string, string>>,
): void {
  const vary = { vary: [cors.vary, extra.vary, 'Accept-Encoding'].filter((v) => v !== undefined).join(', ') };
  if (!acceptsGzip(x.req.headers['accept-encoding']))
    return sendAnswer(x, status, body, reqId, cors, { ...extra, ...vary });
  const res = x.response();
  if (body instanceof RawText || (typeof body === 'string' && body.length > WRITE_PIECE_CHARS)) {
    // Compressed as it is written, a piece at a time (gzip() of the whole string would encode it
    // in one turn first); its length is not known beforehand, so it goes chunked.
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      ...cors,
      'x-request-id': reqId,
      ...extra,
      ...vary,
    });
    const zip = createGzip({ level: constants.Z_BEST_SPEED });
    res.once('close', () => zip.destroy());
    zip.pipe(res);
    return body instanceof RawText ? writeRaw(zip, body) : writePieces(zip, body, 0);
  }
  gzip(body, { level: constants.Z_BEST_SPEED }, (err, zipped) => {
    if (err) return sendAnswer(x, status, body, reqId, cors, { ...extra, ...vary });
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': zipped.length,
      'content-encoding': 'gzip',
      ...cors,
      'x-request-id': reqId,
      ...extra,
      ...vary,
    });
    res.end(zipped);
  });
}
