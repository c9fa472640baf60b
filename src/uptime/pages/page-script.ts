/**
 * The uptime page's script, run in the visitor's browser. Its functions are type-checked and
 * linted as any source file; PAGE_SCRIPT is their own text inside one function called at once,
 * which page.ts inlines and whose hash it puts in the page's Content-Security-Policy. So each
 * function must stand alone: no import, nothing from this module's scope but the other
 * functions listed in PAGE_SCRIPT, only what a browser has.
 * It keeps the server-rendered page current: every few seconds it asks uptime/parts for the
 * sections whose hash it does not have (a 304 when none changed) and swaps those in, and it keeps
 * the relative ages and the UTC clock ticking; the bars answer hover, tap and the arrow keys.
 */

/** What the script keeps between refreshes. */
interface PageState {
  period: number;
  etag: string | null;
  lastOk: number;
  failing: boolean;
  /** The selected segment of each bar, by the bar's id. */
  selected: Record<string, number | undefined>;
}

function byId(id: string | null): HTMLElement | null {
  return id === null ? null : document.getElementById(id);
}

function dur(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return s + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + ' min ' + (s % 60) + ' s';
  const h = Math.floor(m / 60);
  if (h < 48) return h + ' h ' + (m % 60) + ' min';
  return Math.floor(h / 24) + ' d ' + (h % 24) + ' h';
}

function utcNow(): string {
  return new Date().toISOString().slice(0, 19).replace('T', ' ') + ' UTC';
}

/** Relative ages tick here; the server wrote them as of when it served the page. */
function ages(state: PageState): void {
  const list = document.querySelectorAll('.ago');
  for (let i = 0; i < list.length; i++) {
    const e = list[i]!;
    e.textContent =
      e.getAttribute('data-p') +
      dur(Date.now() - Date.parse(e.getAttribute('data-t') as string)) +
      ' ago' +
      e.getAttribute('data-s');
  }
  const clock = byId('utc-now');
  if (clock) clock.textContent = utcNow();
  const feed = byId('feed')!;
  feed.textContent = state.failing
    ? 'status feed unreachable since ' + new Date(state.lastOk).toISOString().slice(11, 16) + ' UTC'
    : '';
  feed.className = state.failing ? 'stale' : '';
}

/** The visitor's own time beside UTC, in the title of every time shown. */
function localTitles(root: ParentNode): void {
  const times = root.querySelectorAll('time');
  for (let i = 0; i < times.length; i++)
    times[i]!.title = new Date(times[i]!.getAttribute('datetime') as string).toString();
}

/**
 * A bar of segments (the 24 h bar, the daily bars): hover, tap or the arrow keys select one and
 * its detail line shows that segment's title. `step` is how far up/down moves (a row of days).
 */
function attachBar(bar: Element, detail: HTMLElement | null, step: number, selected: PageState['selected']): void {
  if (!bar || !detail) return;
  const id = bar.id;
  const pick = (i: number): void => {
    const segs = bar.children;
    if (segs.length === 0) return;
    const old = selected[id];
    if (old !== undefined && segs[old]) segs[old].classList.remove('sel');
    const now = Math.max(0, Math.min(segs.length - 1, i));
    selected[id] = now;
    segs[now]!.classList.add('sel');
    detail.textContent = (segs[now] as HTMLElement).title;
  };
  // The segment under (or nearest to) the pointer: gaps and rows of a grid included.
  const pickAt = (e: Event): void => {
    const { clientX: x, clientY: y } = e as MouseEvent;
    const segs = bar.children;
    let best = -1;
    let dist = Infinity;
    for (let i = 0; i < segs.length; i++) {
      const r = segs[i]!.getBoundingClientRect();
      const d = Math.max(r.left - x, 0, x - r.right) + Math.max(r.top - y, 0, y - r.bottom);
      if (d < dist) {
        dist = d;
        best = i;
      }
    }
    if (best >= 0) pick(best);
  };
  bar.addEventListener('click', pickAt);
  bar.addEventListener('mousemove', pickAt);
  bar.addEventListener('focus', () => {
    if (selected[id] === undefined) pick(bar.children.length - 1);
  });
  bar.addEventListener('keydown', (e) => {
    const keys: Record<string, number> = {
      ArrowLeft: -1,
      ArrowRight: 1,
      ArrowUp: -step,
      ArrowDown: step,
      Home: -1e9,
      End: 1e9,
    };
    const move = keys[(e as KeyboardEvent).key];
    if (!move) return;
    e.preventDefault();
    pick((selected[id] ?? bar.children.length - 1) + move);
  });
  const was = selected[id];
  if (was !== undefined) pick(was);
}

function attachAll(selected: PageState['selected']): void {
  const bars = document.querySelectorAll('.bar, .days');
  for (let i = 0; i < bars.length; i++) {
    const bar = bars[i]!;
    attachBar(bar, byId(bar.getAttribute('aria-describedby')), bar.classList.contains('days') ? 30 : 0, selected);
  }
}

/** Swaps in the sections that changed, keeping focus and open details where they were. */
function swap(html: string, selected: PageState['selected']): void {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  const focused = document.activeElement?.id;
  const parts = doc.body.children;
  while (parts.length > 0) {
    const next = document.adoptNode(parts[0]!);
    const old = byId(next.id);
    const opened = old ? old.querySelectorAll('details[open]') : [];
    for (let i = 0; i < opened.length; i++) {
      const d = next.querySelector('#' + opened[i]!.id);
      if (d) (d as HTMLDetailsElement).open = true;
    }
    if (old) old.replaceWith(next);
    localTitles(next);
  }
  attachAll(selected);
  const again = focused ? byId(focused) : null;
  if (again && document.activeElement !== again) again.focus();
  document.title = byId('title')!.textContent as string;
}

/** The hashes of the sections the page holds, for uptime/parts. */
function have(): string {
  const list = document.querySelectorAll('[data-h]');
  const out: string[] = [];
  for (let i = 0; i < list.length; i++) out.push(list[i]!.getAttribute('data-h') as string);
  return out.join('.');
}

function refresh(state: PageState): void {
  const headers: Record<string, string> = { accept: 'text/html' };
  if (state.etag) headers['if-none-match'] = state.etag;
  fetch('uptime/parts?have=' + have(), { cache: 'no-store', headers })
    .then((res) => {
      if (res.status === 304) return null;
      if (!res.ok) throw new Error('HTTP ' + res.status);
      state.etag = res.headers.get('etag');
      return res.text();
    })
    .then(
      (html) => {
        if (html) swap(html, state.selected);
        state.lastOk = Date.now();
        state.failing = false;
        ages(state);
      },
      () => {
        state.failing = true;
        ages(state);
      },
    )
    .then(() => {
      setTimeout(() => refresh(state), state.period);
    });
}

function main(): void {
  const state: PageState = {
    period: Math.min(10000, Math.max(2000, Number(document.body.getAttribute('data-period')) || 5000)),
    etag: document.body.getAttribute('data-etag'),
    lastOk: Date.now(),
    failing: false,
    selected: {},
  };
  attachAll(state.selected);
  localTitles(document);
  byId('every')!.textContent = 'Updates every ' + Math.round(state.period / 1000) + ' s.';
  ages(state);
  setInterval(() => ages(state), 1000);
  setTimeout(() => refresh(state), state.period);
}

/** The script as the page carries it: these functions' own text in one function called at once. */
export const PAGE_SCRIPT = `(function () {
'use strict';
${[byId, dur, utcNow, ages, localTitles, attachBar, attachAll, swap, have, refresh, main].map(String).join('\n')}
main();
})();`;
