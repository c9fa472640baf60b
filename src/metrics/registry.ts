/**
 * Every metric Switchyard exports, declared once with its help text (one file per concept below),
 * and the verbs call sites use: record* counts an event, set* states a level, declare* and forget*
 * create and drop the series of a configured thing (an upstream, shared heads). No metric object leaves this room.
 * Labels are bounded: method names come through MethodPolicy.label (unknown -> `other`), upstreams
 * by configured name, every other label from a closed `as const` list (metrics/labels.ts when another
 * room produces its values, which takes its type from there); the series that read 0 from the start
 * are made from those same lists.
 * No URL ever.
 */
import { Registry, collectDefaultMetrics } from 'prom-client';
import { AdminMetrics } from './admin.js';
import { BudgetMetrics } from './budget.js';
import { CacheMetrics } from './cache.js';
import { CallMetrics } from './calls.js';
import { DirectiveMetrics } from './directives.js';
import { HedgeMetrics } from './hedge.js';
import { ConnectionMetrics } from './connections.js';
import { RedisMetrics } from './redis.js';
import { QuorumMetrics } from './quorum.js';
import { ShadowMetrics } from './shadow.js';
import { ServiceMetrics, type BuildInfo } from './service.js';
import { TracingMetrics } from './tracing.js';
import { UpstreamMetrics } from './upstream.js';
import { UptimeSharedMetrics } from './uptime-shared.js';
import { VerifyMetrics } from './verify.js';
import { WebhookMetrics } from './webhooks.js';

export { CALL_OUTCOMES, CALL_REASONS, INVALID_METHOD, type CallOutcome, type CallReason } from './calls.js';

export interface MetricsOptions extends BuildInfo {
  /** Node's process metrics (CPU, memory, event loop, ...): on unless false. */
  processMetrics?: boolean;
}

export class Metrics {
  /** Read by GET /metrics; metrics are registered only through this room's verbs. */
  readonly registry = new Registry();
  private readonly calls = new CallMetrics(this.registry);
  private readonly upstreams = new UpstreamMetrics(this.registry);
  private readonly cache = new CacheMetrics(this.registry);
  private readonly redis = new RedisMetrics(this.registry);
  private readonly connections = new ConnectionMetrics(this.registry);
  private readonly service = new ServiceMetrics(this.registry);
  private readonly budgets = new BudgetMetrics(this.registry);
  private readonly tracing = new TracingMetrics(this.registry);
  private readonly shadows = new ShadowMetrics(this.registry);
  private readonly admin = new AdminMetrics(this.registry);
  private readonly directives = new DirectiveMetrics(this.registry);
  private readonly webhooks = new WebhookMetrics(this.registry);
  private readonly uptimeShared = new UptimeSharedMetrics(this.registry);
  private readonly verify = new VerifyMetrics(this.registry);
  private readonly quorum = new QuorumMetrics(this.registry);
  private readonly hedges = new HedgeMetrics(this.registry);

  constructor(opts: MetricsOptions = {}) {
    this.service.setBuildInfo(opts);
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  // Calls and HTTP requests (calls.ts)
  readonly recordCall = this.calls.recordCall.bind(this.calls);
  readonly recordRefused = this.calls.recordRefused.bind(this.calls);
  readonly recordHttp = this.calls.recordHttp.bind(this.calls);
  readonly recordRateLimited = this.calls.recordRateLimited.bind(this.calls);
  readonly recordRateLimitFallback = this.calls.recordRateLimitFallback.bind(this.calls);
  readonly setInFlight = this.calls.setInFlight.bind(this.calls);

  // Upstreams and the fleet (upstream.ts)
  readonly declareUpstream = this.upstreams.declareUpstream.bind(this.upstreams);
  readonly forgetUpstream = this.upstreams.forgetUpstream.bind(this.upstreams);
  readonly recordUpstreamCall = this.upstreams.recordUpstreamCall.bind(this.upstreams);
  readonly recordFailover = this.upstreams.recordFailover.bind(this.upstreams);
  readonly recordQuarantine = this.upstreams.recordQuarantine.bind(this.upstreams);
  readonly setQuarantined = this.upstreams.setQuarantined.bind(this.upstreams);
  readonly recordUpstreamRateLimited = this.upstreams.recordUpstreamRateLimited.bind(this.upstreams);
  readonly setHeldOff = this.upstreams.setHeldOff.bind(this.upstreams);
  readonly setUpstreamCordoned = this.upstreams.setUpstreamCordoned.bind(this.upstreams);
  readonly setBreakerState = this.upstreams.setBreakerState.bind(this.upstreams);
  readonly recordReorg = this.upstreams.recordReorg.bind(this.upstreams);
  readonly setUpstreamHead = this.upstreams.setUpstreamHead.bind(this.upstreams);
  readonly setUpstreamLag = this.upstreams.setUpstreamLag.bind(this.upstreams);
  readonly setUpstreamHealthy = this.upstreams.setUpstreamHealthy.bind(this.upstreams);
  readonly setUpstreamInFlight = this.upstreams.setUpstreamInFlight.bind(this.upstreams);
  readonly setUpstreamHeldInFlight = this.upstreams.setUpstreamHeldInFlight.bind(this.upstreams);
  readonly recordHeldLaneFull = this.upstreams.recordHeldLaneFull.bind(this.upstreams);
  readonly setUpstreamLatency = this.upstreams.setUpstreamLatency.bind(this.upstreams);
  readonly setFleetHead = this.upstreams.setFleetHead.bind(this.upstreams);
  readonly setFleetFinalized = this.upstreams.setFleetFinalized.bind(this.upstreams);
  readonly setMaxLagBlocks = this.upstreams.setMaxLagBlocks.bind(this.upstreams);

  // Verified answers (verify.ts)
  readonly recordWrongAnswer = this.verify.recordWrongAnswer.bind(this.verify);
  readonly recordUnverified = this.verify.recordUnverified.bind(this.verify);
  // Quorum reads (quorum.ts)
  readonly recordQuorumCall = this.quorum.recordQuorumCall.bind(this.quorum);
  readonly recordDissent = this.quorum.recordDissent.bind(this.quorum);

  // Hedged reads (hedge.ts)
  readonly recordHedge = this.hedges.recordHedge.bind(this.hedges);

  // The answer cache (cache.ts)
  readonly recordCacheLookup = this.cache.recordCacheLookup.bind(this.cache);
  readonly recordCacheEvictions = this.cache.recordCacheEvictions.bind(this.cache);
  readonly recordCoalesced = this.cache.recordCoalesced.bind(this.cache);
  readonly setCacheSize = this.cache.setCacheSize.bind(this.cache);
  readonly setCacheRedis = this.cache.setCacheRedis.bind(this.cache);

  // The shared Redis and shared heads (redis.ts)
  readonly recordRedisRefused = this.redis.recordRedisRefused.bind(this.redis);
  readonly setRedisUp = this.redis.setRedisUp.bind(this.redis);
  readonly declareSharedHeads = this.redis.declareSharedHeads.bind(this.redis);
  readonly recordSharedHeadsFailure = this.redis.recordSharedHeadsFailure.bind(this.redis);
  readonly recordSharedHeadsTaken = this.redis.recordSharedHeadsTaken.bind(this.redis);

  // Client connections and WebSockets (connections.ts)
  readonly setConnections = this.connections.setConnections.bind(this.connections);
  readonly recordConnectionRefused = this.connections.recordConnectionRefused.bind(this.connections);
  readonly recordConnectionEvicted = this.connections.recordConnectionEvicted.bind(this.connections);
  readonly recordProxyRefused = this.connections.recordProxyRefused.bind(this.connections);
  readonly setWsConnections = this.connections.setWsConnections.bind(this.connections);
  readonly recordWsClose = this.connections.recordWsClose.bind(this.connections);
  readonly recordSubscribed = this.connections.recordSubscribed.bind(this.connections);
  readonly recordUnsubscribed = this.connections.recordUnsubscribed.bind(this.connections);
  readonly recordNotifications = this.connections.recordNotifications.bind(this.connections);

  // Upstream budgets (budget.ts)
  readonly declareBudget = this.budgets.declareBudget.bind(this.budgets);
  readonly recordBudgetExhausted = this.budgets.recordBudgetExhausted.bind(this.budgets);
  readonly setBudgetsRemaining = this.budgets.setBudgetsRemaining.bind(this.budgets);

  // Shadow upstreams (shadow.ts)
  readonly recordShadowCall = this.shadows.recordShadowCall.bind(this.shadows);
  // The admin port (admin.ts)
  readonly recordAdminWriteRefused = this.admin.recordAdminWriteRefused.bind(this.admin);

  // Build, configuration reloads and the uptime page (service.ts)
  readonly recordReload = this.service.recordReload.bind(this.service);
  readonly recordUptimeProbe = this.service.recordUptimeProbe.bind(this.service);
  readonly setUptimeIncidents = this.service.setUptimeIncidents.bind(this.service);
  readonly setUptimeHeadAge = this.service.setUptimeHeadAge.bind(this.service);
  readonly setUptimeStorePersistent = this.service.setUptimeStorePersistent.bind(this.service);
  // Uptime webhooks (webhooks.ts)
  readonly recordUptimeWebhook = this.webhooks.recordUptimeWebhook.bind(this.webhooks);
  readonly setReady = this.service.setReady.bind(this.service);
  // The uptime page shared by replicas (uptime-shared.ts)
  readonly declareUptimeShared = this.uptimeShared.declareUptimeShared.bind(this.uptimeShared);
  readonly setUptimeProber = this.uptimeShared.setUptimeProber.bind(this.uptimeShared);
  readonly recordUptimeImage = this.uptimeShared.recordUptimeImage.bind(this.uptimeShared);

  // Tracing export (tracing.ts)
  readonly recordSpansDropped = this.tracing.recordSpansDropped.bind(this.tracing);
  readonly recordSpansExported = this.tracing.recordSpansExported.bind(this.tracing);

  // Request directives (directives.ts)
  readonly recordDirectiveIgnored = this.directives.recordDirectiveIgnored.bind(this.directives);
}
