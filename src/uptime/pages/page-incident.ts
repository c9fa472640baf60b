/**
 * GET /uptime/incidents/{id}: one incident on its own page (SPEC 12.2): what it was, when it
 * started and ended, the whole timeline newest first (each update with its status and time; for a
 * probe's incident also when the check failed and when it held again), and the post-mortem
 * rendered from Markdown (markdown.ts). Server-rendered, no script.
 */
import type { IncidentRecord } from '../view.js';
import { renderMarkdown } from './markdown.js';
import { documentOf, escapeHtml, pill, span, utc } from './page-parts.js';
import { supportSection } from './page-support.js';
import type { SupportConfig } from '../../config/support.js';

interface Entry {
  at: number;
  pill: string;
  text: string;
}

/** Updates, and a probe incident's own start and end, newest first (ties: the later written first). */
function timeline(i: IncidentRecord): Entry[] {
  const out: Entry[] = i.updates.map((u) => ({ at: u.at, pill: pill(u.status), text: u.message }));
  if (i.source === 'probe') {
    out.push({ at: i.startedAt, pill: pill(i.kind), text: `Detected by the probes: ${i.summary}` });
    if (i.endedAt !== null)
      out.push({ at: i.endedAt, pill: pill('resolved'), text: 'The probes found the check holding again.' });
  }
  return out
    .map((e, n) => ({ e, n }))
    .sort((a, b) => b.e.at - a.e.at || a.n - b.n)
    .map(({ e }) => e);
}

export function renderIncidentPage(
  i: IncidentRecord,
  siteTitle: string,
  support: SupportConfig | null,
  now: number,
): string {
  const entries = timeline(i)
    .map((e) => `<li>${e.pill}<span class="when">${utc(e.at)}</span><p class="msg">${escapeHtml(e.text)}</p></li>`)
    .join('\n');
  const postmortem =
    i.postmortem === null
      ? ''
      : `<section class="card" id="postmortem"><h2>Post-mortem</h2><div class="md">${renderMarkdown(i.postmortem.markdown)}</div>
<div class="hint">Published ${utc(i.postmortem.at)}</div></section>`;
  const body = `<header>
<nav class="crumbs" aria-label="pages"><a href="../../uptime">${escapeHtml(siteTitle)}</a><a href="../incidents">All incidents</a></nav>
<h1 id="title">${escapeHtml(i.summary)}</h1>
<div class="sub">${pill(i.kind, i.endedAt !== null)}<span class="when">${span(i, now)}</span></div>
</header>
<section class="card"><h2>Timeline</h2><ul class="timeline" id="timeline">
${entries || '<li class="empty">No update yet.</li>'}
</ul></section>
${postmortem}
${supportSection(support, now)}`;
  return documentOf(`${i.summary} - ${siteTitle}`, body);
}
