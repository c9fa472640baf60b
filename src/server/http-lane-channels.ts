/**
 * node:http's diagnostics_channel events for the requests the plain lane reads (http-lane.ts), so
 * an APM agent listening to them sees every request, not only node:http's. Node publishes, for a
 * request its server reads: `http.server.response.created` ({ request, response }, from the
 * ServerResponse constructor), then `http.server.request.start` ({ request, response, socket,
 * server }) before the request is handled, and `http.server.response.finish` (the same four) when
 * the answer is written. The lane does the same with the same kinds of object: while one of the
 * three channels has a subscriber, a request it reads is made an IncomingMessage (its body already
 * read: ended) and answered through a ServerResponse on the connection (http-lane-reply.ts `full`),
 * which an agent can read, add headers to and watch finish as it would node:http's.
 * With no subscriber (the usual case) nothing of this runs: one `hasSubscribers` test a request.
 */
import { channel } from 'node:diagnostics_channel';
import { IncomingMessage, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

const requestStart = channel('http.server.request.start');
const responseCreated = channel('http.server.response.created');
const responseFinish = channel('http.server.response.finish');

/** Whether anything listens to node:http's server channels now. */
export function laneObserved(): boolean {
  return requestStart.hasSubscribers || responseFinish.hasSubscribers || responseCreated.hasSubscribers;
}

/** A plain request as node:http makes one: an IncomingMessage whose whole body was read already. */
export function observedRequest(socket: Socket, url: string, headers: IncomingHttpHeaders): IncomingMessage {
  const req = new IncomingMessage(socket);
  req.method = 'POST';
  req.url = url;
  req.headers = headers;
  req.rawHeaders = Object.entries(headers).flatMap(([name, value]) => [name, String(value)]);
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  req.httpVersion = '1.1';
  req.complete = true;
  // The body was read by the lane: for a reader, this stream is at its end.
  req.push(null);
  return req;
}

type Answered = Pick<IncomingMessage, 'socket'>;

export function publishRequestStart(request: Answered, response: ServerResponse, server: Server): void {
  if (requestStart.hasSubscribers) requestStart.publish({ request, response, socket: request.socket, server });
}

/** The answer is written; like node:http, an unread request is then read to its end (`_dump`). */
export function publishResponseFinish(request: Answered, response: ServerResponse, server: Server): void {
  if (responseFinish.hasSubscribers) responseFinish.publish({ request, response, socket: request.socket, server });
  if (request instanceof IncomingMessage && !request.readableEnded) request.resume();
}
