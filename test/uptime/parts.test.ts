/**
 * The page's sections as the script fetches them (uptime/parts): a section comes back only when
 * its content changed, judged by the hash of its HTML without the ticking ages; with every hash
 * held, nothing comes back and the ETag stays the same (the route answers 304).
 */
import t from 'tap';
import { pageParts, partsEtag, renderParts } from '../../src/uptime/pages/page.js';
import type { UptimeReport } from '../../src/uptime/report.js';

const T = Date.UTC(2026, 10, 29, 5, 33);
const day = {
  date: '2026-11-29',
  uptime: 1,
  observedSeconds: 7_200,
  maintenance: false,
  incidentCount: 0,
  incidents: [],
};
const report = {
  title: 'Status',
  chainId: '0xba',
  state: 'operational',
  checkedAt: new Date(T).toISOString(),
  checks: { reachable: { ok: true }, advancing: { ok: true, head: '0x10', headAgeSeconds: 1 } },
  uptime: { '24h': 1, '7d': 1, '30d': 1 },
  observedSeconds: { '24h': 7_200, '7d': 7_200, '30d': 7_200 },
  history: { from: new Date(T - 86_400_000).toISOString(), segmentSeconds: 960, segments: Array(90).fill(1) },
  daily: Array(90).fill(day),
  latency: {
    from: new Date(T).toISOString(),
    hourSeconds: 3600,
    hours: Array(24).fill({ probes: 1, p50Ms: 1, p95Ms: 2 }),
  },
  maintenance: [],
  incidents: [],
  components: [
    {
      name: 'reachable',
      kind: 'check',
      state: 'operational',
      uptime: 1,
      observedSeconds: 7_200,
      days: Array(90).fill(1),
    },
  ],
  upstreams: [{ name: 'node-0', state: 'healthy', head: '0x10', lag: 0, latencyMs: 1 }],
  probeIntervalMs: 5_000,
  stallAfterSeconds: 60,
} as unknown as UptimeReport;

const ids = (html: string): string[] => [...html.matchAll(/<div id="(p-[a-z]+)" data-h=/g)].map((m) => m[1]!);

t.test('only the sections that changed come back', async (t) => {
  const all = pageParts(report);
  const held = new Set(all.map((p) => p.hash));
  t.same(
    ids(renderParts(report, new Set())),
    all.map((p) => p.id),
    'none held: every section',
  );
  t.equal(renderParts(report, held), '', 'every hash held: nothing');
  t.equal(partsEtag(pageParts({ ...report })), partsEtag(all), 'the same report: the same ETag');

  const risen = { ...report, checks: { ...report.checks, advancing: { ok: true, head: '0x11', headAgeSeconds: 0 } } };
  t.same(ids(renderParts(risen, held)), ['p-checks'], 'a risen head: the checks only');
  t.not(partsEtag(pageParts(risen)), partsEtag(all), 'and another ETag');

  const incident = {
    ...report,
    state: 'degraded',
    incidents: [
      {
        id: 1,
        kind: 'operator',
        startedAt: new Date(T).toISOString(),
        endedAt: null,
        summary: 'Slow eth_call',
        source: 'operator',
        impact: 'minor',
        updates: [],
        postmortem: false,
      },
    ],
  } as UptimeReport;
  t.same(ids(renderParts(incident, held)), ['p-now', 'p-incidents'], 'an incident: the top and the list');
});
