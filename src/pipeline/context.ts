/**
 * What a request's calls share on their way (the pipeline's context for one request): who asked,
 * the settings it started with, the one head snapshot of the batch, and what the request collects
 * for its answer and its log line. Made by Pipeline.context() (index.ts) with every field, so every
 * context has one shape. The settings (PipelineDeps) are declared here, below index.ts and
 * shadow.ts, which both read them.
 */
import type { Logger } from 'pino';
import type { Call } from '../jsonrpc/parse.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { ResponseCache } from '../cache/index.js';
import type { MethodPolicy } from '../methods/policy.js';
import type { DispatchContext, RoutingDeps } from '../routing/dispatch.js';
import type { ShadowCopy, ShadowReads } from '../routing/shadow.js';
import type { LogsRange } from './logs.js';

/** The request path's settings and parts (Pipeline's deps), built at start and at each reload. */
export interface PipelineDeps extends RoutingDeps {
  policy: MethodPolicy;
  chainId: number;
  maxLagBlocks: number;
  recentBlocks: number;
  broadcastTransactions: boolean;
  cache: ResponseCache;
  /** eth_getLogs range cap (pipeline/logs.ts); absent = no cap. */
  logs?: LogsRange;
  /** The results of one request's calls together (server.maxResponseBytes); absent = no bound. */
  maxResponseBytes?: number;
  /** Shadow upstreams' copies (routing/shadow.ts); absent when no upstream is a shadow or the rate is 0. */
  shadow?: ShadowDeps;
}

export interface ShadowSampling {
  sampleRate: number;
  random?: () => number;
}

/** The request path's shadow settings (PipelineDeps.shadow), over the long-lived sender. */
export interface ShadowDeps extends ShadowSampling {
  reads: ShadowReads;
  maxInFlight: number;
}

/** What a request shares among its calls: who asked, the settings it started with, and the one head snapshot of the batch. */
export interface RequestContext extends DispatchContext {
  routing: PipelineDeps;
  clientIp: string;
  /** performance.now() when the request's calls were taken up: each call's latency counts from here. */
  started: number;
  head: number;
  log: Logger;
  /** The WebSocket connection's subscriptions; absent over HTTP. */
  session?: SubscriptionSession;
  /** Characters of results the request holds so far (bounded by server.maxResponseBytes). */
  held: number;
  /** Slots sent to a node under a cache plan (a miss unless the Redis level answers): the diagnostic headers. */
  cacheable?: boolean[];
  /** The request's id (HTTP x-request-id, set by the front), for lines logged after its answer; absent over WebSocket. */
  reqId?: string;
  /** Answered reads to copy to the shadow upstreams once the answer is written (pipeline/shadow.ts). */
  copies?: ShadowCopy[];
  /** X-Switchyard-Skip-Cache (server/directives.ts): no cache read, no joining a call in flight; answers are still stored. */
  skipCache?: boolean;
}

/** What answers eth_subscribe/eth_unsubscribe for one connection (subscriptions/). */
export interface SubscriptionSession {
  call(call: Call): Outcome;
}
