/**
 * Which Host headers the admin port answers (DNS rebinding). A page on another site can point a
 * name of its own at 127.0.0.1 and have the browser send requests to the admin port under that
 * name; the Host header then carries the attacker's name, never an address. So, as geth's
 * `--http.vhosts` does, the port answers: no Host (HTTP/1.0 health checks such as HAProxy's
 * `option httpchk`), an IP address (Kubernetes probes and Prometheus send the pod's), `localhost`,
 * `admin.host` when it is a name, and the names in `admin.allowedHosts` (`*`: any).
 */
import { isIP } from 'node:net';

/** The host part of a Host header, lower-cased, without port, brackets or a trailing dot. */
function hostName(header: string): string {
  const h = header.trim().toLowerCase();
  const v6 = /^\[([^\]]*)\](?::\d*)?$/.exec(h);
  if (v6 !== null) return v6[1]!;
  // A bare IPv6 address has more than one colon and no port.
  const name = h.split(':').length > 2 ? h : h.replace(/:\d*$/, '');
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

export function adminHostAllowed(header: string | undefined, adminHost: string, allowed: readonly string[]): boolean {
  if (header === undefined) return true;
  const name = hostName(header);
  if (isIP(name) !== 0 || name === 'localhost') return true;
  if (allowed.includes('*')) return true;
  return name === adminHost.toLowerCase() || allowed.some((a) => a.toLowerCase() === name);
}
