/**
 * Refusing a connection with a whole raw HTTP answer, where there is no response object: Node's
 * client errors (a malformed request, a request not in within the header or body timeout) and
 * refused WebSocket upgrades. The answer is written and the connection then closed for good with a
 * lingering close (linger.ts): the client's bytes still on their way are read and dropped within
 * bounds, so the answer is not lost to a reset, and a peer that never closes its side does not
 * keep its file descriptor (the server's sockets allow half-open connections).
 */
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import type { RpcError } from '../jsonrpc/errors.js';
import { errorText } from '../jsonrpc/response.js';
import type { Lingering } from './linger.js';

/**
 * A whole HTTP answer refusing a request before there is a response object: the error's status, a
 * JSON-RPC error body with id null, and `connection: close`.
 */
export function rawRefusal(e: RpcError): string {
  const body = errorText('null', e);
  return `HTTP/1.1 ${e.http} ${STATUS_CODES[e.http]}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/**
 * Writes `answer` (a rawRefusal) and closes the socket with a linger. Not when an answer is
 * already being written on it (node:http's response in flight, its head sent: the refusal's bytes
 * would land inside that answer's body) nor when it lingers already (its last answer went out):
 * then that answer is let finish and the connection is closed after it (with a linger), or only
 * closed when it cannot finish.
 */
export function refuseSocket(socket: Duplex, answer: string, lingering: Lingering): void {
  if (lingering.has(socket)) return;
  // Node's default handler reads the same field: the response node:http is writing on the socket.
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (inFlight != null && inFlight.headersSent && !inFlight.writableFinished && !socket.destroyed) {
    // A valid call's answer is on its way: it goes out whole, then the connection closes (Node's
    // own handler destroys the socket here, cutting that answer short). The parser has failed, so
    // nothing more is read as a request meanwhile.
    inFlight.once('finish', () => lingering.close(socket));
    return;
  }
  if (!socket.writable || socket.destroyed || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  socket.write(answer);
  lingering.close(socket);
}
