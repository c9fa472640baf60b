/**
 * What happened on the uptime page, as events the Atom feed (feed.ts) and the webhooks
 * (webhooks.ts) both tell: an incident opened, updated or resolved, a maintenance window started
 * or ended. Incidents and windows come in as the plain data of uptime.json (times ISO 8601), so
 * any source (a probe's incident, an operator's, a window from config or the admin port) becomes
 * events the same way.
 * Owns: the event shapes, their stable ids, and the one line of text that names each.
 * Refuses: deciding when something happens (probe-loop.ts, tracker.ts), rendering and sending.
 */
import { createHash } from 'node:crypto';
import { incidentLine, iso, type IncidentEvent } from '../view.js';

export interface IncidentUpdate {
  status: string;
  message: string;
  at: string;
}

/** An incident as uptime.json lists it (updates in any order); title, source and updates are optional. */
export interface EventIncident {
  id: number | string;
  kind?: string;
  title?: string;
  summary: string;
  startedAt: string;
  endedAt: string | null;
  source?: string;
  updates?: readonly IncidentUpdate[];
}

export interface MaintenanceWindow {
  id: number | string;
  title: string;
  start: string;
  end: string;
  /** `all` (or absent) or the upstream names it covers (SPEC 12.3). */
  scope?: 'all' | string[];
}

export const UPTIME_EVENT_TYPES = [
  'incident.opened',
  'incident.updated',
  'incident.resolved',
  'maintenance.started',
  'maintenance.ended',
] as const;
export type UptimeEventType = (typeof UPTIME_EVENT_TYPES)[number];

/** `update`: the update an `incident.updated` tells, or the message an `incident.resolved` closed with. */
export type UptimeEvent =
  | { type: 'incident.opened' | 'incident.resolved'; at: string; incident: EventIncident; update?: IncidentUpdate }
  | { type: 'incident.updated'; at: string; incident: EventIncident; update: IncidentUpdate }
  | { type: 'maintenance.started' | 'maintenance.ended'; at: string; maintenance: MaintenanceWindow };

/** `update`: a hand-opened incident's first message. */
export function openedEvent(incident: EventIncident, update?: IncidentUpdate): UptimeEvent {
  return { type: 'incident.opened', at: incident.startedAt, incident, ...(update && { update }) };
}

export function updatedEvent(incident: EventIncident, update: IncidentUpdate): UptimeEvent {
  return { type: 'incident.updated', at: update.at, incident, update };
}

/** `update`: the `resolved` update that closed it, when an operator did. */
export function resolvedEvent(incident: EventIncident, update?: IncidentUpdate): UptimeEvent {
  const at = incident.endedAt ?? update?.at ?? incident.startedAt;
  return { type: 'incident.resolved', at, incident, ...(update && { update }) };
}

/**
 * Every event in an incident's life so far: opened, each update, resolved once it has ended. An
 * update made at the incident's start (a hand-opened incident's first message) is told by the
 * opening, and the latest `resolved` update of an ended incident by its resolution: neither twice.
 */
export function incidentEvents(incident: EventIncident): UptimeEvent[] {
  const updates = [...(incident.updates ?? [])].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  const first = updates[0]?.at === incident.startedAt ? updates[0] : undefined;
  let closing: IncidentUpdate | undefined;
  if (incident.endedAt !== null) for (const u of updates) if (u.status === 'resolved') closing = u;
  const out = [openedEvent(incident, first)];
  for (const u of updates) if (u !== first && u !== closing) out.push(updatedEvent(incident, u));
  if (incident.endedAt !== null) out.push(resolvedEvent(incident, closing));
  return out;
}

/** A change the incident desk tells (incidents.ts) as an event, its incident as uptime.json has it. */
export function uptimeEvent(e: IncidentEvent): UptimeEvent {
  const incident = incidentLine(e.incident);
  const update =
    e.update === null ? undefined : { status: e.update.status, message: e.update.message, at: iso(e.update.at) };
  if (e.type === 'updated' && update !== undefined) return updatedEvent(incident, update);
  if (e.type === 'resolved') return resolvedEvent(incident, update);
  return openedEvent(incident, update);
}

/** Where an event is told in full: an incident's own page (its whole timeline); a window on the page. */
export function eventPath(e: UptimeEvent): string {
  return 'incident' in e ? `/uptime/incidents/${encodeURIComponent(String(e.incident.id))}` : '/uptime';
}

const KIND_NAMES: Record<string, string> = { unreachable: 'Chain unreachable', stalled: 'Chain stalled' };

/** What the incident is called: its title, else a probe's kind in words, else its summary (a hand-opened one's title). */
export function incidentName(i: EventIncident): string {
  return i.title ?? (i.kind !== undefined ? KIND_NAMES[i.kind] : undefined) ?? i.summary;
}

function capitalised(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** The one line naming an event (an entry's title, a Slack message's first line). */
export function eventTitle(e: UptimeEvent): string {
  switch (e.type) {
    case 'incident.opened':
      return `Incident opened: ${incidentName(e.incident)}`;
    case 'incident.updated':
      return `${capitalised(e.update.status)}: ${incidentName(e.incident)}`;
    case 'incident.resolved':
      return `Resolved: ${incidentName(e.incident)}`;
    case 'maintenance.started':
      return `Maintenance started: ${e.maintenance.title}`;
    case 'maintenance.ended':
      return `Maintenance ended: ${e.maintenance.title}`;
  }
}

/** The text under the title: what was said, or what happened, in plain words. */
export function eventDetail(e: UptimeEvent): string {
  switch (e.type) {
    case 'incident.opened':
      return e.update?.message ?? e.incident.summary;
    case 'incident.updated':
      return e.update.message;
    case 'incident.resolved': {
      const minutes = Math.max(0, Math.round((Date.parse(e.at) - Date.parse(e.incident.startedAt)) / 60_000));
      const lasted = `Resolved after ${minutes} min (${e.incident.summary})`;
      return e.update ? `${e.update.message}\n${lasted}` : lasted;
    }
    case 'maintenance.started':
    case 'maintenance.ended':
      return `Maintenance window ${e.maintenance.start} to ${e.maintenance.end} (UTC)`;
  }
}

/** A fixed namespace, so the same event always gets the same id (RFC 9562 name-based UUID, SHA-1). */
const NAMESPACE = Buffer.from('6f1d8c2a4b9e4f3aa2d57c0e9b1f3a64', 'hex');

export function nameUuid(name: string): string {
  const h = createHash('sha1').update(NAMESPACE).update(name).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `urn:uuid:${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * A stable, globally unique id for an event: a feed entry's atom:id, a webhook body's `id`.
 * The start time is part of it because incident ids restart at 1 with a fresh store.
 */
export function eventId(e: UptimeEvent, chainId: string): string {
  if ('maintenance' in e)
    return nameUuid(`${chainId}/maintenance/${e.maintenance.id}/${e.maintenance.start}/${e.type}`);
  const i = e.incident;
  const update = e.type === 'incident.updated' ? `/${e.update.at}/${e.update.status}` : '';
  return nameUuid(`${chainId}/incident/${i.id}/${i.startedAt}/${e.type}${update}`);
}
