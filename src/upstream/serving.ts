/**
 * What one node can serve (SPEC 4.8): its earliest block with state, its capabilities (`archive`,
 * `debug`) and the methods of Switchyard's table it refused as unknown, each with where it came
 * from: `configured` (upstreams[].tags) or `discovered` (discovery.ts probes, and -32601 answers
 * learned on the way). Configured tags win over what was found; with upstreams[].discover false
 * only the tags count and nothing is learned.
 * Owns: the findings of the last discovery run, the learned refusals, the earliest block now.
 * Refuses: probing (discovery.ts), choosing nodes (routing/select.ts).
 */
import type { UpstreamConfig } from '../config/schema.js';
import { METHODS } from '../methods/table.js';

export type Capability = 'archive' | 'debug';
export type Source = 'configured' | 'discovered';

/** Refused methods kept per node at most: the method table is smaller, so every one fits. */
export const MAX_REFUSED_METHODS = 128;

/** One discovery run's findings: null where the probes could not tell. */
export interface Findings {
  /** Its earliest block with state, and its head when that was found. */
  earliest: { block: number; atHead: number } | null;
  /** debug_traceBlockByNumber of a recent block was answered with a result. */
  debug: boolean;
}

export class Serving {
  private findings: Findings | null = null;
  private refused = new Set<string>();
  /** When the last discovery run ended (ms since the epoch), or null before the first. */
  discoveredAt: number | null = null;

  constructor(private readonly config: UpstreamConfig) {}

  /** Where the node's capability comes from, or null when it has none known. */
  source(c: Capability): Source | null {
    if (this.config.tags.includes(c)) return 'configured';
    if (!this.config.discover || this.findings === null) return null;
    if (c === 'debug') return this.findings.debug ? 'discovered' : null;
    return this.findings.earliest?.block === 0 ? 'discovered' : null;
  }

  has(c: Capability): boolean {
    return this.source(c) !== null;
  }

  /** Where its earliest block comes from: `configured` for an `archive` tag; null while unknown. */
  earliestSource(): Source | null {
    if (this.config.tags.includes('archive')) return 'configured';
    return this.config.discover && this.findings?.earliest != null ? 'discovered' : null;
  }

  /**
   * Its earliest block with state while its head is `head`, or null when unknown (then it is sent
   * any read). A pruned node keeps the state of its last blocks: the window found moves up with its
   * head. The window was measured against the head once the search ended, so it is never narrower
   * than the node's own: the bound never passes over a block the node still has.
   */
  earliestBlock(head: number): number | null {
    const from = this.earliestSource();
    if (from === null) return null;
    const e = this.findings?.earliest;
    if (from === 'configured' || e == null || e.block === 0) return 0;
    return e.block + Math.max(0, head - e.atHead);
  }

  /** Whether it answered -32601 for `method` since its last discovery run. */
  refuses(method: string): boolean {
    return this.refused.size > 0 && this.refused.has(method);
  }

  /** Methods it refused, sorted. */
  unsupported(): string[] {
    return [...this.refused].sort();
  }

  /**
   * It answered -32601 "method not found" for `method`: not sent it again until its next discovery
   * run. Only methods of Switchyard's table are kept (an allowed extension is the client's name).
   * True when this is news.
   */
  refuse(method: string): boolean {
    if (!this.config.discover || !Object.hasOwn(METHODS, method) || this.refused.has(method)) return false;
    if (this.refused.size >= MAX_REFUSED_METHODS) return false;
    this.refused.add(method);
    return true;
  }

  /** A discovery run ended: its findings replace the last ones, and the refusals are learned afresh. */
  discovered(f: Findings, at: number): void {
    this.findings = f;
    this.refused = new Set();
    this.discoveredAt = at;
  }
}
