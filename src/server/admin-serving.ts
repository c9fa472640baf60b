/**
 * What /status says of what one upstream can serve (SPEC 4.8): its earliest block with state, its
 * capabilities, each with where it came from (`configured` tags or `discovered` by probing it:
 * upstream/discovery.ts), and the methods it refused as unknown since its last discovery.
 */
import type { Upstream } from '../upstream/node.js';
import type { Capability, Source } from '../upstream/serving.js';

const CAPABILITIES: readonly Capability[] = ['archive', 'debug'];

export interface ServingLine {
  /** null: unknown (not discovered yet, or the node's answers could not tell): every read may go to it. */
  earliestBlock: number | null;
  earliestBlockFrom: Source | null;
  /** The capabilities it has, each with where that came from. */
  capabilities: Partial<Record<Capability, Source>>;
  unsupportedMethods: string[];
  /** When its last discovery run ended (ISO 8601), or null. */
  discoveredAt: string | null;
}

export function servingLine(u: Upstream): ServingLine {
  const capabilities: Partial<Record<Capability, Source>> = {};
  for (const c of CAPABILITIES) {
    const from = u.serving.source(c);
    if (from !== null) capabilities[c] = from;
  }
  const at = u.serving.discoveredAt;
  return {
    earliestBlock: u.earliestBlock,
    earliestBlockFrom: u.serving.earliestSource(),
    capabilities,
    unsupportedMethods: u.serving.unsupported(),
    discoveredAt: at === null ? null : new Date(at).toISOString(),
  };
}
