/**
 * GET /uptime/feed.atom (SPEC 12.2): an Atom 1.0 feed with one entry per incident opened, update
 * and resolution, and one per maintenance window, newest first, at most FEED_ENTRIES. The `feed`
 * package writes the Atom elements and escapes them as XML; the text of titles and content is
 * escaped here as HTML first (the package marks them type="html", so a reader would otherwise
 * render markup an operator typed), and characters XML 1.0 cannot carry are dropped.
 * Entry ids are name-based UUIDs of the event (events.ts): the same event keeps its id across
 * restarts and replicas, whatever address the feed was fetched from.
 * Owns: the feed's entries and document. Refuses: where incidents come from (probe-loop.ts, store.ts).
 */
import { Feed } from 'feed';
import {
  eventDetail,
  eventId,
  eventPath,
  eventTitle,
  incidentEvents,
  nameUuid,
  type EventIncident,
  type MaintenanceWindow,
  type UptimeEvent,
} from './events.js';

/** Entries in the feed at most: readers poll it, so it stays small; older events are on the page. */
export const FEED_ENTRIES = 50;

export interface FeedEntry {
  id: string;
  title: string;
  /** Plain text; lines separated by \n. */
  text: string;
  /** ISO 8601 */
  updated: string;
  /** Where it is told, under the public base (absolute links are made in renderFeed). */
  path: string;
}

function eventEntry(e: UptimeEvent, chainId: string): FeedEntry {
  return { id: eventId(e, chainId), title: eventTitle(e), text: eventDetail(e), updated: e.at, path: eventPath(e) };
}

function windowEntry(w: MaintenanceWindow, chainId: string, now: number): FeedEntry {
  const scope = w.scope === undefined || w.scope === 'all' ? 'all nodes' : w.scope.join(', ');
  return {
    id: nameUuid(`${chainId}/maintenance/${w.id}/${w.start}`),
    title: `Maintenance: ${w.title}`,
    text: `Maintenance window ${w.start} to ${w.end} (UTC), covering ${scope}`,
    // A window is news when it is announced; without an announcement time its start stands in,
    // but never a time still to come (SPEC 12.3): an upcoming window is news as of now.
    updated: new Date(Math.min(Date.parse(w.start), now)).toISOString(),
    path: '/uptime',
  };
}

/** The feed's entries, newest first (ties by id, so the order is stable), at most `limit`. */
export function feedEntries(
  incidents: readonly EventIncident[],
  maintenance: readonly MaintenanceWindow[],
  chainId: string,
  limit = FEED_ENTRIES,
  now = Date.now(),
): FeedEntry[] {
  const all = [
    ...incidents.flatMap((i) => incidentEvents(i).map((e) => eventEntry(e, chainId))),
    ...maintenance.map((w) => windowEntry(w, chainId, now)),
  ].filter((e) => Number.isFinite(Date.parse(e.updated)));
  all.sort((a, b) => Date.parse(b.updated) - Date.parse(a.updated) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return all.slice(0, limit);
}

const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The absolute base of the feed's links (Atom readers need absolute ones): uptime.publicUrl when
 * set; else http:// and the request's Host header, used only when it is a plain host[:port] (it is
 * client input: whatever it says only shapes the links in this one answer; ids never depend on it).
 * null when neither can be used.
 */
export function feedBase(publicUrl: string | null | undefined, host: string | undefined): string | null {
  if (publicUrl) return publicUrl.replace(/\/+$/, '');
  if (host === undefined || !HOST.test(host)) return null;
  return `http://${host}`;
}

// Control characters (but tab, newline, return), U+FFFE/U+FFFF and lone surrogates are not XML 1.0 characters.
const NOT_XML =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function xmlText(s: string): string {
  return s.replace(NOT_XML, '');
}

function html(s: string): string {
  return xmlText(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export interface FeedOptions {
  title: string;
  chainId: string;
  base: string;
  /** The feed's id: stable for one deployment (publicUrl when set), never from a request. */
  publicUrl?: string | null;
  /** The feed's `updated` while it has no entry, and the latest it may ever say. */
  now: string;
}

export function renderFeed(entries: readonly FeedEntry[], o: FeedOptions): string {
  const title = xmlText(o.title);
  const feed = new Feed({
    id: nameUuid(`${o.chainId}/feed/${o.publicUrl ?? ''}`),
    title,
    // The newest entry's time, never one still to come (SPEC 12.3).
    updated: new Date(Math.min(Date.parse(entries[0]?.updated ?? o.now), Date.parse(o.now))),
    generator: 'Switchyard',
    link: `${o.base}/uptime`,
    feed: `${o.base}/uptime/feed.atom`,
    // Atom requires an author on the feed (or on every entry): the page speaks for the service.
    author: { name: title },
  });
  for (const e of entries) {
    feed.addItem({
      id: e.id,
      title: html(e.title),
      link: `${o.base}${e.path}`,
      date: new Date(e.updated),
      content: html(e.text).replace(/\n/g, '<br>'),
    });
  }
  return feed.atom1();
}
