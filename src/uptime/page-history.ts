/**
 * The history cards of the uptime page (SPEC 12.2 History), as fragments page.ts puts into its one
 * document: the 90 daily bars (a day's figure, its maintenance and its incidents on hover, tap or
 * keyboard focus, through the same bar handling as the 24-hour bar) and the probe latency of the
 * last 24 hours (p50 and p95 per hour) as an inline SVG drawn by the script, with a title, a
 * description and a table as its text alternative. The script fragment runs inside page.ts's
 * script and uses its helpers ($, el, set, pct, dur, hm, data); all text is set with textContent.
 */

export const HISTORY_STYLE = `
:root{--maint:#2b6cb0;--maint-b:#1d4f91;--p50:#2b6cb0;--p95:#9cc2ee}
@media (prefers-color-scheme:dark){:root{--maint:#63a4ff;--p50:#63a4ff;--p95:#2c4a6e}}
.bar i.maint{background:var(--maint)}.bar i.mday{box-shadow:inset 0 -5px 0 var(--maint)}
.days{display:grid;grid-template-columns:repeat(90,1fr);gap:2px;margin-top:8px;cursor:pointer;border-radius:4px}
.days i{height:34px;border-radius:2px;background:var(--none);min-width:1px}
.days i.ok{background:var(--ok)}.days i.warn{background:var(--warn)}.days i.bad{background:var(--bad)}
.days i.maint{background:var(--maint)}.days i.mday{box-shadow:inset 0 -5px 0 var(--maint)}
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
@media (max-width:560px){.days{grid-template-columns:repeat(30,1fr);gap:3px}.days i{height:24px}svg.lat text{font-size:24px}}
`;

export const HISTORY_HTML = `
<section class="card">
<h2 id="days-h">Last 90 days</h2>
<div class="days" id="days" role="group" tabindex="0" aria-labelledby="days-h" aria-describedby="days-detail"></div>
<div class="axis"><span>90 days ago</span><span>today (UTC days)</span></div>
<div class="legend"><span><i class="ok"></i>99.9% or more</span><span><i class="warn"></i>99% or more</span><span><i class="bad"></i>less</span><span><i></i>no data</span><span><i class="maint"></i>maintenance</span></div>
<div class="detail" id="days-detail" aria-live="polite">Tap, hover or focus the days (arrow keys) for a day's figure and incidents.</div>
</section>
<section class="card">
<h2>Probe latency, last 24 hours</h2>
<div class="hint">How long the first node took to confirm the chain id, per hour.</div>
<svg class="lat" id="lat" viewBox="0 0 720 184" role="img" aria-labelledby="lat-title lat-desc"><title id="lat-title">Probe latency per hour, last 24 hours: p50 and p95</title><desc id="lat-desc">No probe latency yet.</desc></svg>
<div class="legend"><span><i class="p50"></i>p50 (half of the probes were faster)</span><span><i class="p95"></i>p95</span></div>
<div class="detail" id="lat-text"></div>
<details><summary>Table of the hours</summary><div class="scroll"><table><thead><tr><th>Hour</th><th class="num">Probes</th><th class="num">p50</th><th class="num">p95</th></tr></thead><tbody id="lat-rows"></tbody></table></div></details>
</section>
`;

// Plain ES2017, no template literals: this text lives inside page.ts's script.
export const HISTORY_SCRIPT = `
  // A bar of segments (the 24 h bar, the daily bars): hover, tap or the arrow keys select one and
  // its detail line shows that segment's title. 'step' is how far up/down moves (a row of days).
  function attachBar(bar, detail, step) {
    var selected = -1;
    function pick(i) {
      var segs = bar.children;
      if (segs.length === 0) return;
      if (selected >= 0 && segs[selected]) segs[selected].classList.remove('sel');
      selected = Math.max(0, Math.min(segs.length - 1, i));
      segs[selected].classList.add('sel');
      detail.textContent = segs[selected].title;
    }
    // The segment under (or nearest to) the pointer: gaps and rows of a grid included.
    function pickAt(e) {
      var segs = bar.children, best = -1, dist = Infinity;
      for (var i = 0; i < segs.length; i++) {
        var r = segs[i].getBoundingClientRect();
        var d = Math.max(r.left - e.clientX, 0, e.clientX - r.right) + Math.max(r.top - e.clientY, 0, e.clientY - r.bottom);
        if (d < dist) { dist = d; best = i; }
      }
      if (best >= 0) pick(best);
    }
    bar.addEventListener('click', pickAt);
    bar.addEventListener('mousemove', pickAt);
    bar.addEventListener('focus', function () { if (selected < 0) pick(bar.children.length - 1); });
    bar.addEventListener('keydown', function (e) {
      var move = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -step, ArrowDown: step, Home: -1e9, End: 1e9 }[e.key];
      if (!move) return;
      e.preventDefault();
      pick((selected < 0 ? bar.children.length - 1 : selected) + move);
    });
    return { refresh: function () { if (selected >= 0) pick(selected); } };
  }
  function utcTime(iso) {
    return iso.slice(11, 16);
  }
  function dayText(d) {
    var text = d.date + ' (UTC): ' + (d.uptime === null ? 'no data' : pct(d.uptime) + ' of ' + dur(d.observedSeconds * 1000) + ' observed');
    if (d.maintenance) text += '; maintenance';
    if (d.incidentCount === 0) return text + '; no incidents';
    text += '; ' + d.incidentCount + (d.incidentCount === 1 ? ' incident: ' : ' incidents: ');
    text += d.incidents.map(function (x) {
      return x.kind + ' ' + utcTime(x.startedAt) + '-' + (x.endedAt ? utcTime(x.endedAt) : 'ongoing');
    }).join(', ');
    return text + (d.incidentCount > d.incidents.length ? ', ...' : '');
  }
  function dayClass(d) {
    var cls = d.uptime === null ? (d.maintenance ? 'maint' : '') : d.uptime >= 0.999 ? 'ok' : d.uptime >= 0.99 ? 'warn' : 'bad';
    return cls + (d.maintenance && d.uptime !== null ? ' mday' : '');
  }
  function ms(v) {
    return v === null ? '-' : v.toFixed(1) + ' ms';
  }
  var SVG = 'http://www.w3.org/2000/svg';
  function svgEl(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function renderLatency() {
    var lat = data.latency, svg = $('lat'), rows = $('lat-rows');
    if (!lat) return;
    while (svg.childNodes.length > 2) svg.removeChild(svg.lastChild);
    rows.textContent = '';
    var from = Date.parse(lat.from), hour = lat.hourSeconds * 1000, top = 0, worst = null;
    lat.hours.forEach(function (h, i) {
      if (h.p95Ms !== null && h.p95Ms > top) { top = h.p95Ms; worst = i; }
    });
    var scale = top > 0 ? 120 / top : 0, w = 720 / lat.hours.length;
    svg.appendChild(svgEl('line', { x1: 0, y1: 150.5, x2: 720, y2: 150.5 }));
    lat.hours.forEach(function (h, i) {
      var x = i * w + 2;
      if (h.p95Ms !== null) svg.appendChild(svgEl('rect', { class: 'p95', x: x, width: w - 4, y: 150 - h.p95Ms * scale, height: h.p95Ms * scale }));
      if (h.p50Ms !== null) svg.appendChild(svgEl('rect', { class: 'p50', x: x + w / 4, width: w / 2 - 2, y: 150 - h.p50Ms * scale, height: h.p50Ms * scale }));
      if (i % 6 === 0) svg.appendChild(svgEl('text', { x: x, y: 178 }, hm(from + i * hour)));
      var tr = el('tr');
      tr.appendChild(el('td', '', hm(from + i * hour)));
      tr.appendChild(el('td', 'num', String(h.probes)));
      tr.appendChild(el('td', 'num', ms(h.p50Ms)));
      tr.appendChild(el('td', 'num', ms(h.p95Ms)));
      rows.appendChild(tr);
    });
    if (top > 0) svg.appendChild(svgEl('text', { x: 4, y: 22 }, ms(top)));
    var last = lat.hours[lat.hours.length - 1];
    var text = top === 0 ? 'No probe latency yet.' : 'This hour: p50 ' + ms(last.p50Ms) + ', p95 ' + ms(last.p95Ms) +
      '. Highest hourly p95 over 24 h: ' + ms(top) + ' (hour from ' + hm(from + worst * hour) + ').';
    set('lat-text', text);
    set('lat-desc', text);
  }
  function renderDays() {
    var bar = $('days');
    bar.textContent = '';
    (data.daily || []).forEach(function (d) {
      var s = el('i', dayClass(d));
      s.title = dayText(d);
      bar.appendChild(s);
    });
  }
`;
