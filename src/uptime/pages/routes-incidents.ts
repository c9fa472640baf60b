/**
 * The public incident pages (SPEC 12.2): GET /uptime/incidents (the archive, ?page=N from 1) and
 * GET /uptime/incidents/{id} (one incident). An unknown id, or a page past the last, is a 404 page.
 * They change only when someone writes or a probe opens or closes an incident: cached briefly.
 */
import type { SupportConfig } from '../../config/support.js';
import { ARCHIVE_PAGE_SIZE, type IncidentDesk } from '../view.js';
import { INCIDENT_CSP, documentOf } from './page-parts.js';
import { renderArchive } from './page-archive.js';
import { renderIncidentPage } from './page-incident.js';

export type IncidentPages = Pick<IncidentDesk, 'get' | 'archive'>;

export interface IncidentAnswer {
  status: number;
  body: string;
  headers: Record<string, string>;
}

const ONE = /^\/uptime\/incidents\/([1-9][0-9]{0,14})$/;
/** The archive pages asked for are numbers a person would type; beyond this is not a page. */
const MAX_PAGE = 100_000;

function html(status: number, body: string, maxAge: number): IncidentAnswer {
  return {
    status,
    body,
    headers: {
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'content-type': 'text/html; charset=utf-8',
      'cache-control': status === 200 ? `public, max-age=${maxAge}` : 'no-store',
      'content-security-policy': INCIDENT_CSP,
    },
  };
}

function notFound(what: string): IncidentAnswer {
  return html(404, documentOf('Not found', `<h1>Not found</h1><p>${what} <a href="/uptime">Status page</a></p>`), 0);
}

/** The answer for an incident path, or null when the path is not one. */
export function incidentAnswer(
  desk: IncidentPages,
  site: { readonly title: string; readonly support?: SupportConfig | null; readonly probeIntervalMs: number },
  path: string,
  query: string,
  now: number,
): IncidentAnswer | null {
  const maxAge = Math.max(1, Math.floor(site.probeIntervalMs / 1000));
  if (path === '/uptime/incidents') {
    const asked = new URLSearchParams(query).get('page') ?? '1';
    const page = /^[1-9][0-9]{0,5}$/.test(asked) ? Number(asked) : 0;
    if (page < 1 || page > MAX_PAGE) return notFound('No such page of the archive.');
    const { total, incidents } = desk.archive(page);
    if (page > 1 && (page - 1) * ARCHIVE_PAGE_SIZE >= total) return notFound('No such page of the archive.');
    return html(200, renderArchive(page, total, incidents, site.title, now), maxAge);
  }
  const m = ONE.exec(path);
  if (m === null) return null;
  const incident = desk.get(Number(m[1]));
  if (incident === null) return notFound('No incident with this number.');
  return html(200, renderIncidentPage(incident, site.title, site.support ?? null, now), maxAge);
}
