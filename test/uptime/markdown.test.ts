/**
 * Hostile Markdown never becomes script (SPEC 12.2): post-mortems, titles and messages full of
 * script tags, event handlers, iframes, style, javascript:/data:/vbscript: links (plain, upper
 * case, entity-encoded, autolinks, references), images and fence info strings are rendered, and
 * the HTML is checked tag by tag: only an allowed set of elements, only allowed attributes, links
 * only to http(s), mailto, this site's paths or the page itself. The same check runs on a whole
 * incident page and on the archive built from such text.
 */
import t from 'tap';
import type { IncidentRecord } from '../../src/uptime/store/incident-store.js';
import { renderMarkdown } from '../../src/uptime/pages/markdown.js';
import { renderArchive } from '../../src/uptime/pages/page-archive.js';
import { renderIncidentPage } from '../../src/uptime/pages/page-incident.js';

const HOSTILE = [
  '<script>alert(1)</script>',
  '<SCRIPT SRC=https://evil.example/x.js></SCRIPT>',
  '<img src=x onerror=alert(1)>',
  '<svg onload=alert(1)><circle/></svg>',
  '<iframe src="https://evil.example"></iframe>',
  '<style>body{display:none}</style>',
  '<div style="background:url(javascript:alert(1))">x</div>',
  '<a href="javascript:alert(1)">x</a>',
  '<base href="https://evil.example/"><meta http-equiv="refresh" content="0;url=https://evil.example">',
  '<form action="https://evil.example"><input name=x></form><object data=x></object><embed src=x>',
  '<link rel=stylesheet href=https://evil.example/x.css>',
  '[a](javascript:alert(1))',
  '[a](JaVaScRiPt:alert(1))',
  '[a](&#106;avascript:alert(1))',
  '[a](&#x6A;avascript&colon;alert(1))',
  '[a](javascript&#58;alert(1))',
  '[a](%6Aavascript:alert(1))',
  '[a](<javascript:alert(1)>)',
  '[a](  javascript:alert(1))',
  '[ref link][r]\n\n[r]: javascript:alert(1)',
  '<javascript:alert(1)>',
  '<vbscript:msgbox(1)>',
  '[a](vbscript:msgbox(1))',
  '[a](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
  '[a](data:image/png;base64,iVBORw0KGgo=)',
  '[a](file:///etc/passwd)',
  '![x](javascript:alert(1))',
  '![x](https://evil.example/tracker.png)',
  '[a](https://ok.example "t\\" onmouseover=\\"alert(1)")',
  '&lt;script&gt;alert(1)&lt;/script&gt; &#60;script&#62;alert(1)&#60;/script&#62;',
  '```"><script>alert(1)</script>\ncode\n```',
  '<!-- <script>alert(1)</script> -->',
  '| a | b |\n|:-:|--:|\n| <b onclick=x>1</b> | 2 |',
  '[ok](https://ok.example/path?q=1) [mail](mailto:ops@example.org) [here](#timeline) [other](/uptime/incidents/2)',
  '# Heading\n\n> quote\n\n- one\n- two\n\n1. a\n2. b\n\n`code` **bold** _em_ ~~gone~~\n\n---',
].join('\n\n');

/** Each tag with its attribute values emptied: what the browser reads as element and attribute names. */
const tags = (html: string): string =>
  (html.match(/<[^>]*>/g) ?? []).map((tag) => tag.replace(/="[^"]*"/g, '=""')).join('\n');

const ELEMENTS = new Set(
  'p h3 h4 h5 h6 a ul ol li blockquote pre code em strong s hr br table thead tbody tr th td'.split(' '),
);
const ATTRIBUTES = new Set(['href', 'rel', 'title', 'start', 'class']);

/** Every problem of a piece of rendered Markdown: tags, attributes and URLs outside the allowed sets. */
function problems(html: string): string[] {
  const out: string[] = [];
  for (const m of html.matchAll(/<\s*\/?\s*([a-zA-Z][a-zA-Z0-9-]*)([^>]*)>/g)) {
    const name = m[1]!.toLowerCase();
    if (!ELEMENTS.has(name)) out.push(`element <${name}>`);
    const attrs = m[2]!.trim();
    const seen = attrs.replace(/([a-zA-Z-]+)="([^"]*)"/g, (_all, a: string, v: string) => {
      if (!ATTRIBUTES.has(a.toLowerCase())) out.push(`attribute ${a} on <${name}>`);
      const decoded = v.replace(/&#(x?)([0-9a-f]+);?/gi, (_e, x: string, n: string) =>
        String.fromCodePoint(parseInt(n, x ? 16 : 10)),
      );
      if (a === 'href' && !/^(https?:\/\/|mailto:|#|\/[^/])/i.test(decoded)) out.push(`href ${v}`);
      if (a === 'class' && !/^language-[^\s"<>]*$/.test(decoded)) out.push(`class ${v}`);
      return '';
    });
    if (seen.replace(/\//g, '').trim() !== '') out.push(`unparsed attributes ${seen.trim()} on <${name}>`);
  }
  return out;
}

t.test('hostile Markdown: only allowed elements, attributes and link targets', async (t) => {
  const html = renderMarkdown(HOSTILE);
  t.same(problems(html), [], 'nothing outside the allowed sets');
  t.notMatch(html, /<(script|style|iframe|img|svg|object|embed|form|base|meta|link|input)\b/i);
  t.notMatch(tags(html), /\son[a-z]+\s*=/i, 'no event handler attribute');
  t.notMatch(html, /href="(javascript|vbscript|data|file):/i);
  t.match(html, /<a href="https:\/\/ok\.example\/path\?q=1" rel="nofollow noopener noreferrer">ok<\/a>/, 'a web link');
  t.match(html, /<a href="mailto:ops@example\.org"/, 'a mailto link');
  t.match(html, /<a href="#timeline"/, 'an in-page link');
  t.match(html, /<a href="\/uptime\/incidents\/2"/, 'a path of this site');
  t.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/, 'raw HTML is printed as text');
  t.match(html, /<h3>Heading<\/h3>/, '# is h3 under the page headings');
  t.match(html, /<table>/, 'tables stay');
  t.notMatch(tags(html), /style=/, 'alignment does not add a style attribute');
  t.match(
    html,
    /<a href="https:\/\/ok\.example" title="t&quot; onmouseover=&quot;alert\(1\)" rel="[^"]*">/,
    'a title cannot break out of its quotes',
  );
});

t.test('the checker itself finds what it must', async (t) => {
  t.ok(problems('<script>x</script>').length > 0);
  t.ok(problems('<a href="javascript:alert(1)">x</a>').length > 0);
  t.ok(problems('<a href="&#106;avascript:alert(1)">x</a>').length > 0);
  t.ok(problems('<p onclick="x">x</p>').length > 0);
  t.ok(problems('<p style="x">x</p>').length > 0);
  t.ok(problems('<img src=x onerror=alert(1)>').length > 0);
  t.same(problems('<p><a href="https://a.b" rel="x">y</a></p>'), []);
});

const NOW = Date.UTC(2026, 10, 26, 12);
const incident: IncidentRecord = {
  id: 7,
  kind: 'operator',
  source: 'operator',
  impact: 'minor',
  startedAt: NOW - 3_600_000,
  endedAt: NOW,
  summary: '<script>alert("title")</script><img src=x onerror=alert(1)>',
  updates: [
    { status: 'resolved', message: '<iframe src=https://evil.example></iframe>\nline two', at: NOW },
    { status: 'investigating', message: '"><svg onload=alert(1)> javascript:alert(1)', at: NOW - 3_600_000 },
  ],
  postmortem: { markdown: HOSTILE, at: NOW },
};

/** The page around the post-mortem: its own style element and no other, no script, escaped text. */
function pageProblems(html: string): string[] {
  const out: string[] = [];
  const styles = html.match(/<style\b/gi) ?? [];
  if (styles.length !== 1) out.push(`${styles.length} style elements`);
  for (const bad of [/<script\b/i, /<iframe\b/i, /<img\b/i, /<svg\b/i, /\son[a-z]+\s*=/i, /href="\s*javascript:/i])
    if (bad.test(tags(html))) out.push(String(bad));
  const md = /<div class="md">([\s\S]*?)<\/div>\n<div class="hint">Published/.exec(html);
  if (md === null) out.push('no post-mortem');
  else out.push(...problems(md[1]!));
  return out;
}

t.test('a whole incident page and the archive built from hostile text', async (t) => {
  const page = renderIncidentPage(incident, 'Status <b>', 'mailto:ops@example.org', NOW);
  t.same(pageProblems(page), [], 'the incident page');
  t.match(page, /&#60;script&#62;alert\(&#34;title&#34;\)&#60;\/script&#62;/, 'the title as text');
  t.match(page, /&#60;iframe src=https:\/\/evil\.example&#62;/, 'an update as text');
  t.match(page, /Report a problem/, 'the support section');
  t.match(page, /<a href="mailto:ops@example\.org"/);
  const archive = renderArchive(1, 1, [incident], 'Status', NOW);
  t.notMatch(archive, /<script\b|<iframe\b|<img\b|<svg\b/i, 'the archive');
  t.notMatch(tags(archive), /\son[a-z]+\s*=/i);
});
