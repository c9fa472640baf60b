/**
 * Who hears of what happens on the uptime page: uptime.webhooks (webhooks.ts) get every incident
 * change the desk tells (incidents.ts: opened, updated, resolved, by a probe or by hand) and every
 * maintenance window starting or ending (maintenance.ts). The feed needs no wiring: it is read
 * from the report at each request (feed.ts).
 */
import { toQuantity } from '../../jsonrpc/hex.js';
import { uptimeEvent, type UptimeEvent } from './events.js';
import type { IncidentDesk, Maintenance, MaintenanceChange } from '../view.js';
import type { PageContext } from './webhook-body.js';
import type { Logger } from 'pino';
import type { WebhookConfig } from '../../config/uptime-schema.js';
import { Webhooks, type WebhookDeps } from './webhooks.js';

export function maintenanceEvent(c: MaintenanceChange): UptimeEvent {
  return { type: c.event === 'started' ? 'maintenance.started' : 'maintenance.ended', at: c.at, maintenance: c.window };
}

/** The webhooks of `settings`, subscribed to the desk and the windows for the room's life (closed with it). */
export function startWebhooks(
  settings: { title: string; publicUrl?: string | null; webhooks?: readonly WebhookConfig[] },
  deps: { chainId: number; metrics: WebhookDeps['metrics']; log: Logger },
  desk: IncidentDesk,
  maintenance: Maintenance,
): Webhooks {
  const webhooks = new Webhooks(settings.webhooks ?? [], pageContext(settings, deps.chainId), deps);
  desk.onIncident((e) => webhooks.send(uptimeEvent(e)));
  maintenance.subscribe((c) => webhooks.send(maintenanceEvent(c)));
  return webhooks;
}

export function pageContext(s: { title: string; publicUrl?: string | null }, chainId: number): PageContext {
  return { title: s.title, chainId: toQuantity(chainId), publicUrl: s.publicUrl ?? null };
}
