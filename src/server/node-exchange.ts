/**
 * node:http's side of the exchange (exchange.ts): its own ServerResponse, made by the server for
 * each request it reads (createServer's `ServerResponse` option, http.ts), so the exchange costs
 * no object of its own.
 */
import { type IncomingMessage, type OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { readBody } from './body.js';
import type { AnswerHeaders, BodyReceiver, Exchange } from './exchange.js';
import type { Lingering } from './linger.js';

export class NodeExchange<Request extends IncomingMessage = IncomingMessage>
  extends ServerResponse<Request>
  implements Exchange
{
  readBody(maxBytes: number, to: BodyReceiver): void {
    readBody(this.req, maxBytes, (read) => to.received(read));
  }

  closeConnection(): void {
    this.setHeader('connection', 'close');
  }

  /**
   * An answer made before node:http read the request's body: node:http would read and drop the rest
   * (its `_dump`) for as long as the client sends, so one with a body over maxBodyBytes or chunked
   * closes the connection instead; and a connection closed under a body still arriving closes with
   * a linger (linger.ts), so the answer is not lost to a reset.
   */
  beforeAnswer(extra: Readonly<Record<string, string>>, maxBodyBytes: number, lingering: Lingering): void {
    const req = this.req;
    if (req.complete) return;
    const length = req.headers['content-length'];
    const chunked = req.headers['transfer-encoding'] !== undefined;
    if (!chunked && (length === undefined || Number(length) === 0)) return;
    const unbounded = chunked || !(Number(length) <= maxBodyBytes);
    if (unbounded) this.setHeader('connection', 'close');
    if (unbounded || extra.connection === 'close' || this.getHeader('connection') === 'close')
      lingering.onClose(req.socket);
  }

  sendWhole(status: number, headers: AnswerHeaders, body: string | Buffer): void {
    this.writeHead(status, headers as OutgoingHttpHeaders | string[]);
    this.end(body);
  }

  response(): ServerResponse {
    return this;
  }
}
