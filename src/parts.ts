/**
 * Optional parts (SPEC 9): what a feature needs that a production install may leave out
 * (`npm install --omit=optional`). The OpenTelemetry SDK and exporter are loaded only in the
 * tracing export thread, anvil only by the devnet; asking for the feature when its part is missing
 * is one line naming what to install, found before anything starts (main.ts exits 2 on it).
 * Owns: which feature needs which packages, and finding them. Refuses: loading them.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Config } from './config/schema.js';
import { anvilBinary } from './devnet/node.js';

/** Imported by tracing/export-thread.ts only; `@opentelemetry/api` and `core` (W3C headers) are not optional. */
export const TRACING_PACKAGES = [
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/semantic-conventions',
] as const;

function installed(pkg: string): boolean {
  try {
    import.meta.resolve(pkg);
    return true;
  } catch {
    return false;
  }
}

function onPath(exe: string, path: string): boolean {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    try {
      accessSync(join(dir, exe), constants.X_OK);
      return true;
    } catch {
      // not in this folder
    }
  }
  return false;
}

/** Why tracing cannot run here, or null when its packages are installed. */
export function tracingMissing(): string | null {
  const missing = TRACING_PACKAGES.filter((p) => !installed(p));
  if (missing.length === 0) return null;
  return `tracing.enabled needs ${missing.join(', ')} (optional dependencies, left out of this install): npm install ${missing.join(' ')}`;
}

/** Why the devnet cannot run here (no anvil package and no `anvil` on PATH), or null. */
export function devnetMissing(path = process.env.PATH ?? ''): string | null {
  const bin = anvilBinary();
  if (bin.includes('/') || onPath(bin, path)) return null;
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  return `the devnet needs anvil: npm install @foundry-rs/anvil-${process.platform}-${arch} (an optional dependency, left out of this install), or put anvil 1.7 on the PATH`;
}

/** The first missing part the configuration asks for (with `withDevnet`: the devnet too), or null. */
export function missingPart(config: Config, withDevnet: boolean): string | null {
  return (
    (config.tracing.enabled ? tracingMissing() : null) ??
    (withDevnet && config.devnet !== null ? devnetMissing() : null)
  );
}
