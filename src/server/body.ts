/**
 * Reading a request body under a byte cap counted as bytes arrive (Content-Length is a claim, not
 * a fact), decoded as strict UTF-8 so invalid bytes are a parse error rather than U+FFFD guesses.
 */
import type { IncomingMessage } from 'node:http';

export type BodyResult = { ok: true; text: string } | { ok: false; why: 'too_large' | 'bad_utf8' | 'aborted' };

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

const EMPTY: BodyResult = Object.freeze({ ok: true, text: '' });

/** A whole body's bytes as text: strict UTF-8, or why not. */
export function decodeBody(bytes: Uint8Array): BodyResult {
  try {
    return { ok: true, text: decoder.decode(bytes) };
  } catch {
    return { ok: false, why: 'bad_utf8' };
  }
}

/** Calls `done` once with the body, or why there is none. A callback, not a promise: one less hop per request. */
export function readBody(req: IncomingMessage, maxBytes: number, done: (r: BodyResult) => void): void {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return done({ ok: false, why: 'too_large' });
  let first: Buffer | undefined;
  let chunks: Buffer[] | undefined;
  let size = 0;
  let finished = false;
  const finish = (r: BodyResult): void => {
    if (finished) return;
    finished = true;
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onError);
    req.off('close', onClose);
    done(r);
  };
  const onData = (chunk: Buffer): void => {
    size += chunk.length;
    if (size > maxBytes) {
      // Stop buffering; the caller answers 413 and closes the connection.
      req.pause();
      finish({ ok: false, why: 'too_large' });
      return;
    }
    if (first === undefined) first = chunk;
    else (chunks ??= [first]).push(chunk);
  };
  const onEnd = (): void => {
    finish(first === undefined ? EMPTY : decodeBody(chunks === undefined ? first : Buffer.concat(chunks, size)));
  };
  const onError = (): void => finish({ ok: false, why: 'aborted' });
  const onClose = (): void => {
    if (!req.complete) finish({ ok: false, why: 'aborted' });
  };
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
  req.on('close', onClose);
}

const JSON_TYPES = new Set(['application/json', 'application/json-rpc', 'application/jsonrequest']);

/** `application/json; charset=utf-8` and friends; anything else is refused with 415. */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const type = header.split(';', 1)[0]!.trim().toLowerCase();
  return JSON_TYPES.has(type);
}
