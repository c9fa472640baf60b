/**
 * PROXY protocol v1 (text) and v2 (binary) on a listener (`server.proxyProtocol`). An L4 balancer
 * that sends it puts the client's own address in front of each connection; without it, every
 * client behind a balancer that rewrites source addresses shares the balancer's IP (one bucket).
 *
 * Each new connection's first bytes are read before HTTP sees them:
 *   - a PROXY header from a peer in `server.trustedProxies`: the header's source address is the
 *     connection's client address (for rate limits, logs and X-Forwarded-For walking); a v2 LOCAL
 *     command (the balancer's own health check) or an UNKNOWN/unspecified family keeps the peer's;
 *   - a PROXY header from any other peer: refused (closed), since anyone could claim any address;
 *   - no header: plain HTTP from the socket's own address, as with the option off;
 *   - a malformed header, one longer than the protocol allows, or none complete within
 *     `timeoutMs`: refused.
 * The header is parsed by proxy-protocol-js; this file only frames it and decides.
 */
import { isIP, type Socket } from 'node:net';
import pp from 'proxy-protocol-js';
import type { ProxyRefusal } from '../metrics/labels.js';

const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V1_PREFIX = Buffer.from('PROXY ');
/** The longest v1 line, CRLF included (the protocol's own bound). */
const V1_MAX_BYTES = 107;
/** v2: signature, version/command, family, 2-byte length. */
const V2_FIXED_BYTES = 16;
/** v2 addresses and TLVs: more than any balancer sends. */
const V2_MAX_BYTES = V2_FIXED_BYTES + 1_024;

export interface ProxyProtocolOptions {
  /** Whether a peer may send a header (server.trustedProxies, read on every connection: reloads apply). */
  trusted: (peer: string) => boolean;
  /** How long a connection has to send its header (or its first bytes). */
  timeoutMs: number;
  refused: (why: ProxyRefusal) => void;
}

/** Client addresses carried by a header, by socket. */
const carried = new WeakMap<Socket, string>();

/** The connection's client address: the one a trusted PROXY header carried, else the socket's peer. */
export function peerAddress(socket: Socket): string | undefined {
  return carried.get(socket) ?? socket.remoteAddress;
}

/** What the first bytes say: undecided yet, no header, or a header of `length` bytes. */
type Framing = { need: true } | { plain: true } | { header: Buffer; rest: Buffer } | { bad: true };

function frame(buf: Buffer): Framing {
  if (startsLike(buf, V1_PREFIX)) {
    if (buf.length < V1_PREFIX.length) return { need: true };
    const end = buf.indexOf('\r\n');
    if (end < 0) return buf.length >= V1_MAX_BYTES ? { bad: true } : { need: true };
    if (end + 2 > V1_MAX_BYTES) return { bad: true };
    return { header: buf.subarray(0, end + 2), rest: buf.subarray(end + 2) };
  }
  if (startsLike(buf, V2_SIGNATURE)) {
    if (buf.length < V2_FIXED_BYTES) return { need: true };
    const length = V2_FIXED_BYTES + buf.readUInt16BE(14);
    if (length > V2_MAX_BYTES) return { bad: true };
    if (buf.length < length) return { need: true };
    return { header: buf.subarray(0, length), rest: buf.subarray(length) };
  }
  return { plain: true };
}

/** Whether `buf` is a prefix of `sig` or starts with it. */
function startsLike(buf: Buffer, sig: Buffer): boolean {
  const n = Math.min(buf.length, sig.length);
  return buf.subarray(0, n).equals(sig.subarray(0, n));
}

/** The source address a header carries, or null when it names none (LOCAL, UNKNOWN, unspecified). */
export function sourceOf(header: Buffer): string | null {
  if (header[0] === V1_PREFIX[0]) {
    const text = header.toString('latin1');
    if (text.startsWith('PROXY UNKNOWN')) return null;
    const v1 = pp.V1ProxyProtocol.parse(text);
    const ip = v1.source.ipAddress;
    if (isIP(ip) === 0) throw new Error('not an IP address');
    return ip;
  }
  const v2 = pp.V2ProxyProtocol.parse(new Uint8Array(header.buffer, header.byteOffset, header.length));
  if (v2.command === pp.Command.LOCAL) return null;
  const a = v2.proxyAddress;
  if (a instanceof pp.IPv4ProxyAddress) return a.sourceAddress.address.join('.');
  if (a instanceof pp.IPv6ProxyAddress) return ipv6Text(a.sourceAddress.address);
  return null;
}

function ipv6Text(bytes: readonly number[]): string {
  // An IPv4-mapped address is that IPv4 client.
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff)
    return bytes.slice(12).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  // The URL parser writes the canonical (compressed) form.
  return new URL(`http://[${groups.join(':')}]`).hostname.slice(1, -1);
}

/**
 * Reads a PROXY header (or its absence) off a new connection before HTTP does, then `next` with
 * the bytes after the header (the connection pipeline puts them back: connection-pipeline.ts); or
 * refuses the connection.
 */
export function readProxyHeader(
  socket: Socket,
  opts: ProxyProtocolOptions,
  next: (socket: Socket, rest: Buffer) => void,
): void {
  let buf: Buffer = Buffer.alloc(0);
  const done = (): void => {
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('error', onError);
  };
  const refuse = (why: ProxyRefusal): void => {
    done();
    opts.refused(why);
    socket.destroy();
  };
  const handOver = (rest: Buffer): void => {
    done();
    next(socket, rest);
  };
  const onData = (chunk: Buffer): void => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    const f = frame(buf);
    if ('need' in f) return;
    if ('plain' in f) return handOver(buf);
    if ('bad' in f) return refuse('bad_header');
    const peer = socket.remoteAddress ?? '';
    if (!opts.trusted(peer)) return refuse('untrusted_header');
    let source: string | null;
    try {
      source = sourceOf(f.header);
    } catch {
      return refuse('bad_header');
    }
    if (source !== null) carried.set(socket, source);
    handOver(f.rest);
  };
  // A peer that goes away before deciding is simply gone: nothing to refuse or count.
  const onError = (): void => {
    done();
    socket.destroy();
  };
  const timer = setTimeout(() => refuse('timeout'), opts.timeoutMs);
  socket.on('data', onData);
  socket.on('error', onError);
  socket.once('close', () => clearTimeout(timer));
}
