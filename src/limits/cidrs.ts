/**
 * CIDR lists (trusted proxies, rate-limit exemptions) as a node:net BlockList. Checked when built,
 * with the option's name, so a bad entry reads "expected an IP or CIDR" rather than a RangeError.
 */
import { BlockList, isIP } from 'node:net';

export function cidrList(option: string, cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const c of cidrs) {
    const [addr, bits, extra] = c.split('/') as [string, string | undefined, string | undefined];
    const v = isIP(addr);
    const prefix = bits === undefined ? null : Number(bits);
    const max = v === 6 ? 128 : 32;
    if (v === 0 || extra !== undefined || (prefix !== null && (!/^\d{1,3}$/.test(bits!) || prefix > max))) {
      throw new Error(`${option}: expected an IP or CIDR, got ${JSON.stringify(c)}`);
    }
    const family = v === 6 ? 'ipv6' : 'ipv4';
    if (prefix === null) list.addAddress(addr, family);
    else list.addSubnet(addr, prefix, family);
  }
  return list;
}

/** Whether `ip` is in `list`; anything that is not an IP address is not. */
export function inList(list: BlockList, ip: string): boolean {
  const v = isIP(ip);
  return v !== 0 && list.check(ip, v === 6 ? 'ipv6' : 'ipv4');
}
