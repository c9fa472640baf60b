/**
 * The body a webhook POSTs for an uptime event (docs/uptime-page.md#webhooks shows both):
 * `json`, the event as one JSON object; `slack`, a Slack incoming-webhook body `{ text }` in
 * Slack's mrkdwn, with &, < and > escaped as Slack asks so no text becomes a link or a mention.
 */
import { eventDetail, eventId, eventPath, eventTitle, type UptimeEvent } from './events.js';

export const WEBHOOK_FORMATS = ['json', 'slack'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

/** What every body says about the page it comes from. */
export interface PageContext {
  title: string;
  /** hex, as eth_chainId answers */
  chainId: string;
  /** uptime.publicUrl (without a trailing /), or null: no link. */
  publicUrl: string | null;
}

/** `path` under uptime.publicUrl; null without one (webhooks have no request to take a host from). */
export function pageLink(page: PageContext, path = '/uptime'): string | null {
  return page.publicUrl === null ? null : `${page.publicUrl.replace(/\/+$/, '')}${path}`;
}

/**
 * The JSON body: `id` is the same for every attempt (and is the feed entry's id), for receivers
 * that deduplicate; `url` the event's page (an incident's own page), `page.url` the status page.
 */
export function jsonBody(e: UptimeEvent, page: PageContext): Record<string, unknown> {
  return {
    id: eventId(e, page.chainId),
    type: e.type,
    at: e.at,
    title: eventTitle(e),
    text: eventDetail(e),
    url: pageLink(page, eventPath(e)),
    page: { title: page.title, chainId: page.chainId, url: pageLink(page) },
    ...('incident' in e ? { incident: e.incident } : { maintenance: e.maintenance }),
    ...('update' in e && e.update !== undefined ? { update: e.update } : {}),
  };
}

function slackEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function slackBody(e: UptimeEvent, page: PageContext): { text: string } {
  const link = pageLink(page, eventPath(e));
  const lines = [`*${slackEscape(page.title)}*: ${slackEscape(eventTitle(e))}`, slackEscape(eventDetail(e))];
  if (link !== null) lines.push(`<${link}|Details>`);
  return { text: lines.join('\n') };
}

export function webhookBody(e: UptimeEvent, format: WebhookFormat, page: PageContext): string {
  return JSON.stringify(format === 'slack' ? slackBody(e, page) : jsonBody(e, page));
}
