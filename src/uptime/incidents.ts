/**
 * The incident desk (SPEC 12.2): what the admin routes call to open an incident by hand, add an
 * update to any incident, or attach a post-mortem, and what the incident page and the archive
 * read. Every change is told to the listeners (onIncident): the feed and webhooks hang there.
 * Owns: turning a write into a stored change and an event. Refuses: judging input
 * (server/admin-incidents.ts), storage (incident-store.ts), presentation (page-incident.ts).
 */
import type { Logger } from 'pino';
import type { IncidentRecord, IncidentUpdate, Refusal, UpdateStatus } from './store/incident-store.js';
import type { UptimeStore } from './store/store.js';
import type { Impact } from './store/impact.js';

export type IncidentEventType = 'opened' | 'updated' | 'resolved';

/**
 * One change to an incident. `update` is the update that made it (null for a probe's incident
 * opening or closing with its check). An update with status `resolved` that closes a hand-opened
 * incident is told as `resolved`; every other update as `updated`.
 */
export interface IncidentEvent {
  type: IncidentEventType;
  incident: IncidentRecord;
  update: IncidentUpdate | null;
}

export type IncidentListener = (event: IncidentEvent) => void;

/** A store write that fell back to memory, or undefined if even that failed (Uptime.write). */
export type StoreRun = <T>(op: () => T) => T | undefined;

/** What a write answers: the incident, why nothing changed, or null when the store failed. */
export type DeskResult = IncidentRecord | Refusal | null;

/** Archive page size (GET /uptime/incidents?page=N). */
export const ARCHIVE_PAGE_SIZE = 25;
/** incidentsWithUpdates() gives at most this many. */
export const INCIDENTS_GIVEN = 200;

export class IncidentDesk {
  private readonly listeners = new Set<IncidentListener>();

  constructor(
    private readonly store: UptimeStore,
    private readonly clock: { now(): number },
    private readonly log: Logger,
    private readonly run: StoreRun,
    /** Called after every change, so the page shows it without waiting for the next probe. */
    private readonly changed: () => void,
  ) {}

  open(title: string, status: UpdateStatus, message: string, impact?: Impact): DeskResult {
    const r = this.run(() => this.store.told.open(title, status, message, this.clock.now(), impact)) ?? null;
    if (r === null || 'refused' in r) return r;
    this.log.info({ id: r.id, status }, 'uptime incident opened by hand');
    this.tell('opened', r, r.updates[0]!);
    if (r.endedAt !== null) this.tell('resolved', r, r.updates[0]!);
    return r;
  }

  update(id: number, status: UpdateStatus, message: string, impact?: Impact): DeskResult {
    const r = this.run(() => this.store.told.update(id, status, message, this.clock.now(), impact)) ?? null;
    if (r === null || 'refused' in r) return r;
    this.log.info({ id, status }, 'uptime incident updated');
    const closes = r.source === 'operator' && status === 'resolved';
    this.tell(closes ? 'resolved' : 'updated', r, r.updates[0]!);
    return r;
  }

  postmortem(id: number, markdown: string): DeskResult {
    const r = this.run(() => this.store.told.postmortem(id, markdown, this.clock.now())) ?? null;
    if (r === null || 'refused' in r) return r;
    this.log.info({ id, bytes: Buffer.byteLength(markdown) }, 'uptime incident post-mortem attached');
    this.changed();
    return r;
  }

  get(id: number): IncidentRecord | null {
    return this.run(() => this.store.told.get(id)) ?? null;
  }

  /** Page `page` (from 1) of every incident kept, newest first; its size is ARCHIVE_PAGE_SIZE. */
  archive(page: number): { total: number; incidents: IncidentRecord[] } {
    const offset = (page - 1) * ARCHIVE_PAGE_SIZE;
    return this.run(() => this.store.told.archive(offset, ARCHIVE_PAGE_SIZE)) ?? { total: 0, incidents: [] };
  }

  /** Open incidents and those started at or after `since` (ms), newest first, with their updates. */
  incidentsWithUpdates(since = 0): IncidentRecord[] {
    return this.run(() => this.store.told.recent(since, INCIDENTS_GIVEN)) ?? [];
  }

  /** Calls `listener` on every incident opened, updated or resolved; returns how to stop. */
  onIncident(listener: IncidentListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A probe's incident opened or closed with its check (probe-loop.ts; the probe refreshes the page itself). */
  probeChanged(type: 'opened' | 'resolved', id: number): void {
    const r = this.listeners.size === 0 ? null : this.get(id);
    if (r !== null) this.notify(type, r, null);
  }

  private tell(type: IncidentEventType, incident: IncidentRecord, update: IncidentUpdate | null): void {
    this.changed();
    this.notify(type, incident, update);
  }

  private notify(type: IncidentEventType, incident: IncidentRecord, update: IncidentUpdate | null): void {
    for (const listener of this.listeners) {
      // A listener's failure is its own: the write is done and the others are still told.
      try {
        listener({ type, incident, update });
      } catch (err) {
        this.log.error({ err, type, id: incident.id }, 'uptime incident listener failed');
      }
    }
  }
}
