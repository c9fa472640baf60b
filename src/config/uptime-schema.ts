/** uptime.webhooks and uptime.publicUrl: where the uptime page's news goes out (part of schema.ts). */
import { z } from 'zod';
import { httpUrl } from './checks.js';

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
