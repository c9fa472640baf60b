/**
 * CIDR entries (trusted proxies, rate-limit exemptions): the one reading of "an IP or CIDR", used
 * by the config schema to judge an entry and here to build a node:net BlockList. Checked when
 * built, with the option's name, so a bad entry reads "expected an IP or CIDR" rather than a
 * RangeError.
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
