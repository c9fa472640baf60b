/**
 * Request directives (SPEC 13): headers with which a trusted caller, one whose API key entry has
 * `directives: true` (rateLimit.apiKeys[]), steers one HTTP request while chasing a problem:
 * - `X-Switchyard-Use-Upstream: NAME`: the request's node calls go to that node only, no failover
 *   to another; -32002 when it is unknown or not eligible for a call (routing/pinned.ts). The
 *   cache may still answer.
 * - `X-Switchyard-Skip-Cache: true`: no cache read (memory or Redis) and no joining an identical
 *   call in flight; the answer may still be stored.
 * - `X-Switchyard-Trace: force`: the request's trace is recorded and exported whatever the sample
 *   (when tracing is on).
 * From anyone else they are ignored and counted (switchyard_directives_ignored_total), as they are
 * on a WebSocket upgrade: a connection outlives the one request a directive is meant for, and its
 * frames carry no headers. Read once per request: three header lookups, nothing made when none
 * is there. Refuses: what a pinned call may be sent to (routing/pinned.ts), sampling (tracing/).
 */
import type { Directive } from '../metrics/labels.js';
import type { Metrics } from '../metrics/registry.js';
import type { RequestContext } from '../pipeline/index.js';
import type { RequestTrace } from '../tracing/index.js';

/** A request's headers as Node gives them (IncomingHttpHeaders). */
export type DirectiveHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** Upstream names are at most 64 characters (config/schema.ts): a longer value names none. */
const MAX_NAME = 64;

export interface DirectiveDeps {
  /** API keys whose entry has `directives: true`. */
  directiveKeys?: ReadonlySet<string>;
  metrics: Metrics;
}

/**
 * Applies the directives `headers` carry to the request's context and trace when `apiKey` may send
 * them, else counts each as ignored.
 */
export function applyDirectives(
  headers: DirectiveHeaders,
  apiKey: string | undefined,
  d: DirectiveDeps,
  ctx: RequestContext,
  trace: RequestTrace | null | undefined,
): void {
  const use = headers['x-switchyard-use-upstream'];
  const skip = headers['x-switchyard-skip-cache'];
  const force = headers['x-switchyard-trace'];
  if (use === undefined && skip === undefined && force === undefined) return;
  if (apiKey === undefined || d.directiveKeys?.has(apiKey) !== true) return ignored(d.metrics, use, skip, force);
  const applied: Directive[] = [];
  if (use !== undefined) {
    // A value that is no upstream's name (too long, repeated) names the unknown upstream '': -32002.
    ctx.useUpstream = typeof use === 'string' && use.length <= MAX_NAME ? use.trim() : '';
    applied.push('use_upstream');
  }
  if (typeof skip === 'string' && skip.trim().toLowerCase() === 'true') {
    ctx.skipCache = true;
    applied.push('skip_cache');
  }
  if (typeof force === 'string' && force.trim().toLowerCase() === 'force') {
    trace?.force();
    applied.push('trace');
  }
  // The trace says how the request was steered (the directives' names, never the values sent).
  if (trace && applied.length > 0) trace.applied(applied.join(','));
}

/** A WebSocket upgrade's directives: ignored, whoever sends them, and counted. */
export function ignoreUpgradeDirectives(headers: DirectiveHeaders, metrics: Metrics): void {
  ignored(
    metrics,
    headers['x-switchyard-use-upstream'],
    headers['x-switchyard-skip-cache'],
    headers['x-switchyard-trace'],
  );
}

function ignored(metrics: Metrics, use: unknown, skip: unknown, force: unknown): void {
  if (use !== undefined) metrics.recordDirectiveIgnored('use_upstream');
  if (skip !== undefined) metrics.recordDirectiveIgnored('skip_cache');
  if (force !== undefined) metrics.recordDirectiveIgnored('trace');
}
