/**
 * Value checks the schema (schema.ts) uses that are more than a type: URLs a node client can be
 * built from, readable files, and listeners that would take the same port.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';

export const httpUrl = z
  .string()
  .refine((s) => /^https?:\/\/[^\s/]+/i.test(s) && URL.canParse(s), {
    error: (iss) => `expected an http(s) URL, got ${JSON.stringify(iss.input)}`,
    abort: true,
  })
  // Credentials in the URL are decoded into a Basic header (upstream/client.ts): a `%` that starts
  // no valid escape would throw there, at start or on reload, instead of here.
  .refine((s) => credentialsDecode(new URL(s)), {
    error: 'expected user:password in the URL to be percent-encoded (write % as %25)',
  });

function credentialsDecode(u: URL): boolean {
  try {
    decodeURIComponent(u.username);
    decodeURIComponent(u.password);
    return true;
  } catch {
    return false;
  }
}

/** A regular file this process can read (a directory or an unreadable file fails only at connect). */
export function readableFile(f: string): boolean {
  try {
    accessSync(f, constants.R_OK);
    return statSync(f).isFile();
  } catch {
    return false;
  }
}
export const wsUrl = z.string().refine((s) => /^wss?:\/\/[^\s/]+/i.test(s) && URL.canParse(s), {
  error: (iss) => `expected a ws(s) URL, got ${JSON.stringify(iss.input)}`,
});
export const redisUrl = z
  .string()
  .refine((s) => /^rediss?:\/\/[^\s]+/i.test(s) && URL.canParse(s), {
    error: (iss) => `expected a redis:// URL or null, got ${JSON.stringify(iss.input)}`,
  })
  .nullable();

/**
 * Whether two listening hosts surely take the same port (Linux, dual-stack by default): the same
 * address, `::` (or an empty host, which Node binds as `::`) against any, or `0.0.0.0` against an
 * IPv4 address. `0.0.0.0` is IPv4 only, so it and `::1` (or 127.0.0.1 and `::1`) share a port. A
 * name is compared only by its spelling: `localhost` is 127.0.0.1 on one system and `::1` on
 * another (Node listens on the first address the resolver gives), so it clashes only with itself
 * and `::`; a clash the check cannot be sure of still fails at start, naming the listener.
 */
function hostsOverlap(a: string, b: string): boolean {
  const [x, y] = [canonicalHost(a), canonicalHost(b)];
  if (x === y || x === '::' || y === '::') return true;
  return (x === '0.0.0.0' && isIPv4(y)) || (y === '0.0.0.0' && isIPv4(x));
}

/** An IPv6 address in one spelling (`0:0::1` is `::1`), an empty host as `::`, anything else as written. */
function canonicalHost(h: string): string {
  if (h === '') return '::';
  if (!isIPv6(h)) return h.toLowerCase();
  try {
    return new URL(`http://[${h}]`).hostname.slice(1, -1);
  } catch {
    return h;
  }
}

/**
 * Listeners that would take the same port (EADDRINUSE at start, with no key path). Port 0 asks the
 * system for a free port, so it never clashes.
 */
export function portClashes(
  server: { host: string; port: number; wsPort: number | null },
  admin: { host: string; port: number },
): { path: PropertyKey[]; message: string }[] {
  const out: { path: PropertyKey[]; message: string }[] = [];
  if (server.wsPort !== null && server.wsPort !== 0 && server.wsPort === server.port) {
    out.push({
      path: ['server', 'wsPort'],
      message: `expected a port other than server.port, got ${server.wsPort} for both`,
    });
  }
  if (admin.port !== 0 && hostsOverlap(admin.host, server.host)) {
    if (admin.port === server.port)
      out.push({
        path: ['admin', 'port'],
        message: `expected a port other than server.port on an overlapping host, got ${admin.port} for both`,
      });
    else if (admin.port === server.wsPort)
      out.push({
        path: ['admin', 'port'],
        message: `expected a port other than server.wsPort on an overlapping host, got ${admin.port} for both`,
      });
  }
  return out;
}

/** A fleet of shadow upstreams only could answer no client (a shadow never does: routing/shadow.ts). */
export function shadowsOnly(upstreams: readonly { shadow: boolean }[]): { path: PropertyKey[]; message: string }[] {
  if (upstreams.length === 0 || !upstreams.every((u) => u.shadow)) return [];
  return [
    {
      path: ['upstreams'],
      message: 'expected at least one upstream without shadow: true (a shadow never answers clients)',
    },
  ];
}
