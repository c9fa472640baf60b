/**
 * What identifies a request in logs and answers: its X-Request-Id (the client's, when it is a plain
 * token, else our own) and its user agent as logged.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Request ids: unique within the process, distinct across restarts by a random prefix. */
const ID_PREFIX = randomBytes(3).toString('hex');
let requestSeq = 0;
function nextRequestId(): string {
  return `${ID_PREFIX}-${(++requestSeq).toString(36)}`;
}

/**
 * A client's (or its balancer's) X-Request-Id is kept when it is a plain token (1-128 of letters,
 * digits and `-_.:/+=`), so a call can be followed across systems; anything else gets our own id.
 */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:/+=-]{1,128}$/;
export function requestIdOf(req: Pick<IncomingMessage, 'headers'>): string {
  const sent = req.headers['x-request-id'];
  return typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : nextRequestId();
}

/** The user agent as logged: bounded, so a client cannot write a megabyte into every line. */
export function userAgentOf(req: Pick<IncomingMessage, 'headers'>): string | undefined {
  const ua = req.headers['user-agent'];
  return ua === undefined ? undefined : ua.length > 200 ? `${ua.slice(0, 200)}...` : ua;
}
