/**
 * The configuration schema: every option, its type and its default, in one place.
 * Owns: shape, defaults, value checks (those beyond a type in checks.ts). Refuses: reading files,
 * environment expansion (load.ts), which keys reload (restart.ts).
 * Unknown keys are errors everywhere (strict objects), so a typo never silently becomes a default.
 */
import { heightOf } from '../jsonrpc/hex.js';
import { parseCidr } from '../net/cidrs.js';
import { portClashes, redisUrl, shadowsOnly } from './checks.js';
import { quorumSchema } from './quorum-schema.js';
import { tracingSchema } from './tracing.js';
import { upstreamSchema } from './upstream-schema.js';
import { uptimeSchema } from './uptime-schema.js';
import { z } from 'zod';

export { upstreamSchema };

const port = z.number().int().min(0).max(65535);
const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().min(0);

/** A chain id may be written as a number (186) or a hex string ("0xba"); YAML reads bare 0xba as 186. */
const chainId = z
  .union([
    positiveInt,
    z.string().refine((s) => heightOf(s) !== null, { error: 'expected a hex quantity of at most 13 digits' }),
  ])
  .transform((v) => (typeof v === 'number' ? v : heightOf(v)!))
  .pipe(z.number().int().positive().max(Number.MAX_SAFE_INTEGER));

/** An IP address, or address/prefix with a prefix the address family allows (<= 32 or <= 128). */
const cidr = z
  .string()
  .refine((c) => parseCidr(c) !== null, { error: (iss) => `expected an IP or CIDR, got ${JSON.stringify(iss.input)}` });

const methodName = z.string().regex(/^[a-zA-Z0-9_]+\*?$/, {
  error: (iss) => `expected a method name or prefix ending in *, got ${JSON.stringify(iss.input)}`,
});

/** Default call costs: heavier methods spend more of a client's budget. */
export const DEFAULT_METHOD_COST: Readonly<Record<string, number>> = Object.freeze({
  eth_getLogs: 10,
  eth_call: 2,
  eth_estimateGas: 2,
  eth_createAccessList: 2,
  'debug_*': 20,
});

/** Default per-method timeouts: a trace of a large transaction or block legitimately takes longer than a read. */
export const DEFAULT_METHOD_TIMEOUTS_MS: Readonly<Record<string, number>> = Object.freeze({
  'debug_trace*': 20_000,
});

const rateSchema = z
  .strictObject({
    ratePerSec: positiveInt,
    burst: positiveInt,
    /** How often the burst allowance (burst - ratePerSec) refills, in seconds. */
    burstWindowSec: positiveInt.default(10),
  })
  .refine((r) => r.burst >= r.ratePerSec, { error: 'expected burst >= ratePerSec', path: ['burst'] });

export const configSchema = z
  .strictObject({
    chainId: chainId.default(186),
    server: z
      .strictObject({
        host: z.string().default('0.0.0.0'),
        port: port.default(8545),
        /** Separate WebSocket port; null serves WebSocket only as an upgrade on `port`. */
        wsPort: port.nullable().default(8546),
        maxBodyBytes: positiveInt.default(5 * 1024 * 1024),
        maxBatchSize: positiveInt.default(100),
        requestTimeoutMs: positiveInt.default(30_000),
        /** Time a client has to send its headers; slow clients are cut off. */
        headersTimeoutMs: positiveInt.default(10_000),
        /** Time a client has to send its whole body once headers are in. */
        bodyTimeoutMs: positiveInt.default(30_000),
        keepAliveTimeoutMs: positiveInt.default(5_000),
        /**
         * The lingering close: after an answer made before the request's body was read (413, 401,
         * 415, 429, a 408 or 400 refusal), the client's bytes are read and dropped for at most this
         * long (and while it sends something at least every keepAliveTimeoutMs), then the socket closes.
         */
        lingerMs: positiveInt.default(30_000),
        /** ...and at most this many bytes; past either bound the socket is destroyed. */
        lingerBytes: positiveInt.default(16 * 1024 * 1024),
        /**
         * Plain JSON-RPC POSTs read off the socket by the server's own reader (the plain lane,
         * faster); false: every request read by node:http.
         */
        plainLane: z.boolean().default(true),
        cors: z.strictObject({ origins: z.array(z.string()).default(['*']) }).prefault({}),
        trustedProxies: z.array(cidr).default([]),
        /**
         * PROXY protocol v1/v2 on the JSON-RPC and WebSocket ports: a header from a trusted proxy
         * gives the client address; from any other peer it is refused. Read at start.
         */
        proxyProtocol: z.boolean().default(false),
        maxInFlight: positiveInt.default(20_000),
        maxInFlightPerIp: positiveInt.default(256),
        /**
         * Client connections open at once on server.port and server.wsPort together (WebSockets
         * included); a connection past it is closed at once. Lowered at start to what the process's
         * open-file limit allows (limits/fd-limit.ts).
         */
        maxConnections: positiveInt.default(10_000),
        /** The same per client IP (IPv6: per /64); a peer in trustedProxies counts only in maxConnections. */
        maxConnectionsPerIp: positiveInt.default(256),
        /**
         * SIGTERM: for this long /ready is 503 while calls are still served (with Connection: close),
         * so balancers take the replica out of rotation before it stops accepting connections.
         */
        shutdownDelayMs: nonNegativeInt.default(5_000),
        /**
         * SIGTERM, after the delay: how long in-flight calls may take to finish. Delay + grace
         * (5 s + 20 s = 25 s) stays under Kubernetes' default 30 s termination grace period.
         */
        shutdownGraceMs: nonNegativeInt.default(20_000),
        /** Answers of at least this many bytes are gzip-compressed when the client accepts gzip; null = never. */
        gzipMinBytes: positiveInt.nullable().default(32_768),
        /** X-Switchyard-Upstream, -Cache, -Attempts and Server-Timing on every JSON-RPC answer over HTTP. */
        diagnosticHeaders: z.boolean().default(true),
        /** The results of one request's calls together (a batch, a split eth_getLogs) may hold this many characters; past it a call gets RESPONSE_TOO_LARGE. */
        maxResponseBytes: positiveInt.default(64 * 1024 * 1024),
      })
      .prefault({}),
    admin: z
      .strictObject({
        host: z.string().default('127.0.0.1'),
        port: port.default(9545),
        /**
         * Host names the admin port answers besides localhost and IP addresses (DNS rebinding: a
         * browser page of another site reaches the port only under a name of that site); "*" = any.
         */
        allowedHosts: z
          .array(
            z.string().regex(/^(\*|[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)$/, {
              error: (iss) => `expected a host name or "*", got ${JSON.stringify(iss.input)}`,
            }),
          )
          .default([]),
        /**
         * Admin writes (POST /-/reload and any other request but GET or HEAD on the admin port) need
         * `Authorization: Bearer <token>`; null = writes only from loopback peers
         * (server/admin-writes.ts). Printable ASCII without spaces: it travels in a header, and a
         * trailing newline from a secret file is refused at start rather than never matching.
         */
        token: z
          .string()
          .min(16, { error: 'expected at least 16 characters' })
          .regex(/^[\x21-\x7e]*$/, { error: 'expected printable ASCII without spaces' })
          .nullable()
          .default(null),
        /** GET /ready is also 503 while no upstream is healthy and in sync (off: a full outage must not empty the balancer). */
        readyRequiresUpstream: z.boolean().default(false),
      })
      .prefault({}),
    upstreams: z.array(upstreamSchema).min(1, { error: 'expected at least one upstream' }),
    routing: z
      .strictObject({
        maxLagBlocks: nonNegativeInt.default(5),
        maxAttempts: positiveInt.max(10).default(3),
        headPollMs: positiveInt.default(1000),
        /** How often each upstream's eth_chainId is checked again. */
        chainIdCheckMs: positiveInt.default(60_000),
        /** Per-attempt limit for one upstream call; the call's whole deadline is server.requestTimeoutMs. */
        upstreamTimeoutMs: positiveInt.default(10_000),
        broadcastTransactions: z.boolean().default(false),
        /** A node whose head is this far beyond the believed fleet head is not routed at all (implausibleHead). */
        maxHeadJumpBlocks: positiveInt.default(1000),
        /**
         * A head no other node has reached is believed only within the chain's pace since the last
         * confirmed head (twice its average, plus a poll interval) plus this many blocks.
         */
        headSlackBlocks: nonNegativeInt.default(4),
        /** Blocks older than head - recentBlocks (and `earliest`) go to `archive` upstreams when any is configured. */
        recentBlocks: positiveInt.default(128),
        /** eth_getLogs over more blocks than this is split (splitLogsRange) or refused with -32602; null = no cap. */
        maxLogsBlockRange: positiveInt.nullable().default(10_000),
        /** Split an eth_getLogs range over maxLogsBlockRange into chunks sent across the eligible upstreams. */
        splitLogsRange: z.boolean().default(true),
        /** A range needing more chunks than this is refused with -32602 even when splitting. */
        maxLogsChunks: positiveInt.max(1000).default(20),
        /** A split eth_getLogs's chunks together may bring this many bytes; past it the call gets RESPONSE_TOO_LARGE at once. */
        maxLogsResponseBytes: positiveInt.default(64 * 1024 * 1024),
        /** Bytes of large answers (over 1 MiB each) being received at once, all calls together; past it a call gets -32005 ANSWERS_BUSY. */
        maxLargeAnswerBytes: positiveInt.default(128 * 1024 * 1024),
        /** eth_sendRawTransactionSync (EIP-7966): the upstream waits for the receipt up to this long; one attempt. */
        sendRawTransactionSyncTimeoutMs: positiveInt.default(20_000),
        /**
         * Per-attempt limit by method name or `prefix*` (exact names win, then the longest prefix),
         * instead of upstreamTimeoutMs; merged over the defaults. Within server.requestTimeoutMs.
         */
        methodTimeoutsMs: z
          .record(methodName, positiveInt)
          .default({})
          .transform((v) => ({ ...DEFAULT_METHOD_TIMEOUTS_MS, ...v })),
        /**
         * The longest a node that answered "too many requests" is held off (its Retry-After, or 1 s
         * doubling on each repeat, is capped here): upstream/holdoff.ts.
         */
        holdOffMaxMs: positiveInt.default(600_000),
        /** How often each upstream's discovery runs again (upstreams[].discover); also when a node comes back. */
        discoverIntervalMs: positiveInt.min(10_000).default(3_600_000),
        /** Share of answered reads copied to each shadow upstream; copies in flight at most (more: skipped, counted). */
        shadowSampleRate: z.number().min(0).max(1).default(0.1),
        shadowMaxInFlight: positiveInt.max(10_000).default(64),
        /**
         * Quorum reads (SPEC 4.9, routing/quorum.ts): a listed method is asked of `of` nodes and
         * answered once `min` agree from `minGroups` groups; each asked node is a node call.
         */
        quorum: quorumSchema,
        /** Quorum calls at once, each until its last asked node answered or timed out; more: -32005 QUORUM_BUSY. */
        quorumMaxInFlight: positiveInt.max(100_000).default(256),
        /**
         * Verified answers (SPEC 4.9, docs/verification.md): blocks, transactions and block receipts
         * checked against what they commit to before they are served or cached. A node with
         * `quarantineAfter` wrong answers within `windowMs` is quarantined for `quarantineMs`.
         */
        verify: z
          .strictObject({
            enabled: z.boolean().default(true),
            quarantineAfter: positiveInt.default(3),
            windowMs: positiveInt.default(600_000),
            quarantineMs: positiveInt.default(600_000),
          })
          .prefault({}),
        /**
         * Hedged reads (SPEC 4.9, docs/routing.md "Hedging"): a read still unanswered after the
         * `quantile` latency of its method across the healthy nodes (at least `minDelayMs`) is sent
         * once more to another node; the first good answer wins. At most `maxRatio` of calls (a
         * token bucket each call adds maxRatio to, burst 20).
         */
        hedge: z
          .strictObject({
            enabled: z.boolean().default(true),
            quantile: z.number().gt(0).max(1).default(0.95),
            minDelayMs: nonNegativeInt.default(20),
            maxRatio: z.number().min(0).max(1).default(0.1),
          })
          .prefault({}),
        /** Per-upstream circuit breaker: opens after this many consecutive failures, half-opens after cooldownMs. */
        breaker: z
          .strictObject({
            failureThreshold: positiveInt.default(5),
            cooldownMs: positiveInt.default(5_000),
          })
          .prefault({}),
      })
      .prefault({}),
    cache: z
      .strictObject({
        maxBytes: nonNegativeInt.default(128 * 1024 * 1024),
        finalityDepth: nonNegativeInt.default(64),
        redis: redisUrl.default(null),
      })
      .prefault({}),
    rateLimit: z
      .strictObject({
        /** Per client IP (see docs/limits.md "Rate limits"): ratePerSec each second, plus a burst allowance. */
        perIp: rateSchema.nullable().default({ ratePerSec: 50, burst: 100, burstWindowSec: 10 }),
        /** Cost of a call by method name or `prefix*`; unlisted methods cost 1. Merged over the defaults. */
        methodCost: z
          .record(methodName, z.number().int().min(0))
          .default({})
          .transform((v) => ({ ...DEFAULT_METHOD_COST, ...v })),
        redis: redisUrl.default(null),
        /** Client IPs/CIDRs never rate limited (health checkers, internal services). */
        exempt: z.array(cidr).default([]),
        /** Clients presenting one of these keys (X-Api-Key header or /key/<key> path) get its limits instead of the IP's. */
        apiKeys: z
          .array(
            z.strictObject({
              name: z.string().regex(/^[a-zA-Z0-9_.-]{1,64}$/, {
                error: (iss) => `expected a name of letters, digits, _ . -, got ${JSON.stringify(iss.input)}`,
              }),
              key: z.string().min(16, { error: 'expected a key of at least 16 characters' }),
              ratePerSec: positiveInt,
              burst: positiveInt,
              burstWindowSec: positiveInt.default(10),
              /** The holder may send request directives (X-Switchyard-*: server/directives.ts). */
              directives: z.boolean().default(false),
            }),
          )
          .default([]),
      })
      .prefault({}),
    methods: z
      .strictObject({
        allow: z.array(methodName).default([]),
        deny: z.array(methodName).default([]),
        extensions: z.array(methodName).default([]),
      })
      .prefault({}),
    subscriptions: z
      .strictObject({
        maxPerConnection: positiveInt.default(100),
        /** Subscriptions one client IP (an IPv6 /64) holds across all its sockets; over: -32005, the socket stays open. */
        maxPerIp: positiveInt.default(1_000),
        maxConnectionsPerIp: positiveInt.default(20),
        /** Largest incoming WebSocket frame; a bigger one closes the socket with 1009. */
        maxMessageBytes: positiveInt.default(1024 * 1024),
        /**
         * Bytes Switchyard holds for one client. Unsent data and answers waiting their turn: past
         * it the client is closed with 1013. Frames being worked on and answers waiting: at it the
         * socket stops being read until answers are written.
         */
        maxBufferBytes: positiveInt.default(4 * 1024 * 1024),
        /** Frames of one socket worked on or waiting for their answer's turn; at it the socket stops being read. */
        maxFramesInFlight: positiveInt.default(32),
        /** After a gap in the fleet head, at most this many missed heads are fetched and sent. */
        backfillBlocks: positiveInt.default(128),
        /** Deepest reorg whose logs are re-sent with removed: true (blocks kept in the chain window). */
        reorgDepth: positiveInt.default(64),
        /** Every socket is pinged this often; one that has not answered the previous ping is closed. */
        pingIntervalMs: positiveInt.default(30_000),
      })
      .prefault({}),
    /** The public uptime page (SPEC 12): GET /uptime, /uptime.json, /uptime/badge.svg on server.port. */
    uptime: uptimeSchema,
    log: z
      .strictObject({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
        /** Per-request lines at info: every request, only those with an error (or a 4xx/5xx), or none. */
        requests: z.enum(['all', 'errors', 'off']).default('all'),
      })
      .prefault({}),
    /** OpenTelemetry traces (SPEC 13, src/tracing/): off unless enabled with an endpoint. */
    tracing: tracingSchema,
    /** Only read by `switchyard start`: the embedded anvil fleet to run before the proxy. */
    devnet: z
      .strictObject({
        nodes: positiveInt.max(16).default(3),
        blockTime: z.number().positive().default(2),
        basePort: port.default(18545),
        controlPort: port.default(18540),
        slotsInAnEpoch: positiveInt.default(4),
      })
      .nullable()
      .default(null),
    /**
     * The default Redis for cache.redis and rateLimit.redis: a section's own URL wins, a section's
     * null (or absent) takes this one. Replicas share heads (src/replicas/shared-heads.ts) and upstream
     * budgets (src/limits/budget.ts) through it.
     */
    redis: redisUrl.default(null),
  })
  .superRefine((cfg, ctx) => {
    for (const issue of portClashes(cfg.server, cfg.admin)) ctx.addIssue({ code: 'custom', ...issue });
    const keys = new Set<string>();
    cfg.rateLimit.apiKeys.forEach((k, i) => {
      if (keys.has(k.key))
        ctx.addIssue({
          code: 'custom',
          path: ['rateLimit', 'apiKeys', i, 'key'],
          message: 'expected a unique key, got a duplicate',
        });
      keys.add(k.key);
    });
    const seen = new Set<string>();
    cfg.upstreams.forEach((u, i) => {
      if (seen.has(u.name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['upstreams', i, 'name'],
          message: `expected a unique name, got duplicate ${JSON.stringify(u.name)}`,
        });
      }
      seen.add(u.name);
    });
    for (const issue of shadowsOnly(cfg.upstreams)) ctx.addIssue({ code: 'custom', ...issue });
  })
  .transform((cfg) => ({
    ...cfg,
    cache: { ...cfg.cache, redis: cfg.cache.redis ?? cfg.redis },
    rateLimit: { ...cfg.rateLimit, redis: cfg.rateLimit.redis ?? cfg.redis },
  }));

export type ConfigInput = z.input<typeof configSchema>;
export type Config = z.output<typeof configSchema>;
export type UpstreamConfig = z.output<typeof upstreamSchema>;
