/**
 * The client's IP: the socket's peer address, unless that peer is a trusted proxy, in which case
 * X-Forwarded-For is walked right to left past trusted hops and the first untrusted address is the
 * client. The left-most entry is never trusted on its own: any client can write it.
 */
import { type BlockList, isIP } from 'node:net';
import { cidrList, inList } from '../net/cidrs.js';

export class ClientIp {
  private readonly trusted: BlockList;
  private readonly any: boolean;

  constructor(cidrs: readonly string[]) {
    this.trusted = cidrList('server.trustedProxies', cidrs);
    this.any = cidrs.length > 0;
  }

  /** Whether `ip` (a socket peer or a hop) is one of server.trustedProxies. */
  isTrusted(ip: string): boolean {
    return inList(this.trusted, normalize(ip));
  }

  resolve(peer: string | undefined, forwardedFor: string | string[] | undefined): string {
    const socketIp = normalize(peer ?? 'unknown');
    if (!this.any || forwardedFor === undefined || !this.isTrusted(socketIp)) return socketIp;
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor)
      .split(',')
      .map((h) => normalize(withoutPort(h.trim())))
      .filter((h) => h !== '');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!;
      if (isIP(hop) === 0) return socketIp;
      if (!this.isTrusted(hop)) return hop;
    }
    return hops[0] ?? socketIp;
  }
}

/** `::ffff:1.2.3.4` is the IPv4 client 1.2.3.4: one client, one bucket. */
function normalize(ip: string): string {
  return ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
}

/**
 * Some proxies write a hop with its port: `1.2.3.4:5678`, or `[2001:db8::1]:443` (IPv6 is
 * bracketed when a port follows, so a bare IPv6 address never has one). The port is dropped; a hop
 * that is no address even then is left as it was, to be judged as garbage.
 */
function withoutPort(hop: string): string {
  const v6 = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(hop);
  if (v6 !== null) return isIP(v6[1]!) === 6 ? v6[1]! : hop;
  const v4 = /^([\d.]+):\d{1,5}$/.exec(hop);
  return v4 !== null && isIP(v4[1]!) === 4 ? v4[1]! : hop;
}
