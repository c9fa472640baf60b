/**
 * One HTTP request and its answer, as the front reads and writes them (http-request.ts,
 * http-answer.ts), whichever reader read the request: node:http (node-exchange.ts, its own
 * ServerResponse) or the plain lane (http-lane-reply.ts). Nothing on the front asks which.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BodyResult } from './body.js';
import type { Lingering } from './linger.js';

/** The request, as the front reads node's IncomingMessage, and no more. */
export type ExchangeRequest = Pick<
  IncomingMessage,
  'method' | 'url' | 'headers' | 'socket' | 'httpVersionMajor' | 'httpVersionMinor'
>;

/** Told the request's body, once it is read whole (a method, not a closure: one object per request). */
export interface BodyReceiver {
  received(body: BodyResult): void;
}

/** Headers of an answer: flat name, value pairs, or an object. */
export type AnswerHeaders = readonly string[] | Readonly<Record<string, string | number>>;

export interface Exchange {
  readonly req: ExchangeRequest;
  /** The answer's head is made: a crash after it writes no answer of its own. */
  readonly headersSent: boolean;
  /** Reads the body whole under `maxBytes`, then tells `to` (a plain request's was read with its head). */
  readBody(maxBytes: number, to: BodyReceiver): void;
  /** The answer closes the connection after it (Connection: close). */
  closeConnection(): void;
  /**
   * An answer is about to be written: one made before node:http read the request's body closes
   * the connection, with a linger, when that body is unbounded or the answer closes it.
   */
  beforeAnswer(extra: Readonly<Record<string, string>>, maxBodyBytes: number, lingering: Lingering): void;
  /** Writes the whole answer at once. */
  sendWhole(status: number, headers: AnswerHeaders, body: string | Buffer): void;
  /** node:http's response, for an answer written in pieces, as its node's bytes, or compressed. */
  response(): ServerResponse;
}
