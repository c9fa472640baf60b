/**
 * Filter ids that carry their node (SPEC 4.4): `0x` + 8 hex digits of a hash of the upstream's
 * configured name + the node's own id digits. Any replica with the same upstream names finds the
 * node again with no shared state. An id whose node is unknown or not routable is "filter not found".
 */
import type { Upstream } from '../upstream/node.js';
import { hash } from './select.js';

const TAG_DIGITS = 8;

export function tagOf(u: Upstream): string {
  return hash(u.name).toString(16).padStart(TAG_DIGITS, '0');
}

/** Wraps the node's filter id (raw JSON string text) into Switchyard's; null when it is not a hex id. */
export function wrapFilterId(u: Upstream, rawResult: string): string | null {
  const m = /^"0x([0-9a-fA-F]+)"$/.exec(rawResult);
  return m ? `"0x${tagOf(u)}${m[1]}"` : null;
}

/** Splits Switchyard's filter id into the upstream that holds it and the node's own id. */
export function unwrapFilterId(
  id: unknown,
  upstreams: readonly Upstream[],
): { upstream: Upstream; nodeId: string } | null {
  if (typeof id !== 'string') return null;
  const m = /^0x([0-9a-fA-F]{8})([0-9a-fA-F]+)$/.exec(id);
  if (!m) return null;
  const tag = m[1]!.toLowerCase();
  const upstream = upstreams.find((u) => tagOf(u) === tag);
  return upstream ? { upstream, nodeId: `0x${m[2]}` } : null;
}
