/** The `uptime` section (the public uptime page, SPEC 12) of schema.ts: the page, its support link, and where its news goes out (webhooks, publicUrl). */
import { z } from 'zod';
import { httpUrl } from './checks.js';
import { maintenanceSchema } from './maintenance-schema.js';
import { MAX_SUPPORT, isSupportEmail, isSupportUrl, supportLink } from './support.js';

/** Webhooks at most: each has its own queue and sender (uptime/notify/webhooks.ts). */
export const MAX_WEBHOOKS = 20;

export const webhookSchema = z.strictObject({
  /** A secret like an upstream URL (a Slack webhook's path is its key): never logged, masked in --print. */
  url: httpUrl,
  /** json: the event as a JSON object; slack: a Slack incoming-webhook body { text }. */
  format: z.enum(['json', 'slack']).default('json'),
  /** How logs and /status name it (default `webhooks[<index>]`); the URL never is. */
  name: z
    .string()
    .regex(/^[a-zA-Z0-9_.-]{1,64}$/, {
      error: (iss) => `expected a name of letters, digits, _ . - (at most 64), got ${JSON.stringify(iss.input)}`,
    })
    .optional(),
});
export type WebhookConfig = z.infer<typeof webhookSchema>;

export const webhooksSchema = z.array(webhookSchema).max(MAX_WEBHOOKS).default([]);

/** The page's public address (scheme, host, optional path prefix): the base of the feed's links and of webhook links. */
export const publicUrlSchema = httpUrl.nullable().default(null);

export const uptimeSchema = z
  .strictObject({
    enabled: z.boolean().default(true),
    /** How often the two checks run (reachable: a node confirms the chain id; advancing: the head rose). */
    probeIntervalMs: z.number().int().min(100).default(5_000),
    /** The chain counts as stalled when the fleet head has not risen for this long. */
    stallAfterSeconds: z.number().positive().default(60),
    /** SQLite file for probe history and incidents (relative to the working directory); null = memory only. */
    store: z.string().min(1).nullable().default('data/uptime.db'),
    /** List each upstream by name (state, head, lag, latency) on the page; never a URL. */
    showUpstreams: z.boolean().default(true),
    title: z.string().min(1).max(200).default('Switchyard status'),
    /** Planned maintenance windows [{ start, end, title }] (maintenance-schema.ts); reloadable. */
    maintenance: maintenanceSchema,
    /**
     * "Report a problem" (SPEC 12.2, 12.3): { url, email } (either null), or one string (an https
     * URL, a mailto: URL or an e-mail address); null or both null = not shown.
     */
    support: z
      .union([
        z.string().refine((v) => supportLink(v) !== null, {
          error: `expected an https:// or http:// URL, a mailto: URL or an e-mail address (at most ${MAX_SUPPORT} characters)`,
        }),
        z.strictObject({
          url: z
            .string()
            .refine(isSupportUrl, {
              error: `expected an https:// or http:// URL (at most ${MAX_SUPPORT} characters)`,
            })
            .nullable()
            .default(null),
          email: z
            .string()
            .refine(isSupportEmail, {
              error: `expected an e-mail address or a mailto: URL (at most ${MAX_SUPPORT} characters)`,
            })
            .nullable()
            .default(null),
        }),
      ])
      .nullable()
      .default(null),
    /** Base of the feed's and webhooks' links, e.g. https://rpc.example.com; null: the feed uses the request's Host. */
    publicUrl: publicUrlSchema,
    /** A POST to each on every incident opened, updated or resolved, every window starting or ending (uptime/notify/webhooks.ts). */
    webhooks: webhooksSchema,
  })
  .prefault({});
