/**
 * The request path: everything a request or a WebSocket frame reads from the configuration,
 * built from one validated Config and frozen. The HTTP and WebSocket fronts read the current path
 * once per request (per frame); a reload builds a new one and the app swaps one reference, so a
 * call keeps the path it started with and no request ever sees half of a reload.
 * Owns: building the path (front, pipeline, rate limits, client IPs, HTTP and WebSocket deps,
 * connection caps). Refuses: the long-lived parts it is built over (PathParts), and swapping.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { ResponseCache } from '../cache/index.js';
import type { Config } from '../config/schema.js';
import type { Concurrency } from '../limits/concurrency.js';
import type { ConnectionLimits } from '../limits/connections.js';
import { fdBudget } from '../limits/fd-limit.js';
import { RateLimits } from '../limits/rate.js';
import { MethodPolicy } from '../methods/policy.js';
import type { Metrics } from '../metrics/registry.js';
import { Pipeline, type PipelineDeps } from '../pipeline/index.js';
import type { RedisConnections } from '../redis/connections.js';
import type { QuorumDeps, QuorumGate, QuorumRule } from '../routing/quorum-gate.js';
import { MethodTimeouts } from '../routing/timeouts.js';
import type { HedgeFigures } from '../routing/hedge-figures.js';
import type { ShadowReads } from '../routing/shadow.js';
import type { ChainFeed } from '../subscriptions/chain.js';
import type { PendingFeed } from '../subscriptions/pending.js';
import type { WsDeps } from './ws.js';
import type { Fleet } from '../upstream/fleet.js';
import type { RequestTracing, Tracing } from '../tracing/index.js';
import type { Uptime } from '../uptime/index.js';
import { VERSION } from '../version.js';
import { ClientIp } from './client-ip.js';
import { Front } from './front.js';
import type { HttpDeps } from './http-request.js';

export interface RequestPath {
  readonly config: Config;
  readonly rateLimits: RateLimits;
  readonly pipeline: Pipeline;
  readonly front: Front;
  readonly clientIp: ClientIp;
  readonly http: HttpDeps;
  readonly ws: WsDeps;
  /** server.maxConnections lowered to what the open-file limit allows. */
  readonly connectionLimits: ConnectionLimits;
}

/** The long-lived parts every path is built over: they outlive reloads and apply their own settings. */
export interface PathParts {
  fleet: Fleet;
  metrics: Metrics;
  log: Logger;
  cache: ResponseCache;
  concurrency: Concurrency;
  redis: RedisConnections;
  feed: ChainFeed;
  pending: PendingFeed;
  /** Copies of reads for shadow upstreams: its in-flight count outlives reloads. */
  shadows: ShadowReads;
  /** Quorum calls in flight (routing.quorumMaxInFlight): the count outlives reloads. */
  quorum: QuorumGate;
  /** Hedged reads' latency figures and token bucket (routing/hedge-figures.ts): kept across reloads. */
  hedges: HedgeFigures;
  uptime: Uptime | null;
  /** The span exporter, built at start when tracing.enabled; null when off. */
  tracing: Tracing | null;
  /** The process's open-file limit (null: not checked). */
  fdLimit: number | null;
  isReady: () => boolean;
  /** After the shutdown delay: requests and frames are refused. */
  isDraining: () => boolean;
  /** During the shutdown delay: answers carry Connection: close. */
  closeConnections: () => boolean;
}

/**
 * Builds the path for `config`. `running`: the path in force, whose rate limits (and the counts
 * they hold) are kept when the rateLimit section did not change. Throws only while building (a
 * rate limiter that cannot be made): then nothing was swapped, and `discardPath` frees what a
 * built path holds that the running one does not.
 */
export function buildRequestPath(config: Config, parts: PathParts, running?: RequestPath): RequestPath {
  const rateLimits =
    running !== undefined && isDeepStrictEqual(running.config.rateLimit, config.rateLimit)
      ? running.rateLimits
      : new RateLimits(config.rateLimit, parts.metrics, parts.log, {
          connections: parts.redis,
          chainId: config.chainId,
        });
  const pipeline = new Pipeline(pipelineDeps(config, parts));
  const front = new Front({
    pipeline,
    concurrency: parts.concurrency,
    rateLimits,
    metrics: parts.metrics,
    maxBatchSize: config.server.maxBatchSize,
    requestTimeoutMs: config.server.requestTimeoutMs,
    directiveKeys: new Set(config.rateLimit.apiKeys.filter((k) => k.directives).map((k) => k.key)),
  });
  const clientIp = new ClientIp(config.server.trustedProxies);
  return Object.freeze({
    config,
    rateLimits,
    pipeline,
    front,
    clientIp,
    http: Object.freeze(httpDeps(config, parts, front, clientIp, rateLimits)),
    ws: Object.freeze(wsDeps(config, parts, front, clientIp, rateLimits)),
    connectionLimits: connectionLimits(config, parts),
  });
}

/** Frees what `built` holds that `running` does not (its own rate limiter): the path was never swapped in. */
export function discardPath(built: RequestPath, running: RequestPath): void {
  if (built.rateLimits !== running.rateLimits) void built.rateLimits.close();
}

function pipelineDeps(c: Config, parts: PathParts): PipelineDeps {
  return {
    fleet: parts.fleet,
    metrics: parts.metrics,
    policy: new MethodPolicy(c.methods),
    chainId: c.chainId,
    maxLagBlocks: c.routing.maxLagBlocks,
    recentBlocks: c.routing.recentBlocks,
    broadcastTransactions: c.routing.broadcastTransactions,
    cache: parts.cache,
    maxAttempts: c.routing.maxAttempts,
    upstreamTimeoutMs: c.routing.upstreamTimeoutMs,
    verify: c.routing.verify.enabled,
    hedge: c.routing.hedge.enabled
      ? {
          figures: parts.hedges,
          quantile: c.routing.hedge.quantile,
          minDelayMs: c.routing.hedge.minDelayMs,
          maxRatio: c.routing.hedge.maxRatio,
        }
      : undefined,
    logs: {
      maxBlockRange: c.routing.maxLogsBlockRange,
      split: c.routing.splitLogsRange,
      maxChunks: c.routing.maxLogsChunks,
      maxBytes: c.routing.maxLogsResponseBytes,
    },
    sendSyncTimeoutMs: c.routing.sendRawTransactionSyncTimeoutMs,
    timeouts: new MethodTimeouts(c.routing.upstreamTimeoutMs, c.routing.methodTimeoutsMs),
    maxResponseBytes: c.server.maxResponseBytes,
    shadow:
      c.routing.shadowSampleRate > 0 && c.upstreams.some((u) => u.shadow)
        ? { reads: parts.shadows, sampleRate: c.routing.shadowSampleRate, maxInFlight: c.routing.shadowMaxInFlight }
        : undefined,
    quorum: quorumDeps(c, parts),
  };
}

/** routing.quorum as routing reads it: each listed method's rule; undefined when there is none. */
function quorumDeps(c: Config, parts: PathParts): QuorumDeps | undefined {
  if (c.routing.quorum.length === 0) return undefined;
  const rules = new Map<string, QuorumRule>();
  for (const r of c.routing.quorum) {
    const rule = Object.freeze({ min: r.min, of: r.of, minGroups: r.minGroups });
    for (const m of r.methods) rules.set(m, rule);
  }
  return Object.freeze({ gate: parts.quorum, maxInFlight: c.routing.quorumMaxInFlight, rules });
}

function httpDeps(c: Config, parts: PathParts, front: Front, clientIp: ClientIp, rateLimits: RateLimits): HttpDeps {
  return {
    front,
    clientIp,
    metrics: parts.metrics,
    log: parts.log,
    maxBodyBytes: c.server.maxBodyBytes,
    corsOrigins: c.server.cors.origins,
    chainId: c.chainId,
    version: VERSION,
    isReady: parts.isReady,
    isDraining: parts.isDraining,
    closeConnections: parts.closeConnections,
    knowsKey: (key) => rateLimits.knowsKey(key),
    keyName: (key) => rateLimits.keyName(key),
    admitRequest: (ip) => rateLimits.admitRequest(ip),
    logRequests: c.log.requests,
    gzipMinBytes: c.server.gzipMinBytes,
    uptime: parts.uptime,
    tracing: requestTracing(c, parts),
    diagnosticHeaders: c.server.diagnosticHeaders,
    linger: { ms: c.server.lingerMs, bytes: c.server.lingerBytes, idleMs: c.server.keepAliveTimeoutMs },
    plainLane: c.server.plainLane,
  };
}

function wsDeps(c: Config, parts: PathParts, front: Front, clientIp: ClientIp, rateLimits: RateLimits): WsDeps {
  const s = c.subscriptions;
  return {
    front,
    clientIp,
    metrics: parts.metrics,
    log: parts.log,
    feed: parts.feed,
    pending: parts.pending,
    maxPerConnection: s.maxPerConnection,
    maxPerIp: s.maxPerIp,
    maxConnectionsPerIp: s.maxConnectionsPerIp,
    maxMessageBytes: s.maxMessageBytes,
    maxBufferBytes: s.maxBufferBytes,
    maxFramesInFlight: s.maxFramesInFlight,
    pingIntervalMs: s.pingIntervalMs,
    isDraining: parts.isDraining,
    knowsKey: (key) => rateLimits.knowsKey(key),
    admitRequest: (ip) => rateLimits.admitRequest(ip),
    tracing: requestTracing(c, parts),
  };
}

/** The exporter built at start with this path's sampling (tracing.sampleRate and slowMs reload). */
function requestTracing(c: Config, parts: PathParts): RequestTracing | null {
  if (parts.tracing === null) return null;
  return Object.freeze({ tracing: parts.tracing, sampleRate: c.tracing.sampleRate, slowMs: c.tracing.slowMs });
}

/** The connection caps in force: server.maxConnections lowered to what the open-file limit allows (warned). */
function connectionLimits(c: Config, parts: PathParts): ConnectionLimits {
  const budget = fdBudget(
    c.server.maxConnections,
    c.upstreams.map((u) => u.maxConnections + u.heldConnections),
    parts.fdLimit,
  );
  if (budget.short) {
    parts.log.warn(
      {
        fdLimit: parts.fdLimit,
        needed: budget.needed,
        maxConnections: c.server.maxConnections,
        cappedAt: budget.maxConnections,
      },
      'open-file limit too low for server.maxConnections: client connections capped at cappedAt; raise the hard limit (systemd LimitNOFILE=, ulimit -n, docker --ulimit nofile=)',
    );
  }
  return Object.freeze({ maxConnections: budget.maxConnections, maxConnectionsPerIp: c.server.maxConnectionsPerIp });
}
