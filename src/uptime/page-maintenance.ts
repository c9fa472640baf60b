/**
 * The maintenance card of the uptime page (SPEC 12.2): upcoming and ongoing windows from
 * uptime.json's `maintenance`, each with its title and times (the reader's local time, like the
 * incidents); hidden when there is none. Fragments for page.ts; the script part runs inside
 * page.ts's script and sets every text with textContent.
 */

export const MAINTENANCE_STYLE = `
.banner.maintenance{background:var(--maint-b)}
.pill.maint{background:var(--maint-b)}.pill.maint.later{background:transparent;color:var(--text);border-color:var(--muted)}
`;

export const MAINTENANCE_HTML = `
<section class="card" id="maint" hidden><h2>Maintenance</h2><ul id="maint-list"></ul></section>
`;

export const MAINTENANCE_SCRIPT = `
  function renderMaintenance() {
    var list = $('maint-list'), now = Date.parse(data.checkedAt), windows = data.maintenance || [];
    $('maint').hidden = windows.length === 0;
    list.textContent = '';
    windows.forEach(function (m) {
      var start = Date.parse(m.start), end = Date.parse(m.end), ongoing = start <= now;
      var li = el('li');
      li.appendChild(el('span', 'pill maint' + (ongoing ? '' : ' later'), ongoing ? 'ongoing' : 'upcoming'));
      li.appendChild(el('span', 'when', when(m.start) + ' - ' + when(m.end) + ' (' + dur(end - start) + ')'));
      li.appendChild(el('div', '', m.title));
      list.appendChild(li);
    });
  }
`;
