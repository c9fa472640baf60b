/**
 * What a request's calls share on their way (the pipeline's context for one request): who asked,
 * the settings it started with, the one head snapshot of the batch, and what the request collects
 * for its answer and its log line. Made by Pipeline.context() (index.ts) with every field, so every
 * context has one shape.
 */
import type { Logger } from 'pino';
import type { Call } from '../jsonrpc/parse.js';
import type { Outcome } from '../jsonrpc/response.js';
import type { DispatchContext } from '../routing/dispatch.js';
import type { PipelineDeps } from './index.js';
import type { ShadowCopy } from './shadow.js';

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
