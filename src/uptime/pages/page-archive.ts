/**
 * GET /uptime/incidents?page=N: every incident kept (incident-store.ts says how long), newest
 * first, ARCHIVE_PAGE_SIZE per page, each with its span, latest update and a link to its page.
 * Server-rendered, no script.
 */
import { ARCHIVE_PAGE_SIZE, type IncidentRecord } from '../view.js';
import { documentOf, escapeHtml, pill, span, utc } from './page-parts.js';

function line(i: IncidentRecord, now: number): string {
  const u = i.updates[0];
  const latest =
    u === undefined ? '' : `<div class="hint">${escapeHtml(u.status)} ${utc(u.at)}: ${escapeHtml(u.message)}</div>`;
  const pm = i.postmortem === null ? '' : ' <span class="hint">(post-mortem)</span>';
  return `<li>${pill(i.kind, i.endedAt !== null)}<span class="when">${span(i, now)}</span>
<div><a href="incidents/${i.id}">${escapeHtml(i.summary)}</a>${pm}</div>${latest}</li>`;
}

export function renderArchive(
  page: number,
  total: number,
  incidents: IncidentRecord[],
  siteTitle: string,
  now: number,
): string {
  const pages = Math.max(1, Math.ceil(total / ARCHIVE_PAGE_SIZE));
  const newer = page > 1 ? `<a href="incidents?page=${page - 1}" rel="prev">Newer</a>` : '<span></span>';
  const older = page < pages ? `<a href="incidents?page=${page + 1}" rel="next">Older</a>` : '<span></span>';
  const items = incidents.map((i) => line(i, now)).join('\n');
  const body = `<header>
<nav class="crumbs" aria-label="pages"><a href="../uptime">${escapeHtml(siteTitle)}</a></nav>
<h1 id="title">All incidents</h1>
<div class="sub">${total} in all, newest first &middot; page ${page} of ${pages}</div>
</header>
<section class="card"><ul id="archive">
${items || '<li class="empty">No incident recorded.</li>'}
</ul>
<nav class="pager" aria-label="archive pages">${newer}${older}</nav></section>`;
  return documentOf(`All incidents - ${siteTitle}`, body);
}
