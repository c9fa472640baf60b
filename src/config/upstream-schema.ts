/** One entry of `upstreams`: a node, how to reach it, and how Switchyard treats it (part of schema.ts). */
import { z } from 'zod';
import { httpUrl, readableFile, wsUrl } from './checks.js';

const positiveInt = z.number().int().positive();

/**
 * upstreams[].rateLimit: the most Switchyard sends one node (a provider plan's cap), per call. A
 * rate may be a fraction (a plan counted per day: 100000 a day is 1.16 a second); burst is whole calls.
 */
const budgetSchema = z
  .strictObject({
    ratePerSec: z.number().positive(),
    burst: positiveInt,
  })
  // Judged once both are positive: a 0 or a negative is refused on its own, once.
  .refine((r) => r.burst <= 0 || r.ratePerSec <= 0 || r.burst >= r.ratePerSec, {
    error: 'expected burst >= ratePerSec',
    path: ['burst'],
  });

export const upstreamSchema = z.strictObject({
  /** Used in logs, metrics and /status; the URL never is. */
  name: z.string().regex(/^[a-zA-Z0-9_.-]{1,64}$/, {
    error: (iss) => `expected a name of letters, digits, _ . - (at most 64), got ${JSON.stringify(iss.input)}`,
  }),
  url: httpUrl,
  ws: wsUrl.optional(),
  weight: z.number().positive().max(1000).default(1),
  tags: z.array(z.enum(['archive', 'debug'])).default([]),
  /** Largest number of connections Switchyard opens to this node for every call but held ones. */
  maxConnections: positiveInt.max(10000).default(128),
  /**
   * The held lane: connections of their own for calls the node holds by design
   * (eth_sendRawTransactionSync, traces), at most this many held calls in flight; past it such a
   * call goes to another node, else gets HELD_LANE_FULL at once (routing/lane.ts).
   */
  heldConnections: positiveInt.max(10000).default(16),
  /** Calls to this node in the same event-loop turn travel as one JSON-RPC batch of at most this many; 1 = never batch. */
  maxBatchSize: positiveInt.max(1000).default(25),
  /** Static headers sent with every request to this node (e.g. authorization: "Bearer ${TOKEN}", x-api-key). */
  headers: z
    .record(
      z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/, {
        error: (iss) => `expected an HTTP header name, got ${JSON.stringify(iss.input)}`,
      }),
      z.string().refine((v) => !/[\r\n]/.test(v), { error: 'expected a header value on one line' }),
    )
    .default({})
    .refine(
      (h) =>
        !Object.keys(h).some((k) =>
          ['content-type', 'content-length', 'host', 'transfer-encoding', 'connection'].includes(k.toLowerCase()),
        ),
      {
        error:
          'expected no content-type, content-length, host, transfer-encoding or connection header (Switchyard sets those)',
      },
    ),
  /** A PEM file of CA certificates trusted for this https node (a private CA); null = the system's. */
  caFile: z
    .string()
    .refine(readableFile, { error: (iss) => `expected a readable PEM file, got ${JSON.stringify(iss.input)}` })
    .nullable()
    .default(null),
  /** Largest answer body accepted from this node; a larger one is cut off and the call gets -32005. */
  maxResponseBytes: positiveInt.default(64 * 1024 * 1024),
  /** The node's budget (limits/budget.ts); null = no budget. Shared by replicas through the top-level redis. */
  rateLimit: budgetSchema.nullable().default(null),
  /**
   * Probe what the node serves (upstream/discovery.ts): its earliest block with state, debug
   * methods, methods it refuses as unknown. Configured tags win over what is found.
   */
  discover: z.boolean().default(true),
  /** Never answers a client; gets copies of a sample of answered reads to compare (routing/shadow.ts). */
  shadow: z.boolean().default(false),
  /**
   * The operator or provider running the node: quorum reads count agreeing nodes by group
   * (routing.quorum minGroups), and an unverifiable block is confirmed by a node of another group
   * where there is one (routing/quorum.ts, routing/verdict.ts); null = its own name.
   */
  group: z
    .string()
    .regex(/^[a-zA-Z0-9_.-]{1,64}$/, {
      error: (iss) => `expected a group name of letters, digits, _ . - (at most 64), got ${JSON.stringify(iss.input)}`,
    })
    .nullable()
    .default(null),
});
