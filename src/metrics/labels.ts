/**
 * The closed label sets of the metrics whose values other rooms produce: each list is the whole
 * vocabulary of one label, the series that read 0 from the start are made from it, and the code
 * that produces a value takes its type from here. A leaf like the error catalogue: it imports
 * nothing, so metrics/ never has to import the rooms that record into it.
 */

/** Why a write was refused: the `reason` label of switchyard_admin_writes_refused_total (server/admin-writes.ts). */
export const WRITE_REFUSALS = ['no_token', 'wrong_token', 'not_loopback'] as const;
export type WriteRefusalReason = (typeof WRITE_REFUSALS)[number];

/** The answer cache's classes (cache/plan.ts). */
export const CACHE_CLASSES = ['immutable', 'head', 'tx'] as const;
export type CacheClass = (typeof CACHE_CLASSES)[number];

/** Why a limit refused calls (switchyard_rate_limited_calls_total): `rate` by limits/rate.ts, the others by limits/concurrency.ts. */
export const LIMIT_REFUSALS = ['rate', 'ip_concurrency', 'overloaded'] as const;
export type LimitRefusal = (typeof LIMIT_REFUSALS)[number];

/** Which cap refused a connection: `total` (server.maxConnections) or `ip` (server.maxConnectionsPerIp); limits/connections.ts. */
export const CONNECTION_REFUSALS = ['total', 'ip'] as const;
export type ConnectionRefusal = (typeof CONNECTION_REFUSALS)[number];

/** Why the PROXY protocol check refused a connection (server/proxy-protocol.ts). */
export const PROXY_REFUSALS = ['untrusted_header', 'bad_header', 'timeout'] as const;
export type ProxyRefusal = (typeof PROXY_REFUSALS)[number];

/** Why Switchyard closed a WebSocket (switchyard_ws_closes_total's `reason`; server/ws.ts). */
export const WS_CLOSE_REASONS = ['slow_reader', 'too_large', 'dead_peer', 'shutdown'] as const;
export type WsCloseReason = (typeof WS_CLOSE_REASONS)[number];

/** The kinds of eth_subscribe (subscriptions/session.ts). */
export const SUBSCRIPTION_KINDS = ['newHeads', 'logs', 'newPendingTransactions'] as const;
export type SubscriptionKind = (typeof SUBSCRIPTION_KINDS)[number];

/** switchyard_directives_ignored_total's `directive` label (server/directives.ts). */
export const DIRECTIVES = ['use_upstream', 'skip_cache', 'trace'] as const;
export type Directive = (typeof DIRECTIVES)[number];

/** The kinds of incident the uptime probe opens (uptime/store/store.ts). */
export const INCIDENT_KINDS = ['unreachable', 'stalled'] as const;
export type IncidentKind = (typeof INCIDENT_KINDS)[number];

/** Retry reasons after which a call moves on to another node (switchyard_failovers_total's `reason`; upstream/classify.ts RetryReason). */
export const FAILOVER_REASONS = [
  'transport',
  'timeout',
  'http_5xx',
  'http_429',
  /** A 404 whose body is no JSON-RPC answer (answers.ts badBody); http_4xx: another 4xx but 429. */
  'http_404',
  'http_4xx',
  /** Any other status but 200 whose body is no JSON-RPC answer (1xx, 2xx, 3xx). */
  'http_other',
  'bad_body',
  'node_limit',
  'node_method_missing',
  'node_missing_block',
  /**
   * The answer is not what was asked, or contradicts what it commits to (SPEC 4.9): never served
   * nor cached, counted against the node (routing/verified.ts). No health failure: the node answers,
   * wrongly, and 3 in 10 minutes quarantine it (fleet.ts).
   */
  'wrong_answer',
] as const;

/** The breaker states as switchyard_upstream_breaker_state's `state` label spells them (upstream/health.ts Breaker.label). */
export const BREAKER_STATES = ['closed', 'half_open', 'open'] as const;
export type BreakerStateLabel = (typeof BREAKER_STATES)[number];

/** What became of one webhook delivery (uptime/notify/webhooks.ts). */
export const WEBHOOK_OUTCOMES = ['delivered', 'retried', 'failed', 'dropped'] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

/**
 * How a quorum read ended (switchyard_quorum_calls_total's `outcome`; routing/quorum.ts): enough
 * nodes agreed, the answers differed, or too few nodes were eligible (or answered) for `min` to agree.
 */
export const QUORUM_OUTCOMES = ['agreed', 'dispute', 'too_few'] as const;
export type QuorumOutcome = (typeof QUORUM_OUTCOMES)[number];
/** What became of a hedged read's hedge (routing/hedge.ts): its answer served, the first node's served, or not sent. */
export const HEDGE_OUTCOMES = ['won', 'lost', 'skipped'] as const;
export type HedgeOutcome = (typeof HEDGE_OUTCOMES)[number];
