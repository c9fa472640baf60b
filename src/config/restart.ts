/**
 * Which options a reload (SIGHUP, POST /-/reload) cannot change: every other option of the schema
 * takes effect on reload. docs/configuration.md ("Reload") lists the same keys, and a test holds
 * the two equal.
 * Owns: the list, and the running configuration a reload leads to. Refuses: applying it (app.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import type { Config } from './schema.js';

/**
 * Read once at start. Listening addresses and PROXY protocol shape the listeners; the chain id
 * labels every metric and is what nodes are checked against; the cache's entries were judged
 * immutable under its finalityDepth and some sit in Redis, so changing it under them would serve
 * answers judged by another rule; `redis` carries the heads shared between replicas; the uptime
 * store is one open file; the tracing exporter and its queue are built once (sampleRate and slowMs
 * reload); `devnet` is read by `switchyard start` before the proxy runs.
 * (cache.redis and rateLimit.redis fall back to `redis`: the cache's keeps the start value with the
 * cache, the rate limits' reloads with them.)
 */
export const RESTART_KEYS = [
  'chainId',
  'server.host',
  'server.port',
  'server.wsPort',
  'server.proxyProtocol',
  'admin.host',
  'admin.port',
  'cache.maxBytes',
  'cache.finalityDepth',
  'cache.redis',
  'redis',
  'uptime.enabled',
  'uptime.store',
  'tracing.enabled',
  'tracing.endpoint',
  'tracing.headers',
  'tracing.serviceName',
  'tracing.resourceAttributes',
  'tracing.maxQueueSize',
  'tracing.maxExportBatchSize',
  'tracing.exportTimeoutMs',
  'devnet',
] as const;

export type RestartKey = (typeof RESTART_KEYS)[number];

type Tree = Readonly<Record<string, unknown>>;

function valueAt(config: Config, key: RestartKey): unknown {
  let v: unknown = config;
  for (const part of key.split('.')) v = (v as Tree)[part];
  return v;
}

/** A copy of `tree` with `value` at `path`: frozen objects along the path are copied, the rest shared. */
function withValue(tree: Tree, path: readonly string[], value: unknown): Tree {
  const [head, ...rest] = path as [string, ...string[]];
  return Object.freeze({ ...tree, [head]: rest.length === 0 ? value : withValue(tree[head] as Tree, rest, value) });
}

/**
 * The configuration a reload from `running` to `next` runs with: `next`, except that every
 * restart key keeps its running value. `kept`: the restart keys the file changed (a warning names
 * them). What the process runs is then exactly what `config` says.
 */
export function reloadedConfig(running: Config, next: Config): { config: Config; kept: RestartKey[] } {
  const kept = RESTART_KEYS.filter((k) => !isDeepStrictEqual(valueAt(running, k), valueAt(next, k)));
  let config = next as unknown as Tree;
  for (const k of kept) config = withValue(config, k.split('.'), valueAt(running, k));
  return { config: config as unknown as Config, kept };
}

/** The top-level sections whose values differ (for the reload's debug line). */
export function changedSections(a: Config, b: Config): string[] {
  return (Object.keys(b) as (keyof Config)[]).filter((k) => !isDeepStrictEqual(a[k], b[k]));
}
