/**
 * What the uptime page shows, rendered on the server from the report (SPEC 12.3 "Without
 * JavaScript"): the page's HTML already holds the state, the open incidents, the checks, the
 * figures, the bars and the lists as they were when it was served; the script only swaps in
 * sections that changed (liveParts, page.ts). Every time is UTC and says so. Every text from the
 * report or the store is escaped here.
 *
 * Sections, in the order a visitor reads them: what is wrong (banner and open incidents), planned
 * maintenance, the checks, the figures and the 24-hour bar, the components, the 90 days and the
 * latency, the incident list, the nodes. `now` null renders the relative ages ("3 s ago") empty,
 * for the script to fill: a section's hash then changes only when its content does.
 */
import { createHash } from 'node:crypto';
import { figureText, percent } from './figures.js';
import { duration, escapeHtml, hhmm, utc, utcMinute } from './html.js';
import { componentsSection } from './page-components.js';
import { daysSection, latencySection } from './page-history.js';
import type { IncidentLine, UptimeReport } from '../view.js';

export const STATE_WORDS: Record<UptimeReport['state'], [string, string]> = {
  operational: ['Operational', 'The chain is reachable and advancing, and no incident is open.'],
  degraded: ['Degraded', 'Something works less well than it should: see below.'],
  down: ['Major outage', 'Calls fail or the chain does not move: see below.'],
  maintenance: ['Under maintenance', 'Planned maintenance: checks that fail now are not counted.'],
};

/** "3 s ago" as of `now`, in a span the script keeps current (empty with now null). */
export function ago(t: number, now: number | null, prefix = '', suffix = ''): string {
  const text = now === null ? '' : `${prefix}${duration(now - t)} ago${suffix}`;
  return `<span class="ago" data-t="${new Date(t).toISOString()}" data-p="${prefix}" data-s="${suffix}">${text}</span>`;
}

function head(r: UptimeReport, now: number | null): string {
  const id = escapeHtml(`${r.chainId} (${parseInt(r.chainId, 16)})`);
  const at = Date.parse(r.checkedAt);
  return `<div class="sub">Chain <b id="chain">${id}</b> &middot; <span id="checked">checked ${utc(at)} ${ago(at, now, '(', ')')}</span></div>`;
}

function impactPill(i: Pick<IncidentLine, 'impact'>): string {
  return `<span class="pill impact ${i.impact}">${i.impact === 'none' ? 'no impact' : `${i.impact} impact`}</span>`;
}

/** The banner and, under it, every open incident with its title, impact and latest update. */
function now_(r: UptimeReport): string {
  const [word, hint] = STATE_WORDS[r.state] ?? [r.state, ''];
  const open = r.incidents.filter((i) => i.endedAt === null);
  const items = open
    .map((i) => {
      const latest = i.updates[0];
      const told = latest
        ? `<div class="hint">${escapeHtml(latest.status)}, ${utcMinute(Date.parse(latest.at))}: ${escapeHtml(latest.message)}</div>`
        : '';
      return `<li>${impactPill(i)}<a href="uptime/incidents/${i.id}">${escapeHtml(i.summary)}</a>
<div class="when">since ${utcMinute(Date.parse(i.startedAt))}</div>${told}</li>`;
    })
    .join('\n');
  const list =
    open.length === 0
      ? ''
      : `<section class="card open" aria-labelledby="open-h"><h2 id="open-h">Open incidents</h2><ul id="open">${items}</ul></section>`;
  return `<section id="banner" class="banner ${r.state}"><div class="dot"></div><div><b id="state">${word}</b><span id="state-hint">${hint}</span></div></section>
${list}`;
}

function maintenance(r: UptimeReport): string {
  const windows = r.maintenance ?? [];
  if (windows.length === 0) return '';
  const at = Date.parse(r.checkedAt);
  const items = windows
    .map((m) => {
      const start = Date.parse(m.start);
      const end = Date.parse(m.end);
      const ongoing = start <= at;
      const scope = m.scope === 'all' ? 'all nodes' : m.scope.map(escapeHtml).join(', ');
      return `<li><span class="pill maint${ongoing ? '' : ' later'}">${ongoing ? 'ongoing' : 'upcoming'}</span><span class="when">${utcMinute(start)} - ${utcMinute(end)} (${duration(end - start)})</span>
<div>${escapeHtml(m.title)}</div><div class="hint">covers ${scope}</div></li>`;
    })
    .join('\n');
  return `<section class="card" id="maint"><h2>Maintenance</h2><ul id="maint-list">${items}</ul></section>`;
}

function checks(r: UptimeReport, now: number | null): string {
  const ok = r.checks.reachable.ok;
  const a = r.checks.advancing;
  const headNo = a.head === null ? null : parseInt(a.head, 16);
  const rose =
    a.headAgeSeconds === null
      ? 'no block seen yet'
      : ago(Date.parse(r.checkedAt) - a.headAgeSeconds * 1000, now, 'rose ');
  return `<section class="grid">
<div class="card"><div class="label">Reachable</div><div class="value ${ok ? 'ok' : 'bad'}" id="reachable">${ok ? 'Yes' : 'No'}</div><div class="hint">a node confirms the chain id</div></div>
<div class="card"><div class="label">Advancing</div><div class="value ${a.ok ? 'ok' : 'bad'}" id="advancing">${a.ok ? 'Yes' : 'No'}</div><div class="hint" id="advancing-hint">a new block within ${r.stallAfterSeconds} s</div></div>
<div class="card"><div class="label">Head</div><div class="value" id="head">${headNo === null ? '-' : `#${headNo.toLocaleString('en-US')}`}</div><div class="hint" id="age">${rose}</div></div>
</section>`;
}

const WINDOW_S = { '24h': 86_400, '7d': 7 * 86_400, '30d': 30 * 86_400 } as const;

function figures(r: UptimeReport): string {
  const f = (w: keyof typeof WINDOW_S): string =>
    escapeHtml(figureText(r.uptime[w], r.observedSeconds?.[w] ?? 0, WINDOW_S[w]));
  const h = r.history;
  const from = Date.parse(h.from);
  const seg = h.segmentSeconds * 1000;
  const segs = h.segments
    .map((x, i) => {
      const m = h.maintenance?.[i] === true;
      const cls = x === null ? (m ? 'maint' : '') : (x >= 1 ? 'ok' : x >= 0.9 ? 'warn' : 'bad') + (m ? ' mday' : '');
      const title = `${hhmm(from + i * seg)} - ${hhmm(from + (i + 1) * seg)} UTC: ${percent(x)}${m ? ' (maintenance)' : ''}`;
      return `<i class="${cls}" title="${title}"></i>`;
    })
    .join('');
  return `<section class="card">
<div class="head2"><h2>Uptime</h2><div class="windows"><span>24 h <b id="u24h">${f('24h')}</b></span><span>7 d <b id="u7d">${f('7d')}</b></span><span>30 d <b id="u30d">${f('30d')}</b></span></div></div>
<div class="bar" id="bar" role="group" tabindex="0" aria-label="uptime over the last 24 hours, 16 minutes per segment; arrow keys or a tap show one" aria-describedby="bar-detail">${segs}</div>
<div class="axis"><span>24 h ago (${hhmm(from)} UTC)</span><span>now</span></div>
<div class="detail" id="bar-detail" aria-live="polite">Tap, hover or focus the bar for a segment's figure.</div>
</section>`;
}

function incidents(r: UptimeReport): string {
  const watched = r.observedSeconds?.['30d'] ?? 0;
  const items =
    r.incidents.length === 0
      ? `<li class="empty">${watched >= 29 * 86_400 ? 'No incidents in the last 30 days.' : `No incidents in the ${duration(watched * 1000)} observed.`}</li>`
      : r.incidents
          .map((i) => {
            const start = Date.parse(i.startedAt);
            const end = i.endedAt === null ? Date.parse(r.checkedAt) : Date.parse(i.endedAt);
            const label = i.kind === 'operator' ? 'incident' : i.kind;
            const latest = i.updates[0];
            return `<li><span class="pill ${escapeHtml(i.kind)}${i.endedAt ? ' closed' : ''}">${escapeHtml(label)}</span><span class="when">${utcMinute(start)} - ${i.endedAt ? utcMinute(end) : 'ongoing'} (${duration(end - start)})</span>
<div><a href="uptime/incidents/${i.id}">${escapeHtml(i.summary)}</a> ${i.endedAt ? '' : impactPill(i)}</div>${latest ? `<div class="hint">${escapeHtml(latest.status)}, ${utcMinute(Date.parse(latest.at))}: ${escapeHtml(latest.message)}</div>` : ''}</li>`;
          })
          .join('\n');
  return `<section class="card"><div class="head2"><h2>Incidents</h2><a href="uptime/incidents">All incidents</a></div><ul id="incidents">${items}</ul></section>`;
}

function nodes(r: UptimeReport): string {
  if (!r.upstreams) return '';
  const rows = r.upstreams
    .map((u) => {
      const head = u.head === null ? '-' : parseInt(u.head, 16).toLocaleString('en-US');
      const cordon = u.cordon
        ? `<div class="hint">${u.cordon.reason ? `${escapeHtml(u.cordon.reason)}, ` : ''}since ${utcMinute(Date.parse(u.cordon.since))}</div>`
        : '';
      return `<tr><td class="name">${escapeHtml(u.name)}</td><td class="st ${escapeHtml(u.state)}">${escapeHtml(u.state)}${cordon}</td><td class="num">${head}</td><td class="num">${u.lag === null ? '-' : u.lag}</td><td class="num">${u.latencyMs === null ? '-' : `${u.latencyMs.toFixed(1)} ms`}</td></tr>`;
    })
    .join('\n');
  return `<section class="card" id="nodes"><h2>Nodes</h2><div class="scroll"><table>
<thead><tr><th>Name</th><th>State</th><th class="num">Head</th><th class="num">Lag</th><th class="num">Latency</th></tr></thead>
<tbody id="upstreams">${rows}</tbody></table></div></section>`;
}

/** The ids of liveParts, in order (the page before the first probe holds empty ones). */
export const PART_IDS = [
  'p-head',
  'p-now',
  'p-maint',
  'p-checks',
  'p-figures',
  'p-components',
  'p-days',
  'p-latency',
  'p-incidents',
  'p-nodes',
] as const;

/** The page's live sections, in reading order: [id, html]. */
export function liveParts(r: UptimeReport, now: number | null): [string, string][] {
  return [
    ['p-head', head(r, now)],
    ['p-now', now_(r)],
    ['p-maint', maintenance(r)],
    ['p-checks', checks(r, now)],
    ['p-figures', figures(r)],
    ['p-components', componentsSection(r)],
    ['p-days', daysSection(r)],
    ['p-latency', latencySection(r)],
    ['p-incidents', incidents(r)],
    ['p-nodes', nodes(r)],
  ];
}

export function partHash(html: string): string {
  return createHash('sha256').update(html).digest('base64url').slice(0, 16);
}

/** One part as a wrapper the script can replace by id, with its hash (of the now-less rendering). */
export function wrapPart(id: string, html: string, hash: string): string {
  return `<div id="${id}" data-h="${hash}">${html}</div>`;
}
