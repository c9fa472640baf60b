/**
 * The history cards of the uptime page (SPEC 12.2 History), rendered on the server: the 90 daily
 * bars (a day's figure, its maintenance and its incidents on hover, tap or keyboard focus, through
 * the page script's bar handling, attachBar) and the probe latency of the last 24 hours (p50 and
 * p95 per hour) as an inline SVG with a title, a description and a table as its text alternative.
 * Days are UTC days and hours UTC hours, and the page says so.
 */
import { duration, percent } from './figures.js';
import { escapeHtml, hhmm } from './html.js';
import type { DayLine, UptimeReport } from '../view.js';

export const HISTORY_STYLE = `
:root{--maint:#2b6cb0;--maint-b:#1d4f91;--p50:#2b6cb0;--p95:#9cc2ee}
@media (prefers-color-scheme:dark){:root{--maint:#63a4ff;--p50:#63a4ff;--p95:#2c4a6e}}
.bar i.maint{background:var(--maint)}.bar i.mday{box-shadow:inset 0 -5px 0 var(--maint)}
.days{display:grid;grid-template-columns:repeat(90,1fr);gap:2px;margin-top:8px;cursor:pointer;border-radius:4px}
.days i{height:34px;border-radius:2px;background:var(--none);min-width:1px}
.days.small i{height:18px}
.days i.ok{background:var(--ok)}.days i.warn{background:var(--warn)}.days i.bad{background:var(--bad)}
.days i.maint{background:var(--maint)}.days i.mday{box-shadow:inset 0 -12px 0 var(--maint)}
.days:focus-visible{outline:3px solid var(--text);outline-offset:3px}
.days i.sel{outline:2px solid var(--text);outline-offset:1px}
.legend{display:flex;flex-wrap:wrap;gap:4px 12px;color:var(--muted);font-size:.78rem;margin-top:6px}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px;background:var(--none)}
.legend i.ok{background:var(--ok)}.legend i.warn{background:var(--warn)}.legend i.bad{background:var(--bad)}.legend i.maint{background:var(--maint)}
.legend i.p50{background:var(--p50)}.legend i.p95{background:var(--p95)}
svg.lat{display:block;width:100%;height:auto;margin-top:8px}
svg.lat .p50{fill:var(--p50)}svg.lat .p95{fill:var(--p95)}svg.lat line{stroke:var(--line)}
svg.lat text{fill:var(--muted);font-size:11px}
details{margin-top:6px;font-size:.88rem}summary{cursor:pointer;color:var(--muted)}
@media (max-width:560px){.days{grid-template-columns:repeat(30,1fr);gap:3px}.days i{height:24px}.days i.mday{box-shadow:inset 0 -9px 0 var(--maint)}.days.small{grid-template-columns:repeat(90,1fr);gap:1px}.days.small i{height:18px}svg.lat text{font-size:24px}}
`;

export function dayText(d: DayLine): string {
  const seen = `${percent(d.uptime)} of ${duration(d.observedSeconds * 1000)} observed`;
  let text = `${d.date} (UTC): ${d.uptime === null ? 'no data' : seen}`;
  if (d.maintenance) text += '; maintenance';
  if (d.incidentCount === 0) return `${text}; no incidents`;
  text += `; ${d.incidentCount}${d.incidentCount === 1 ? ' incident: ' : ' incidents: '}`;
  text += d.incidents
    .map((x) => `${x.kind} ${x.startedAt.slice(11, 16)}-${x.endedAt ? x.endedAt.slice(11, 16) : 'ongoing'}`)
    .join(', ');
  return text + (d.incidentCount > d.incidents.length ? ', ...' : '');
}

export function dayClass(uptime: number | null, maintenance: boolean): string {
  const cls = uptime === null ? (maintenance ? 'maint' : '') : uptime >= 0.999 ? 'ok' : uptime >= 0.99 ? 'warn' : 'bad';
  return cls + (maintenance && uptime !== null ? ' mday' : '');
}

/** 90 bars as <i> elements with their text in a title (the script shows it on hover, tap, keys). */
export function dayBars(days: readonly DayLine[]): string {
  return days
    .map((d) => `<i class="${dayClass(d.uptime, d.maintenance)}" title="${escapeHtml(dayText(d))}"></i>`)
    .join('');
}

export function daysSection(r: UptimeReport): string {
  return `<section class="card">
<h2 id="days-h">Last 90 days (UTC days)</h2>
<div class="days" id="days" role="group" tabindex="0" aria-labelledby="days-h" aria-describedby="days-detail">${dayBars(r.daily ?? [])}</div>
<div class="axis"><span>90 days ago</span><span>today</span></div>
<div class="legend"><span><i class="ok"></i>99.9% or more</span><span><i class="warn"></i>99% or more</span><span><i class="bad"></i>less</span><span><i></i>no data</span><span><i class="maint"></i>maintenance</span></div>
<div class="detail" id="days-detail" aria-live="polite">Tap, hover or focus the days (arrow keys) for a day's figure and incidents.</div>
</section>`;
}

const ms = (v: number | null): string => (v === null ? '-' : `${v.toFixed(1)} ms`);

export function latencySection(r: UptimeReport): string {
  const lat = r.latency;
  if (!lat) return '';
  const from = Date.parse(lat.from);
  const hour = lat.hourSeconds * 1000;
  let top = 0;
  let worst = 0;
  lat.hours.forEach((h, i) => {
    if (h.p95Ms !== null && h.p95Ms > top) {
      top = h.p95Ms;
      worst = i;
    }
  });
  const scale = top > 0 ? 120 / top : 0;
  const w = 720 / lat.hours.length;
  const n = (v: number): string => String(Math.round(v * 100) / 100);
  const shapes: string[] = ['<line x1="0" y1="150.5" x2="720" y2="150.5"></line>'];
  const rows: string[] = [];
  lat.hours.forEach((h, i) => {
    const x = i * w + 2;
    if (h.p95Ms !== null)
      shapes.push(
        `<rect class="p95" x="${n(x)}" width="${n(w - 4)}" y="${n(150 - h.p95Ms * scale)}" height="${n(h.p95Ms * scale)}"></rect>`,
      );
    if (h.p50Ms !== null)
      shapes.push(
        `<rect class="p50" x="${n(x + w / 4)}" width="${n(w / 2 - 2)}" y="${n(150 - h.p50Ms * scale)}" height="${n(h.p50Ms * scale)}"></rect>`,
      );
    if (i % 6 === 0) shapes.push(`<text x="${n(x)}" y="178">${hhmm(from + i * hour)}</text>`);
    rows.push(
      `<tr><td>${hhmm(from + i * hour)}</td><td class="num">${h.probes}</td><td class="num">${ms(h.p50Ms)}</td><td class="num">${ms(h.p95Ms)}</td></tr>`,
    );
  });
  if (top > 0) shapes.push(`<text x="4" y="22">${ms(top)}</text>`);
  const last = lat.hours[lat.hours.length - 1];
  const text =
    top === 0 || last === undefined
      ? 'No probe latency yet.'
      : `This hour: p50 ${ms(last.p50Ms)}, p95 ${ms(last.p95Ms)}. Highest hourly p95 over 24 h: ${ms(top)} (hour from ${hhmm(from + worst * hour)} UTC).`;
  return `<section class="card">
<h2>Probe latency, last 24 hours (UTC hours)</h2>
<div class="hint">How long the first node took to confirm the chain id, per hour.</div>
<svg class="lat" id="lat" viewBox="0 0 720 184" role="img" aria-labelledby="lat-title lat-desc"><title id="lat-title">Probe latency per hour, last 24 hours: p50 and p95</title><desc id="lat-desc">${text}</desc>${shapes.join('')}</svg>
<div class="legend"><span><i class="p50"></i>p50 (half of the probes were faster)</span><span><i class="p95"></i>p95</span></div>
<div class="detail" id="lat-text">${text}</div>
<details id="lat-table"><summary>Table of the hours (UTC)</summary><div class="scroll"><table><thead><tr><th>Hour</th><th class="num">Probes</th><th class="num">p50</th><th class="num">p95</th></tr></thead><tbody id="lat-rows">${rows.join('')}</tbody></table></div></details>
</section>`;
}
