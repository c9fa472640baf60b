// The documentation a person navigates (SPEC 1): README.md is the five-minute door (under 200
// lines, linking every page), docs/ holds one page per concern, and every relative link in them
// reaches an existing file and, for a `#anchor`, an existing heading under GitHub's anchor rules.

import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOCS = join(ROOT, 'docs');

/** The pages SPEC 1 asks for, one per concern. */
const PAGES = [
  'configuration.md',
  'routing.md',
  'cache.md',
  'limits.md',
  'websocket.md',
  'operations.md',
  'observability.md',
  'tracing.md',
  'uptime-page.md',
  'errors.md',
  'benchmarks.md',
  'architecture.md',
];

const files = [
  join(ROOT, 'README.md'),
  ...readdirSync(DOCS)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(DOCS, f)),
];

/** The text outside fenced code blocks and inline code spans: links and headings there are not markdown. */
function prose(markdown: string): string {
  return markdown
    .replace(/^[ \t]*```[^\n]*\n[\s\S]*?^[ \t]*```[^\n]*$/gm, '')
    .replace(/`[^`\n]*`/g, (code) => (code.includes('](') ? '' : code));
}

/** GitHub's heading anchors: markup dropped, lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of prose(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const text = m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** Every link and image target written as `[text](target)`, outside code. */
function links(markdown: string): string[] {
  return [...prose(markdown).matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

t.test('anchors follow GitHub rules', async (t) => {
  const a = anchors(
    "# Limits and hostile input\n## `logs` subscriptions\n### eth_getLogs ranges and large answers\n## A node's head\n## Metrics\n## Metrics\n```\n# not a heading\n```\n",
  );
  t.strictSame(
    [...a],
    [
      'limits-and-hostile-input',
      'logs-subscriptions',
      'eth_getlogs-ranges-and-large-answers',
      'a-nodes-head',
      'metrics',
      'metrics-1',
    ],
  );
});

t.test('every relative link reaches a file and, with an anchor, a heading', async (t) => {
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const name = relative(ROOT, file);
    for (const target of links(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto: are not checked here
      const [path, anchor] = target.split('#', 2) as [string, string | undefined];
      const dest = path === '' ? file : join(dirname(file), decodeURI(path));
      if (!existsSync(dest)) {
        t.fail(`${name}: link ${target}: no file ${relative(ROOT, dest)}`);
        continue;
      }
      if (anchor === undefined) continue;
      t.ok(
        dest.endsWith('.md') && anchors(readFileSync(dest, 'utf8')).has(anchor),
        `${name}: link ${target} names a heading of ${relative(ROOT, dest)}`,
      );
    }
  }
});

t.test('README.md is a five-minute door: under 200 lines, a link to every page', async (t) => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  t.ok(lines < 200, `README.md has ${lines} lines`);
  const targets = new Set(links(readme).map((l) => l.split('#')[0]));
  for (const f of readdirSync(DOCS).filter((f) => f.endsWith('.md')))
    t.ok(targets.has(`docs/${f}`), `README.md links docs/${f}`);
});

t.test('docs/ has one page per concern of SPEC 1, each opening with what it covers', async (t) => {
  for (const page of PAGES) {
    const path = join(DOCS, page);
    if (!existsSync(path)) {
      t.fail(`docs/${page} exists`);
      continue;
    }
    const [title, blank, first] = readFileSync(path, 'utf8').split('\n');
    t.match(title, /^# \S/, `docs/${page} starts with a title`);
    t.ok(
      blank === '' && first !== undefined && first.trim() !== '' && !first.startsWith('#'),
      `docs/${page}: a paragraph on what it covers follows the title`,
    );
  }
});
