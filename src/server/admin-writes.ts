/**
 * Who may write on the admin port (SPEC 9): every request other than GET and HEAD (POST /-/reload
 * and any write route beside it) is judged here, before routing, so no write route can skip the rule.
 * With `admin.token` set a write needs `Authorization: Bearer <token>` (401 otherwise); without one
 * it is accepted only from a loopback peer (403 otherwise): an admin port opened on 0.0.0.0 for the
 * kubelet's probes and Prometheus must not let any pod of the cluster write through it.
 * The peer is the TCP peer of the connection: the admin port reads no PROXY header and no
 * X-Forwarded-For, so nothing a client sends can make it look local.
 * A refused write is logged at warn (route, method, peer, reason; never the header) and counted in
 * switchyard_admin_writes_refused_total{reason}: someone knocking is what an operator wants to see.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BlockList } from 'node:net';
import type { Logger } from '../log/logger.js';
import type { WriteRefusalReason } from '../metrics/labels.js';
import type { Metrics } from '../metrics/registry.js';
import { sendJson } from './json-reply.js';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * 127.0.0.0/8, ::1, and 127.x written as an IPv4-mapped IPv6 address (::ffff:127.0.0.1: what a
 * listener on `::` reports for an IPv4 loopback peer); BlockList maps those to their IPv4 rule.
 */
export function isLoopbackPeer(address: string | undefined): boolean {
  if (address === undefined) return false;
  // A scope id (fe80::1%eth0) is no part of the address BlockList reads.
  const ip = address.split('%', 1)[0]!;
  try {
    return ip.includes(':') ? LOOPBACK.check(ip, 'ipv6') : LOOPBACK.check(ip, 'ipv4');
  } catch {
    return false;
  }
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * Whether an Authorization header carries `token` as a Bearer credential. Both sides are hashed
 * first: timingSafeEqual needs equal lengths, and comparing digests tells a timing observer
 * neither the token's length nor how much of it a guess got right.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^bearer +(\S+) *$/i.exec(header ?? '');
  return m !== null && timingSafeEqual(digest(m[1]!), digest(token));
}

export type WriteRefusal = { status: 401 | 403; reason: WriteRefusalReason; error: string };

/** A route as logged: the path alone (no query), cut short; it is whatever the client sent. */
const MAX_LOGGED_ROUTE = 120;

/** Why a write is refused (null: it may go on). The error never quotes the header or the token. */
export function writeRefusal(
  authorization: string | undefined,
  peer: string | undefined,
  token: string | null,
): WriteRefusal | null {
  if (token !== null) {
    if (bearerMatches(authorization, token)) return null;
    return {
      status: 401,
      reason: authorization === undefined ? 'no_token' : 'wrong_token',
      error:
        authorization === undefined
          ? 'admin writes need Authorization: Bearer <admin.token>'
          : 'admin writes need Authorization: Bearer <admin.token>: the token given is not it',
    };
  }
  if (isLoopbackPeer(peer)) return null;
  return {
    status: 403,
    reason: 'not_loopback',
    error: 'admin writes are accepted only from a loopback address while admin.token is not set',
  };
}

/** Where a refused write is told: the log (warn) and the metric. */
export interface RefusalSink {
  metrics: Pick<Metrics, 'recordAdminWriteRefused'>;
  log?: Logger;
}

/** Answers a refused write (true) or lets the request go on to routing (false). Reads always go on. */
export function refuseWrite(
  req: IncomingMessage,
  res: ServerResponse,
  token: string | null,
  sink: RefusalSink,
): boolean {
  if (req.method === 'GET' || req.method === 'HEAD') return false;
  const peer = req.socket.remoteAddress;
  const refusal = writeRefusal(req.headers.authorization, peer, token);
  if (refusal === null) return false;
  sink.metrics.recordAdminWriteRefused(refusal.reason);
  const route = ((req.url ?? '/').split('?', 1)[0] ?? '/').slice(0, MAX_LOGGED_ROUTE);
  sink.log?.warn(
    { route, method: req.method, peer: peer ?? null, reason: refusal.reason, status: refusal.status },
    'admin write refused',
  );
  req.resume();
  if (refusal.status === 401) res.setHeader('www-authenticate', 'Bearer');
  sendJson(res, refusal.status, { error: refusal.error });
  return true;
}
