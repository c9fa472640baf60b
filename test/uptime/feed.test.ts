/**
 * The Atom feed's entries and document without a server: one entry per incident opened, update,
 * resolution and maintenance window, newest first and bounded, ids stable and distinct; the
 * document parses as XML with every element Atom requires, and hostile text stays text.
 */
import t from 'tap';
import { incidentEvents, type EventIncident } from '../../src/uptime/notify/events.js';
import { FEED_ENTRIES, feedBase, feedEntries, renderFeed } from '../../src/uptime/notify/feed.js';
import { checkAtom, parseAtom, text } from '../helpers/atom.js';

const PROBE: EventIncident = {
  id: 1,
  kind: 'stalled',
  startedAt: '2026-11-20T10:00:00.000Z',
  endedAt: '2026-11-20T10:30:00.000Z',
  summary: 'The chain did not advance for more than 60 s (fleet head at block 9)',
};
/** A hand-opened incident as uptime.json lists it: kind `operator`, its title as summary, updates newest first. */
const OPERATOR: EventIncident = {
  id: 2,
  kind: 'operator',
  source: 'operator',
  startedAt: '2026-11-21T08:00:00.000Z',
  endedAt: '2026-11-21T09:00:00.000Z',
  summary: 'Slow eth_getLogs',
  updates: [
    { status: 'resolved', message: 'Node replaced', at: '2026-11-21T09:00:00.000Z' },
    { status: 'identified', message: 'One node is slow', at: '2026-11-21T08:20:00.000Z' },
    { status: 'investigating', message: 'Looking into it', at: '2026-11-21T08:00:00.000Z' },
  ],
};
const WINDOW = { id: 5, title: 'Node upgrade', start: '2026-11-22T02:00:00.000Z', end: '2026-11-22T03:00:00.000Z' };

t.test('one entry per incident opened, update, resolution and window, newest first', async (t) => {
  const entries = feedEntries([PROBE, OPERATOR], [WINDOW], '0xba');
  t.same(
    entries.map((e) => e.title),
    [
      'Maintenance: Node upgrade',
      'Resolved: Slow eth_getLogs',
      'Identified: Slow eth_getLogs',
      'Incident opened: Slow eth_getLogs',
      'Resolved: Chain stalled',
      'Incident opened: Chain stalled',
    ],
    'newest first',
  );
  t.equal(entries.length, 6, 'the opening message and the resolving update are each told once');
  t.equal(entries[3]!.text, 'Looking into it', 'a hand-opened incident opens with its first message');
  t.equal(entries[4]!.path, '/uptime/incidents/1', "an entry links to its incident's page");
  t.equal(entries[0]!.path, '/uptime');
  t.equal(entries[0]!.title, 'Maintenance: Node upgrade');
  t.equal(entries[1]!.text, 'Node replaced\nResolved after 60 min (Slow eth_getLogs)');
  t.equal(new Set(entries.map((e) => e.id)).size, 6, 'every entry its own id');
  t.same(
    feedEntries([PROBE, OPERATOR], [WINDOW], '0xba').map((e) => e.id),
    entries.map((e) => e.id),
    'the same events, the same ids',
  );
  t.not(
    feedEntries([{ ...PROBE, startedAt: '2026-11-25T10:00:00.000Z' }], [], '0xba').at(-1)!.id,
    feedEntries([PROBE], [], '0xba').at(-1)!.id,
    'an incident id reused by a fresh store gets another entry id',
  );
  t.equal(incidentEvents({ ...PROBE, endedAt: null }).length, 1, 'an open incident: opened only');
});

t.test('bounded to FEED_ENTRIES, the newest kept', async (t) => {
  const many = Array.from({ length: 60 }, (_, i) => ({
    ...PROBE,
    id: i + 1,
    startedAt: new Date(Date.UTC(2026, 10, 1, i)).toISOString(),
    endedAt: new Date(Date.UTC(2026, 10, 1, i, 5)).toISOString(),
  }));
  const entries = feedEntries(many, [], '0xba');
  t.equal(entries.length, FEED_ENTRIES);
  t.equal(entries[0]!.updated, many[59]!.endedAt, 'the newest first');
  t.ok(
    entries.every((e, i) => i === 0 || e.updated <= entries[i - 1]!.updated),
    'in order',
  );
});

t.test('the document: valid Atom, hostile text kept as text', async (t) => {
  const hostile: EventIncident = {
    ...OPERATOR,
    summary: 'A <script>alert(1)</script> & ]]> "q"\u0001\uD800',
    updates: [
      { status: 'investigating', message: '<img src=x onerror=alert(1)>\nline two', at: '2026-11-21T08:05:00.000Z' },
    ],
    endedAt: null,
  };
  const xml = renderFeed(feedEntries([hostile], [], '0xba'), {
    title: 'Status & <co>',
    chainId: '0xba',
    base: 'https://rpc.example.com',
    now: '2026-11-26T00:00:00.000Z',
  });
  const entries = checkAtom(t, xml);
  t.equal(entries.length, 2);
  t.notMatch(xml, /[\u0000-\u0008\u000B\u000C\u000E-\u001F]|[\uD800-\uDFFF]/, 'no character XML 1.0 cannot carry');
  const opened = entries.find((e) => /^Incident opened/.test(text(e.title)))!;
  const update = entries.find((e) => /^Investigating/.test(text(e.title)))!;
  const title = text(opened.title);
  t.equal(opened.title._attributes.type, 'html');
  t.notMatch(title, /<script/, 'markup in a title is escaped: a reader shows it as text');
  t.match(title, /&#60;script&#62;alert\(1\)&#60;\/script&#62; &#38; \]\]&#62;/);
  t.notMatch(text(update.content), /<img/);
  t.match(text(update.content), /onerror=alert\(1\)&#62;<br>line two/, 'lines kept as <br>');
  const { doc } = parseAtom(xml);
  t.equal(text(doc.feed.title), 'Status & <co>', 'the feed title, escaped as XML by the package');
  t.same(
    [doc.feed.link].flat().map((l: any) => l._attributes),
    [
      { rel: 'alternate', href: 'https://rpc.example.com/uptime' },
      { rel: 'self', href: 'https://rpc.example.com/uptime/feed.atom' },
    ],
  );
  t.equal(text(doc.feed.updated), '2026-11-21T08:05:00.000Z', 'the feed is as new as its newest entry');
  const empty = parseAtom(
    renderFeed([], { title: 'x', chainId: '0xba', base: 'http://h', now: '2026-11-26T00:00:00.000Z' }),
  );
  t.equal(text(empty.doc.feed.updated), '2026-11-26T00:00:00.000Z', 'no entries: updated is now');
});

t.test('the base of the links: publicUrl, else a Host that is a plain host[:port]', async (t) => {
  t.equal(feedBase('https://rpc.example.com/', 'evil.example'), 'https://rpc.example.com', 'publicUrl wins');
  t.equal(feedBase(null, 'rpc.example.com:8545'), 'http://rpc.example.com:8545');
  t.equal(feedBase(null, '[::1]:8545'), 'http://[::1]:8545');
  for (const bad of [undefined, '', 'a b', 'h"><x', 'h/path', 'user@h', 'h:port', 'h:123456'])
    t.equal(feedBase(null, bad), null, `Host ${JSON.stringify(bad)} refused`);
});
