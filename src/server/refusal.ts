/**
 * Refusing a connection with a whole raw HTTP answer, where there is no response object: Node's
 * client errors (a malformed request, a request not in within the header or body timeout) and
 * refused WebSocket upgrades. The answer is written and the socket then closed for good: the
 * server's sockets allow half-open connections, so `end()` alone only half-closes one and a peer
 * that never closes its side would keep its file descriptor for as long as it likes.
 */
import type { Duplex } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import type { RpcError } from '../jsonrpc/errors.js';
import { errorText } from '../jsonrpc/response.js';

/**
 * How long a refused peer has to read its answer before the socket is destroyed. The answer is a
 * few hundred bytes, in the kernel's send buffer at once; the grace only spares a peer that is
 * still sending the reset a close over unread input would give it before it read the answer
 * (HAProxy's and Node's own lingering close do the same).
 */
export const REFUSAL_GRACE_MS = 1_000;

/**
 * A whole HTTP answer refusing a request before there is a response object: the error's status, a
 * JSON-RPC error body with id null, and `connection: close`.
 */
export function rawRefusal(e: RpcError): string {
  const body = errorText('null', e);
  return `HTTP/1.1 ${e.http} ${STATUS_CODES[e.http]}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** Writes `answer` (a rawRefusal) and closes the socket: at once if it cannot be written, else after the grace. */
export function refuseSocket(socket: Duplex, answer: string): void {
  if (!socket.writable || socket.destroyed) {
    socket.destroy();
    return;
  }
  socket.end(answer);
  const timer = setTimeout(() => socket.destroy(), REFUSAL_GRACE_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}
