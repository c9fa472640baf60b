/**
 * One HTTP exchange with a node: POST a JSON body, read the whole answer as text, within a time
 * limit. Built on undici's dispatch() with a minimal handler: request() builds a Readable stream,
 * its handler and an abort signal's listeners for every exchange, which measured as a large share
 * of the miss path. Transport failures reject with undici's own errors (classify.ts reads their
 * codes); the time limit rejects with an error named TimeoutError.
 */
import type { Dispatcher } from 'undici';

export interface Answer {
  status: number;
  text: string;
}

type Controller = Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestStart']>>[0];

export function timeoutError(): Error {
  const err = new Error('upstream call timed out');
  err.name = 'TimeoutError';
  return err;
}

export function postJson(dispatcher: Dispatcher, target: { origin: string; path: string; headers: Record<string, string> }, body: string, timeoutMs: number): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    let settled = false;
    let controller: Controller | null = null;
    let timedOut = false;
    let status = 0;
    let first: Buffer | undefined;
    let chunks: Buffer[] | undefined;
    let size = 0;
    const settle = (err: Error | null, answer?: Answer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err !== null) reject(err);
      else resolve(answer!);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      const err = timeoutError();
      controller?.abort(err);
      settle(err);
    }, timeoutMs);
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        // Still queued for a connection when the time ran out: never send it.
        if (timedOut) c.abort(timeoutError());
      },
      onResponseStart(_c, statusCode) {
        status = statusCode;
      },
      onResponseData(_c, chunk) {
        size += chunk.length;
        if (first === undefined) first = chunk;
        else (chunks ??= [first]).push(chunk);
      },
      onResponseEnd() {
        const buf = first === undefined ? undefined : chunks === undefined ? first : Buffer.concat(chunks, size);
        settle(null, { status, text: buf === undefined ? '' : buf.toString('utf8') });
      },
      onResponseError(_c, err) {
        settle(err);
      },
    };
    try {
      dispatcher.dispatch({ origin: target.origin, path: target.path, method: 'POST', headers: target.headers, body }, handler);
    } catch (err) {
      settle(err as Error);
    }
  });
}
