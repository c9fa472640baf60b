/**
 * uptime.support (SPEC 12.2 "Report a problem"): an https/http URL, a mailto: URL or an e-mail
 * address is accepted (an address becomes a mailto: link); anything else is refused at load with
 * the key named, since the value becomes a link on a public page. Unset, the page shows no section.
 */
import t from 'tap';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import { renderPage } from '../../src/uptime/pages/page.js';
import { supportLink } from '../../src/config/support.js';

const base = { upstreams: [{ name: 'a', url: 'http://127.0.0.1:1' }] };

t.test('accepted forms and the link each makes', async (t) => {
  t.equal(validateConfig(base).uptime.support, null, 'null by default');
  for (const [value, link] of [
    ['https://support.example.org/new', 'https://support.example.org/new'],
    ['http://intranet.example/help', 'http://intranet.example/help'],
    ['mailto:ops@example.org?subject=RPC', 'mailto:ops@example.org?subject=RPC'],
    ['ops@example.org', 'mailto:ops@example.org'],
  ] as const) {
    t.equal(validateConfig({ ...base, uptime: { support: value } }).uptime.support, value, value);
    t.equal(supportLink(value), link);
  }
});

t.test('refused forms', async (t) => {
  for (const value of [
    'javascript:alert(1)',
    'JAVASCRIPT:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    '/support',
    'support',
    'https://',
    'mailto:javascript:alert(1)',
    'ops@example.org" onmouseover="x',
    `https://example.org/${'a'.repeat(500)}`,
    '',
  ]) {
    t.throws(
      () => validateConfig({ ...base, uptime: { support: value } }),
      ConfigError,
      JSON.stringify(value.slice(0, 40)),
    );
    t.equal(supportLink(value), null);
  }
  try {
    validateConfig({ ...base, uptime: { support: 'javascript:alert(1)' } });
  } catch (err) {
    t.match((err as ConfigError).problems.join('\n'), /^uptime\.support: expected an https:\/\/ or http:\/\/ URL/m);
  }
});

t.test('the page shows the section only when set', async (t) => {
  t.notMatch(renderPage(null, 'T'), /Report a problem/);
  const page = renderPage(null, 'T', 'ops@example.org', Date.UTC(2026, 10, 26, 12, 30, 5));
  t.match(page, /<section class="card" id="support"><h2>Report a problem<\/h2>/);
  t.match(page, /another network/);
  t.match(page, /<a href="mailto:ops@example\.org" rel="noopener noreferrer">ops@example\.org<\/a>/);
  t.match(page, /<span id="utc-now"><time datetime="2026-11-26T12:30:05.000Z">2026-11-26 12:30:05 UTC<\/time><\/span>/);
  t.match(page, /X-Request-Id/);
});

t.test("SPEC 2's shape { url, email }: either may be null; both shown, the link first", async (t) => {
  const both = { url: 'https://support.example.org/new', email: 'ops@example.org' };
  t.same(validateConfig({ ...base, uptime: { support: both } }).uptime.support, both);
  t.same(validateConfig({ ...base, uptime: { support: { url: null, email: 'ops@example.org' } } }).uptime.support, {
    url: null,
    email: 'ops@example.org',
  });
  t.same(validateConfig({ ...base, uptime: { support: { url: 'https://a.example' } } }).uptime.support, {
    url: 'https://a.example',
    email: null,
  });
  for (const bad of [
    { url: 'mailto:ops@example.org' },
    { email: 'https://a.example' },
    { url: 'javascript:alert(1)' },
    { url: 'https://a.example', other: 1 },
  ])
    t.throws(() => validateConfig({ ...base, uptime: { support: bad } }), ConfigError, JSON.stringify(bad));
  const page = renderPage(null, 'T', both, Date.UTC(2026, 10, 26, 12, 30, 5));
  t.match(
    page,
    /<a href="https:\/\/support\.example\.org\/new" rel="noopener noreferrer">https:\/\/support\.example\.org\/new<\/a> or <a href="mailto:ops@example\.org"/,
  );
  t.notMatch(renderPage(null, 'T', { url: null, email: null }), /Report a problem/, 'both null: not shown');
});
