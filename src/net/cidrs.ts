/**
 * CIDR entries (trusted proxies, rate-limit exemptions): the one reading of "an IP or CIDR", used
 * by the config schema to judge an entry and here to build a node:net BlockList. Checked when
 * built, with the option's name, so a bad entry reads "expected an IP or CIDR" rather than a
 * RangeError. The ground floor (net/): config, limits and server all read addresses through it,
 * so it imports none of them.
 */
import { BlockList, isIP } from 'node:net';

export interface Cidr {
  addr: string;
  family: 'ipv4' | 'ipv6';
  /** null: the single address. */
  prefix: number | null;
}

/** An IP address, or address/prefix with a prefix its family allows (<= 32 or <= 128); null otherwise. */
export function parseCidr(c: string): Cidr | null {
  const [addr, bits, extra] = c.split('/') as [string, string | undefined, string | undefined];
  const v = isIP(addr);
  if (v === 0 || extra !== undefined) return null;
  const family = v === 6 ? 'ipv6' : 'ipv4';
  if (bits === undefined) return { addr, family, prefix: null };
  const prefix = Number(bits);
  return /^\d{1,3}$/.test(bits) && prefix <= (v === 6 ? 128 : 32) ? { addr, family, prefix } : null;
}

export function cidrList(option: string, cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const c of cidrs) {
    const cidr = parseCidr(c);
    if (cidr === null) throw new Error(`${option}: expected an IP or CIDR, got ${JSON.stringify(c)}`);
    if (cidr.prefix === null) list.addAddress(cidr.addr, cidr.family);
    else list.addSubnet(cidr.addr, cidr.prefix, cidr.family);
  }
  return list;
}

/** Whether `ip` is in `list`; anything that is not an IP address is not. */
export function inList(list: BlockList, ip: string): boolean {
  const v = isIP(ip);
  return v !== 0 && list.check(ip, v === 6 ? 'ipv6' : 'ipv4');
}

/**
 * Who a per-IP limit counts: the address itself for IPv4, its /64 for IPv6 (one subscriber's
 * allocation: a client holding a /64 could otherwise take a fresh budget with every address in it).
 * `2001:db8:1:2::5` and `2001:db8:1:2:ffff::` both count as `2001:db8:1:2::/64`.
 */
export function limitKey(ip: string): string {
  if (!ip.includes(':') || isIP(ip) !== 6) return ip;
  const addr = ip.split('%', 1)[0]!;
  const [left, right] = addr.split('::') as [string, string | undefined];
  const groups = left === '' ? [] : left.split(':');
  if (right !== undefined) {
    // The groups '::' stands for; an embedded IPv4 tail is the last two groups, never in the /64.
    const tail = right === '' ? [] : right.split(':');
    const tailGroups = tail.length + (tail.length > 0 && tail[tail.length - 1]!.includes('.') ? 1 : 0);
    for (let i = groups.length + tailGroups; i < 8; i++) groups.push('0');
    groups.push(...tail);
  }
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
