/**
 * The components card of the uptime page (SPEC 12.3): each check and, with showUpstreams, each
 * upstream, with its state now, its 30-day figure under the page's data rule (figures.ts) and
 * its 90 daily bars (hover, tap or the arrow keys show a day, as for the service's bars).
 * Server-rendered from uptime.json's `components`.
 */
import { figureText, percent } from './figures.js';
import { escapeHtml } from './html.js';
import { dayClass } from './page-history.js';
import type { UptimeReport } from '../view.js';

export const COMPONENTS_STYLE = `
.comp{padding:10px 0;border-top:1px solid var(--line)}.comp:first-of-type{border-top:0}
.comp .top{display:flex;flex-wrap:wrap;justify-content:space-between;gap:4px 10px;align-items:baseline}
.comp .cs{font-weight:600}.comp .cs.operational{color:var(--ok-t)}.comp .cs.degraded{color:var(--warn-t)}.comp .cs.down{color:var(--bad-t)}.comp .cs.maintenance{color:var(--link)}
`;

const CHECK_WORDS: Record<string, string> = {
  reachable: 'Reachable (a node confirms the chain id)',
  advancing: 'Advancing (new blocks come)',
};

export function componentsSection(r: UptimeReport): string {
  const list = r.components ?? [];
  if (list.length === 0) return '';
  const dates = (r.daily ?? []).map((d) => d.date);
  const rows = list
    .map((c, n) => {
      const label = c.kind === 'check' ? (CHECK_WORDS[c.name] ?? c.name) : `Node ${c.name}`;
      const bars = c.days
        .map(
          (f, i) =>
            `<i class="${dayClass(f, false)}" title="${escapeHtml(`${dates[i] ?? ''} (UTC): ${percent(f)}`)}"></i>`,
        )
        .join('');
      return `<div class="comp"><div class="top"><span>${escapeHtml(label)}</span><span class="cs ${c.state}">${c.state}</span></div>
<div class="hint">30 d: ${escapeHtml(figureText(c.uptime, c.observedSeconds, 30 * 86_400))}</div>
<div class="days small" id="comp-${n}" role="group" tabindex="0" aria-label="${escapeHtml(label)}: last 90 days (UTC days)" aria-describedby="comp-${n}-detail">${bars}</div>
<div class="detail" id="comp-${n}-detail" aria-live="polite"></div></div>`;
    })
    .join('\n');
  return `<section class="card" id="components"><h2>Components</h2>${rows}</section>`;
}
