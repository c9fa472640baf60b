/**
 * Method policy (SPEC 4.6): which methods a client may call.
 * Default: the methods of the table. `methods.deny` wins over everything; `methods.allow` adds
 * methods (by name or `prefix*`) that are forwarded like plain reads; `methods.extensions` adds
 * service-specific methods that are forwarded and never cached. Either kind named like a trace
 * (`trace_*`, `debug_trace*`) is expensive and held, as the table's traces are. Methods acting with a node's keys
 * are refused even when allowed, because a proxy must never sign for anyone.
 */
import { heldName, METHODS, SIGNING_METHODS, type MethodSpec } from './table.js';

export interface PolicyConfig {
  allow: readonly string[];
  deny: readonly string[];
  extensions: readonly string[];
}

export interface Resolved {
  spec: MethodSpec;
  extension: boolean;
}

const EXTENSION_SPEC: MethodSpec = Object.freeze({ handling: 'read' });
/** An allowed trace (table.ts heldName): handled as the table's traces are, sent alone on the held lane. */
const HELD_EXTENSION_SPEC: MethodSpec = Object.freeze({ handling: 'read', expensive: true, held: true });

function forwarded(method: string): MethodSpec {
  return heldName(method) ? HELD_EXTENSION_SPEC : EXTENSION_SPEC;
}

function matcher(patterns: readonly string[]): (m: string) => boolean {
  const exact = new Set(patterns.filter((p) => !p.endsWith('*')));
  const prefixes = patterns.filter((p) => p.endsWith('*')).map((p) => p.slice(0, -1));
  return (m) => exact.has(m) || prefixes.some((p) => m.startsWith(p));
}

export class MethodPolicy {
  private readonly denied: (m: string) => boolean;
  private readonly allowed: (m: string) => boolean;
  private readonly extension: (m: string) => boolean;
  private readonly exactExtensions: ReadonlySet<string>;

  constructor(cfg: PolicyConfig) {
    this.denied = matcher(cfg.deny);
    this.allowed = matcher(cfg.allow);
    this.extension = matcher(cfg.extensions);
    this.exactExtensions = new Set(cfg.extensions.filter((p) => !p.endsWith('*')));
  }

  /**
   * Resolution and label of the table's methods and exact extensions, worked out once each (a
   * bounded set of names). A table lookup: the method is a fresh string per call, and a property
   * lookup would intern it first.
   */
  private readonly known = new Map<string, { resolved: Resolved | null; label: string }>();

  private lookup(method: string): { resolved: Resolved | null; label: string } {
    const known = this.known.get(method);
    if (known !== undefined) return known;
    const label = Object.hasOwn(METHODS, method) || this.exactExtensions.has(method) ? method : 'other';
    const found = { resolved: this.work(method), label };
    if (label !== 'other') this.known.set(method, found);
    return found;
  }

  /** The spec to handle `method` with, or null when the method is unknown or not allowed. */
  resolve(method: string): Resolved | null {
    return this.lookup(method).resolved;
  }

  private work(method: string): Resolved | null {
    if (SIGNING_METHODS.has(method) || this.denied(method)) return null;
    if (this.extension(method)) return { spec: forwarded(method), extension: true };
    const spec = METHODS[method];
    if (spec !== undefined && Object.hasOwn(METHODS, method)) return { spec, extension: false };
    if (this.allowed(method)) return { spec: forwarded(method), extension: false };
    return null;
  }

  /** A bounded metric label: known and configured names pass, anything a client invents is `other`. */
  label(method: string): string {
    return this.lookup(method).label;
  }
}
