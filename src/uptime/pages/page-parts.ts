/**
 * What the incident page and the archive share: escaping, dates in UTC, the status pills, and
 * the document around them (the uptime page's style plus their own; no script at all, so their
 * Content-Security-Policy allows only that style).
 * Every text from the store is escaped here; only renderMarkdown's output goes in as HTML.
 */
import { createHash } from 'node:crypto';
import type { IncidentRecord } from '../view.js';
import { duration, escapeHtml, utc } from './html.js';
import { STYLE } from './page.js';

export { duration, escapeHtml, utc };

const EXTRA_STYLE = `
a{color:var(--link)}
.crumbs{font-size:.92rem;margin:0 0 8px}.crumbs a{margin-right:12px}
.timeline li{display:block}
.msg{margin:4px 0 0;white-space:pre-wrap;overflow-wrap:anywhere}
.pill.investigating{background:var(--bad-b)}.pill.identified{background:var(--warn-b)}.pill.monitoring{background:var(--idle-b)}.pill.resolved{background:var(--ok-b)}
.pill.closed{background:transparent}
header{margin-bottom:12px}
.md{overflow-wrap:anywhere}.md pre{overflow-x:auto;background:var(--bg);padding:8px;border-radius:6px}
.md code{font-size:.9em}.md table{margin:8px 0}.md td,.md th{white-space:normal}
.md h1,.md h2,.md h3{font-size:1.05rem;margin:14px 0 6px}
.md ul{list-style:disc;padding-left:22px}.md ol{padding-left:22px}.md ul li,.md ol li{border:0;padding:2px 0}
.pager{display:flex;justify-content:space-between;gap:10px;margin-top:8px}
`;

export const INCIDENT_STYLE = `${STYLE}${EXTRA_STYLE}`;

const sha256 = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/** No script at all; the one inline style; links only. */
export const INCIDENT_CSP = [
  "default-src 'none'",
  `style-src ${sha256(INCIDENT_STYLE)}`,
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** A pill for a probe kind, `operator`, or an update status (all from fixed lists; escaped anyway). */
export function pill(name: string, closed = false): string {
  const label = name === 'operator' ? 'incident' : name;
  return `<span class="pill ${escapeHtml(name)}${closed ? ' closed' : ''}">${escapeHtml(label)}</span>`;
}

/** When it started, when it ended (or that it goes on) and how long. */
export function span(i: IncidentRecord, now: number): string {
  const end = i.endedAt === null ? 'ongoing' : utc(i.endedAt);
  return `${utc(i.startedAt)} - ${end} (${duration((i.endedAt ?? now) - i.startedAt)})`;
}

export function documentOf(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<title>${escapeHtml(title)}</title>
<style>${INCIDENT_STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}
