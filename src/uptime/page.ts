/**
 * The public uptime page: one self-contained HTML document (inline CSS and script, no external
 * fonts, scripts or images). The report is embedded as JSON so the page renders at once; the
 * script then refreshes it from uptime.json every few seconds, without a reload. All text from
 * the report is set with textContent (never parsed as HTML). A Content-Security-Policy with the
 * hashes of the inline style and script lets the browser refuse anything else, other origins
 * included.
 */
import { createHash } from 'node:crypto';
import { HISTORY_HTML, HISTORY_SCRIPT, HISTORY_STYLE } from './page-history.js';
import { MAINTENANCE_HTML, MAINTENANCE_SCRIPT, MAINTENANCE_STYLE } from './page-maintenance.js';
import { supportSection } from './page-support.js';
import type { UptimeReport } from './report.js';

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
@media (max-width:560px){.grid{grid-template-columns:1fr}.value{font-size:1.15rem}.bar{height:28px;gap:1px}}
${HISTORY_STYLE}${MAINTENANCE_STYLE}`;

// Plain ES2017, no template literals: this text lives inside a TypeScript template string.
const SCRIPT = `
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var data = JSON.parse($('report').textContent);
  var fetchedAt = Date.now();
  var lastOk = Date.now();
  var failing = false;
  var STATES = {
    operational: ['Operational', 'The chain is reachable and advancing.'],
    degraded: ['Degraded', 'Nodes answer, but no new block for a while.'],
    down: ['Down', 'No node confirms the chain.'],
    maintenance: ['Under maintenance', 'Planned maintenance: checks that fail now are not counted.']
  };
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function set(id, text, cls) {
    var e = $(id);
    e.textContent = text;
    if (cls !== undefined) e.className = cls;
  }
  function pct(f) {
    return f === null || f === undefined ? 'no data' : (Math.floor(f * 10000) / 100).toFixed(2) + '%';
  }
  // A window with under an hour, or under 1% of its length, observed says so instead of a figure.
  function figure(name, lengthS) {
    var seen = data.observedSeconds ? data.observedSeconds[name] : 0;
    var f = data.uptime[name];
    if (f === null || f === undefined || seen < 3600 || seen < lengthS / 100) return 'not enough data (' + dur(seen * 1000) + ' observed)';
    return pct(f) + ' of ' + dur(seen * 1000) + ' observed';
  }
  function dur(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + ' s';
    var m = Math.floor(s / 60);
    if (m < 60) return m + ' min ' + (s % 60) + ' s';
    var h = Math.floor(m / 60);
    if (h < 48) return h + ' h ' + (m % 60) + ' min';
    return Math.floor(h / 24) + ' d ' + (h % 24) + ' h';
  }
  function when(iso) {
    return new Date(iso).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
  }
  function hm(t) {
    return new Date(t).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  }
  function num(hex) {
    return hex === null || hex === undefined ? null : parseInt(hex, 16);
  }
  function ages() {
    if (!data) return;
    var since = Date.now() - fetchedAt;
    set('checked', 'checked ' + dur(Date.now() - Date.parse(data.checkedAt)) + ' ago');
    var a = data.checks.advancing;
    set('age', a.headAgeSeconds === null ? 'no block seen yet' : 'rose ' + dur(a.headAgeSeconds * 1000 + since) + ' ago');
    if ($('utc-now')) set('utc-now', new Date().toISOString().slice(0, 19).replace('T', ' ') + ' UTC');
    set('feed', failing ? 'status feed unreachable since ' + hm(lastOk) : '', failing ? 'stale' : '');
  }
  function render() {
    if (!data) {
      set('state', 'Checking...');
      return;
    }
    document.title = data.title;
    set('title', data.title);
    set('chain', data.chainId + ' (' + parseInt(data.chainId, 16) + ')');
    var st = STATES[data.state] || [data.state, ''];
    $('banner').className = 'banner ' + data.state;
    set('state', st[0]);
    set('state-hint', st[1]);
    var r = data.checks.reachable.ok, a = data.checks.advancing;
    set('reachable', r ? 'Yes' : 'No', 'value ' + (r ? 'ok' : 'bad'));
    set('advancing', a.ok ? 'Yes' : 'No', 'value ' + (a.ok ? 'ok' : 'bad'));
    set('advancing-hint', 'a new block within ' + data.stallAfterSeconds + ' s');
    var head = num(a.head);
    set('head', head === null ? '-' : '#' + head.toLocaleString());
    set('u24h', figure('24h', 86400));
    set('u7d', figure('7d', 7 * 86400));
    set('u30d', figure('30d', 30 * 86400));
    var bar = $('bar'), h = data.history, from = Date.parse(h.from), seg = h.segmentSeconds * 1000;
    bar.textContent = '';
    h.segments.forEach(function (f, i) {
      var m = h.maintenance && h.maintenance[i];
      var cls = f === null ? (m ? 'maint' : '') : (f >= 1 ? 'ok' : f >= 0.9 ? 'warn' : 'bad') + (m ? ' mday' : '');
      var s = el('i', cls);
      s.title = hm(from + i * seg) + ' - ' + hm(from + (i + 1) * seg) + ': ' + pct(f) + (m ? ' (maintenance)' : '');
      bar.appendChild(s);
    });
    bar24.refresh();
    renderMaintenance();
    renderDays();
    days.refresh();
    renderLatency();
    var list = $('incidents');
    list.textContent = '';
    // "None in 30 days" only claims what was watched: with less observed, it says how much.
    var watched = data.observedSeconds ? data.observedSeconds['30d'] : 0;
    if (data.incidents.length === 0)
      list.appendChild(el('li', 'empty', watched >= 29 * 86400 ? 'No incidents in the last 30 days.' : 'No incidents in the ' + dur(watched * 1000) + ' observed.'));
    data.incidents.forEach(function (inc) {
      var li = el('li');
      li.appendChild(el('span', 'pill ' + inc.kind + (inc.endedAt ? ' closed' : ''), inc.kind === 'operator' ? 'incident' : inc.kind));
      var end = inc.endedAt ? Date.parse(inc.endedAt) : Date.parse(data.checkedAt);
      var text = when(inc.startedAt) + ' - ' + (inc.endedAt ? when(inc.endedAt) : 'ongoing') + ' (' + dur(end - Date.parse(inc.startedAt)) + ')';
      li.appendChild(el('span', 'when', text));
      var link = el('a', '', inc.summary), latest = inc.updates && inc.updates[0];
      link.href = 'uptime/incidents/' + inc.id;
      li.appendChild(el('div')).appendChild(link);
      if (latest) li.appendChild(el('div', 'hint', latest.status + ', ' + when(latest.at) + ': ' + latest.message));
      list.appendChild(li);
    });
    var card = $('nodes');
    card.hidden = !data.upstreams;
    if (data.upstreams) {
      var body = $('upstreams');
      body.textContent = '';
      data.upstreams.forEach(function (u) {
        var tr = el('tr');
        tr.appendChild(el('td', 'name', u.name));
        var st = el('td', 'st ' + u.state, u.state);
        if (u.cordon) st.appendChild(el('div', 'hint', (u.cordon.reason ? u.cordon.reason + ', ' : '') + 'since ' + when(u.cordon.since)));
        tr.appendChild(st);
        var n = num(u.head);
        tr.appendChild(el('td', 'num', n === null ? '-' : n.toLocaleString()));
        tr.appendChild(el('td', 'num', u.lag === null ? '-' : String(u.lag)));
        tr.appendChild(el('td', 'num', u.latencyMs === null ? '-' : u.latencyMs.toFixed(1) + ' ms'));
        body.appendChild(tr);
      });
    }
    set('every', 'Updates every ' + Math.round(period() / 1000) + ' s');
    ages();
  }
  function period() {
    var p = data ? data.probeIntervalMs : 5000;
    return Math.min(10000, Math.max(2000, p));
  }
  function refresh() {
    fetch('uptime.json', { cache: 'no-store', headers: { accept: 'application/json' } })
      .then(function (res) {
        if (!res.ok) throw new Error('HTTP ' + res.status);
        return res.json();
      })
      .then(function (next) {
        data = next;
        fetchedAt = lastOk = Date.now();
        failing = false;
        render();
      }, function () {
        failing = true;
        ages();
      })
      .then(function () { setTimeout(refresh, period()); });
  }
${HISTORY_SCRIPT}${MAINTENANCE_SCRIPT}
  var bar24 = attachBar($('bar'), $('bar-detail'), 0);
  var days = attachBar($('days'), $('days-detail'), 30);
  render();
  setInterval(ages, 1000);
  setTimeout(refresh, data ? period() : 1000);
})();
`;

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

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The page, with `report` embedded (null before the first probe: the page says it is checking). */
export function renderPage(
  report: UptimeReport | null,
  title: string,
  support: string | null = null,
  now = Date.now(),
): string {
  // Inside <script type="application/json"> only "</" could end the element early.
  const embedded = JSON.stringify(report).replace(/</g, '\\u003c');
  const t = escapeHtml(report?.title ?? title);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<title>${t}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<header>
<h1 id="title">${t}</h1>
<div class="sub">Chain <b id="chain"></b> &middot; <span id="checked"></span></div>
</header>
<section id="banner" class="banner"><div class="dot"></div><div><b id="state">Checking...</b><span id="state-hint"></span></div></section>
${MAINTENANCE_HTML}<section class="grid">
<div class="card"><div class="label">Reachable</div><div class="value" id="reachable">-</div><div class="hint">a node confirms the chain id</div></div>
<div class="card"><div class="label">Advancing</div><div class="value" id="advancing">-</div><div class="hint" id="advancing-hint"></div></div>
<div class="card"><div class="label">Head</div><div class="value" id="head">-</div><div class="hint" id="age"></div></div>
</section>
<section class="card">
<div class="head2"><h2>Uptime</h2><div class="windows"><span>24 h <b id="u24h">-</b></span><span>7 d <b id="u7d">-</b></span><span>30 d <b id="u30d">-</b></span></div></div>
<div class="bar" id="bar" role="group" tabindex="0" aria-label="uptime over the last 24 hours, 16 minutes per segment; arrow keys or a tap show one" aria-describedby="bar-detail"></div>
<div class="axis"><span>24 h ago</span><span>now</span></div>
<div class="detail" id="bar-detail" aria-live="polite">Tap, hover or focus the bar for a segment's figure.</div>
</section>
${HISTORY_HTML}<section class="card"><div class="head2"><h2>Incidents</h2><a href="uptime/incidents">All incidents</a></div><ul id="incidents"></ul></section>
${supportSection(support, now)}
<section class="card" id="nodes" hidden><h2>Nodes</h2><div class="scroll"><table>
<thead><tr><th>Name</th><th>State</th><th class="num">Head</th><th class="num">Lag</th><th class="num">Latency</th></tr></thead>
<tbody id="upstreams"></tbody></table></div></section>
<footer><span id="every"></span> &middot; <a href="uptime.json">JSON</a> &middot; <a href="uptime/badge.svg">badge</a> <span id="feed"></span></footer>
</main>
<script type="application/json" id="report">${embedded}</script>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
