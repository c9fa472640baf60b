/**
 * The public uptime page: one self-contained HTML document (inline CSS and script, no external
 * fonts, scripts or images), rendered on the server (page-live.ts), so without JavaScript it
 * already shows the state, the open incidents, the checks and the bars as they were when served.
 * The script (page-script.ts, checked source whose text the page carries inline) only keeps it
 * current: every few seconds it asks uptime/parts for the sections whose hash it does not have (a
 * 304 when none changed) and swaps those in, and it keeps the relative ages and the UTC clock
 * ticking. Every text is escaped on the server. A Content-Security-Policy
 * with the hashes of the inline style and script lets the browser refuse anything else, other
 * origins included.
 */
import { createHash } from 'node:crypto';
import { escapeHtml } from './html.js';
import { HISTORY_STYLE } from './page-history.js';
import { PART_IDS, liveParts, partHash, wrapPart } from './page-live.js';
import { COMPONENTS_STYLE } from './page-components.js';
import { MAINTENANCE_STYLE } from './page-maintenance.js';
import { PAGE_SCRIPT } from './page-script.js';
import { supportSection } from './page-support.js';
import type { UptimeReport } from '../view.js';
import type { SupportConfig } from '../../config/support.js';

export const STYLE = `
:root{--bg:#f6f7f9;--card:#fff;--text:#1b1f24;--muted:#5f6b7a;--line:#e3e7ec;--ok:#1f9d55;--warn:#d08a00;--bad:#d64545;--none:#d5dae1;--ok-t:#13703a;--warn-t:#8a5a00;--bad-t:#b02a2a;--ok-b:#13703a;--warn-b:#8a5a00;--bad-b:#b02a2a;--idle-b:#5f6b7a;--link:#0b57d0}
@media (prefers-color-scheme:dark){:root{--bg:#0f1419;--card:#182028;--text:#e6eaef;--muted:#a3b0bd;--line:#26313c;--ok:#35c274;--warn:#e0a526;--bad:#f06a6a;--none:#34404c;--ok-t:#4cd487;--warn-t:#f0b840;--bad-t:#ff8a8a;--link:#8ab4f8}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--text);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;-webkit-text-size-adjust:100%}
main{max-width:780px;margin:0 auto;padding:20px 14px 32px}
header h1{font-size:1.45rem;margin:0 0 2px}
.sub{color:var(--muted);font-size:.92rem}
.banner{display:flex;align-items:center;gap:12px;margin:16px 0;padding:14px 16px;border-radius:10px;color:#fff;background:var(--idle-b)}
.banner.operational{background:var(--ok-b)}.banner.degraded{background:var(--warn-b)}.banner.down{background:var(--bad-b)}
.banner b{font-size:1.15rem;display:block}.banner span{font-size:.92rem}
.dot{width:14px;height:14px;border-radius:50%;background:#fff;flex:none;box-shadow:0 0 0 4px rgba(255,255,255,.3)}
.grid{display:grid;grid-template-columns:repeat(3,1fr);gap:10px;margin-bottom:10px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 14px;margin-bottom:10px}
.grid .card{margin:0}
.label{color:var(--muted);font-size:.8rem;text-transform:uppercase;letter-spacing:.04em}
.value{font-size:1.3rem;font-weight:600;font-variant-numeric:tabular-nums}
.value.ok{color:var(--ok-t)}.value.bad{color:var(--bad-t)}
.hint{color:var(--muted);font-size:.85rem}
h2{font-size:1rem;margin:0 0 8px}
.head2{display:flex;flex-wrap:wrap;justify-content:space-between;align-items:baseline;gap:6px}
.windows{display:flex;flex-wrap:wrap;gap:4px 14px;font-variant-numeric:tabular-nums;color:var(--muted);font-size:.9rem}
.windows b{color:var(--text)}
.bar{display:flex;gap:2px;height:34px;margin-top:8px;cursor:pointer;border-radius:4px}
.bar:focus-visible{outline:3px solid var(--text);outline-offset:3px}
.bar i.sel{outline:2px solid var(--text);outline-offset:1px}
.detail{min-height:1.3em;font-size:.88rem;font-variant-numeric:tabular-nums;margin-top:4px}
.bar i{flex:1;border-radius:2px;background:var(--none);min-width:1px}
.bar i.ok{background:var(--ok)}.bar i.warn{background:var(--warn)}.bar i.bad{background:var(--bad)}
.axis{display:flex;justify-content:space-between;color:var(--muted);font-size:.78rem;margin-top:4px}
ul{list-style:none;margin:0;padding:0}
li{padding:8px 0;border-top:1px solid var(--line)}li:first-child{border-top:0}
.pill{display:inline-block;font-size:.75rem;font-weight:600;padding:1px 8px;border-radius:999px;color:#fff;background:var(--bad-b);border:1px solid transparent;margin-right:6px}
.pill.stalled,.pill.operator{background:var(--warn-b)}.pill.closed{background:transparent;color:var(--text);border-color:var(--muted)}
.when{font-variant-numeric:tabular-nums;font-size:.88rem}
.empty{color:var(--muted)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums;font-size:.92rem}
th,td{text-align:left;padding:6px 8px;border-top:1px solid var(--line);white-space:nowrap}
th{color:var(--muted);font-weight:500;border-top:0}
td.num,th.num{text-align:right}
.st{font-weight:600}.st.healthy{color:var(--ok-t)}.st.down,.st.quarantined{color:var(--bad-t)}.st.connecting,.st.cordoned,.st.stalled{color:var(--warn-t)}.st .hint{white-space:normal;font-weight:400}
footer{color:var(--muted);font-size:.82rem;text-align:center;margin-top:14px}
footer a{color:inherit}
#incidents a,#support a,.head2 a{color:var(--link)}
.steps{list-style:decimal;padding-left:22px}.steps>li{border:0;padding:4px 0}.steps ul{list-style:disc;padding-left:20px}.steps ul li{border:0;padding:2px 0}
.stale{color:var(--bad-t);font-weight:600}
.card.open{border-color:var(--bad-b);border-width:2px}.card.open li a{font-weight:600;color:var(--link)}
.pill.impact{background:var(--idle-b)}.pill.impact.minor{background:var(--warn-b)}.pill.impact.major,.pill.impact.critical{background:var(--bad-b)}
.banner.down{background:var(--bad-b)}
@media (max-width:560px){.grid{grid-template-columns:1fr}.value{font-size:1.15rem}.bar{height:28px;gap:1px}}
${HISTORY_STYLE}${MAINTENANCE_STYLE}${COMPONENTS_STYLE}`;

const SCRIPT = PAGE_SCRIPT;

const sha256 = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/** Only the page's own inline style and script run, and it may only fetch from its own origin. */
export const PAGE_CSP = [
  "default-src 'none'",
  `style-src ${sha256(STYLE)}`,
  `script-src ${sha256(SCRIPT)}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** The hashes of the parts of `report`, and the ETag of them all (routes.ts answers uptime/parts with it). */
export function pageParts(report: UptimeReport): { id: string; html: string; hash: string }[] {
  return liveParts(report, null).map(([id, html]) => ({ id, html, hash: partHash(html) }));
}

export function partsEtag(parts: readonly { hash: string }[]): string {
  return `"${partHash(parts.map((p) => p.hash).join('.'))}"`;
}

/** The parts whose hash is not in `have` (the script's), wrapped to be swapped in by id. */
export function renderParts(report: UptimeReport, have: ReadonlySet<string>): string {
  return pageParts(report)
    .filter((p) => !have.has(p.hash))
    .map((p) => wrapPart(p.id, p.html, p.hash))
    .join('\n');
}

/** The page, rendered from `report` (null before the first probe: the page says it is checking). */
export function renderPage(
  report: UptimeReport | null,
  title: string,
  support: SupportConfig | null = null,
  now = Date.now(),
  probeIntervalMs = 5_000,
): string {
  const t = escapeHtml(report?.title ?? title);
  const parts = report === null ? [] : pageParts(report);
  const shown = report === null ? [] : liveParts(report, now);
  const body =
    report === null
      ? PART_IDS.map((id) =>
          id === 'p-now'
            ? `<div id="p-now" data-h=""><section id="banner" class="banner"><div class="dot"></div><div><b id="state">Checking...</b><span id="state-hint">No probe has finished yet; this page fills in within seconds.</span></div></section></div>`
            : `<div id="${id}" data-h=""></div>`,
        ).join('\n')
      : shown.map(([id, html], i) => wrapPart(id, html, parts[i]!.hash)).join('\n');
  const etag = report === null ? '' : partsEtag(parts);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<link rel="alternate" type="application/atom+xml" title="${t}: incidents and maintenance" href="uptime/feed.atom">
<title>${t}</title>
<style>${STYLE}</style>
</head>
<body data-period="${probeIntervalMs}" data-etag="${escapeHtml(etag)}">
<main>
<header>
<h1 id="title">${t}</h1>
</header>
${body}
${supportSection(support, now)}
<footer>All times are UTC. <span id="every"></span> &middot; <a href="uptime.json">JSON</a> &middot; <a href="uptime/feed.atom" rel="alternate" type="application/atom+xml">Atom feed</a> &middot; <a href="uptime/badge.svg">badge</a> <span id="feed"></span></footer>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
