/**
 * Reading a request body under a byte cap counted as bytes arrive (Content-Length is a claim, not
 * a fact), decoded as strict UTF-8 so invalid bytes are a parse error rather than U+FFFD guesses.
 */
import type { IncomingMessage } from 'node:http';

export type BodyResult = { ok: true; text: string } | { ok: false; why: 'too_large' | 'bad_utf8' | 'aborted' };

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export function readBody(req: IncomingMessage, maxBytes: number): Promise<BodyResult> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.resolve({ ok: false, why: 'too_large' });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (r: BodyResult): void => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      resolve(r);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        // Stop buffering; the caller answers 413 and closes the connection.
        req.pause();
        finish({ ok: false, why: 'too_large' });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      try {
        finish({ ok: true, text: decoder.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)) });
      } catch {
        finish({ ok: false, why: 'bad_utf8' });
      }
    };
    const onError = (): void => finish({ ok: false, why: 'aborted' });
    const onClose = (): void => {
      if (!req.complete) finish({ ok: false, why: 'aborted' });
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

const JSON_TYPES = new Set(['application/json', 'application/json-rpc', 'application/jsonrequest']);

/** `application/json; charset=utf-8` and friends; anything else is refused with 415. */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const type = header.split(';', 1)[0]!.trim().toLowerCase();
  return JSON_TYPES.has(type);
}
