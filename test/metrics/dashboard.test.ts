// The dashboard read as a person reads it: a series drawn on an axis is in that axis' unit (no
// entry counts on a bytes axis), counts of rare events are counts (reorgs), the job, chain, instance
// and upstream variables exist and every query honours them, reorgs and reloads are annotated, the
// on-call row comes first (SLO burn, healthy upstreams, error ratio, p99), and upstreams out of
// rotation (held off, cordoned, over budget), errors by reason, the uptime page and the replicas have
// panels linking their runbook section.

import t from 'tap';
import { readFileSync } from 'node:fs';

interface Target {
  refId: string;
  expr: string;
  instant?: boolean;
}
interface Override {
  matcher: { id: string; options: string };
  properties: { id: string; value: unknown }[];
}
interface Panel {
  id: number;
  title: string;
  type: string;
  description?: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Target[];
  fieldConfig?: { defaults?: { unit?: string }; overrides?: Override[] };
  panels?: Panel[];
}
const d = JSON.parse(readFileSync(new URL('../../grafana/dashboards/switchyard.json', import.meta.url), 'utf8')) as {
  panels: Panel[];
  templating: { list: { name: string; query?: { query: string } }[] };
  annotations: { list: { name: string; expr?: string }[] };
};
const panels: Panel[] = [];
const walk = (ps: Panel[]): void => ps.forEach((p) => (panels.push(p), walk(p.panels ?? [])));
walk(d.panels);

/** The unit each target is drawn in: the panel's, or an override by refId. */
function unitOf(p: Panel, target: Target): string | undefined {
  const o = p.fieldConfig?.overrides?.find(
    (x) => x.matcher.id === 'byFrameRefID' && x.matcher.options === target.refId,
  );
  return (o?.properties.find((x) => x.id === 'unit')?.value as string | undefined) ?? p.fieldConfig?.defaults?.unit;
}

t.test('series on a bytes axis are bytes; others are not drawn in bytes', async (t) => {
  for (const p of panels) {
    for (const target of p.targets ?? []) {
      const bytes = /_bytes\b/.test(target.expr);
      if (unitOf(p, target) === 'bytes') t.ok(bytes, `${p.title} ${target.refId}: a bytes unit for a bytes metric`);
      else if (/^switchyard_cache_entries/.test(target.expr))
        t.not(unitOf(p, target), 'bytes', `${p.title}: entries are not bytes`);
    }
  }
  const size = panels.find((p) => p.title === 'Cache size')!;
  t.same(
    size.targets!.map((x) => unitOf(size, x)),
    ['bytes', 'short'],
    'cache size: bytes and entries each in their unit',
  );
});

t.test('reorgs are counted in their own panel, not as a rate beside calls/s', async (t) => {
  const withReorgs = panels.filter((p) => (p.targets ?? []).some((x) => x.expr.includes('switchyard_reorgs_total')));
  t.equal(withReorgs.length, 1);
  t.equal(withReorgs[0]!.title, 'Reorgs');
  t.match(withReorgs[0]!.targets![0]!.expr, /increase\(switchyard_reorgs_total/);
});

/** What keeps a replica's series when it serves the chosen chain: its switchyard_build_info. */
const CHAIN = 'and on (job, instance) switchyard_build_info{chain_id=~"$chain_id"}';

t.test(
  'variables job, chain_id, instance, upstream; panels filter on them; annotations for reorgs and reloads',
  async (t) => {
    t.same(
      d.templating.list.map((v) => v.name).filter((n) => n !== 'datasource'),
      ['job', 'chain_id', 'instance', 'upstream'],
    );
    const query = (name: string): string | undefined => d.templating.list.find((v) => v.name === name)?.query?.query;
    t.equal(query('chain_id'), 'label_values(switchyard_build_info{job=~"$job"}, chain_id)', 'chains from build_info');
    t.match(
      query('instance'),
      /switchyard_build_info\{job=~"\$job", chain_id=~"\$chain_id"\}/,
      'replicas of the chain',
    );
    const exprs = [
      ...panels.flatMap((p) => (p.targets ?? []).map((x) => ({ where: `${p.title} ${x.refId}`, expr: x.expr }))),
      ...d.annotations.list.filter((a) => a.expr).map((a) => ({ where: `annotation ${a.name}`, expr: a.expr! })),
    ];
    let raw = 0;
    let recorded = 0;
    for (const { where, expr } of exprs) {
      // Every selector of a replica's own series filters on job and instance, and is kept only for
      // replicas of the chosen chain: one chain filter per selector, so none is left out.
      const selectors = [...expr.matchAll(/\b(?:switchyard|process|nodejs|up)\w*\{([^}]*)\}/g)].filter(
        (m) => !m[0].startsWith('switchyard_build_info{chain_id'),
      );
      for (const m of selectors) {
        raw++;
        t.match(m[1], /^job=~"\$job", instance=~"\$instance"/, `${where}: ${m[0]} filters on job and instance`);
        if (/^switchyard_upstream_\w+\{/.test(m[0]))
          t.match(m[1], /upstream=~"\$upstream"/, `${where}: ${m[0]} filters on upstream`);
      }
      t.equal(expr.split(CHAIN).length - 1, selectors.length, `${where}: every selector kept to the chosen chain`);
      // The SLO's recording rules are per job and chain already.
      for (const m of expr.matchAll(/\bswitchyard:slo_[\w:]+(\{[^}]*\})?/g)) {
        if (m[0] === 'switchyard:slo_objective') continue;
        recorded++;
        t.equal(m[1], '{job=~"$job", chain_id=~"$chain_id"}', `${where}: ${m[0]} filters on job and chain`);
      }
    }
    t.ok(raw >= 70 && recorded >= 7, `${raw} selectors of replica series, ${recorded} of the SLO rules`);
    for (const title of ['Upstreams quarantined', 'Redis', 'Config reloads'])
      t.ok(
        panels.some((p) => p.title === title),
        `panel ${title}`,
      );
    const names = d.annotations.list.filter((a) => a.expr).map((a) => a.name);
    t.same(names, ['Reorgs', 'Config reloads']);
  },
);

t.test('upstreams out of rotation: held off, cordoned, 429s and budgets, each pointing at the runbook', async (t) => {
  const queried = (p: Panel): string => (p.targets ?? []).map((x) => x.expr).join('\n');
  const out = panels.find((p) => p.title === 'Upstreams held off or cordoned')!;
  t.ok(out, 'panel Upstreams held off or cordoned');
  t.match(queried(out), /switchyard_upstream_held_off\{/);
  t.match(queried(out), /switchyard_upstream_cordoned\{/);
  const refusals = panels.find((p) => p.title === 'Upstream 429s and budget refusals / s')!;
  t.match(queried(refusals), /rate\(switchyard_upstream_rate_limited_total\{/);
  t.match(queried(refusals), /rate\(switchyard_upstream_budget_exhausted_total\{/);
  const remaining = panels.find((p) => p.title === 'Upstream budget remaining')!;
  t.match(queried(remaining), /switchyard_upstream_budget_remaining\{/);
  for (const p of [out, refusals, remaining])
    t.match(p.description, /docs\/observability\.md#allupstreamsheldofforcordoned/, `${p.title} links the runbook`);
});

t.test('on call: errors by reason, the uptime page, replicas; each panel links its runbook section', async (t) => {
  const base = 'https://switchyard.example/docs/observability.md#';
  const byTitle = (title: string): Panel & { links?: { url: string }[] } => panels.find((p) => p.title === title)!;
  const expect: [string, RegExp, string][] = [
    ['Calls / s by reason (refused or failed)', /sum by \(reason\) \(rate\(switchyard_calls_total\{/, 'higherrorratio'],
    ['Uptime page incident', /switchyard_uptime_incident_open\{/, 'uptimeincidentopen'],
    ['Uptime page head age', /switchyard_uptime_head_age_seconds\{/, 'fleetheadstalled'],
    ['Replicas: scraped and ready', /sum\(up\{[\s\S]*switchyard_ready\{/, 'switchyarddown'],
    ['Upstreams held off or cordoned', /switchyard_upstream_held_off\{/, 'allupstreamsheldofforcordoned'],
  ];
  for (const [title, expr, anchor] of expect) {
    const p = byTitle(title);
    t.ok(p, `panel ${title}`);
    t.match((p?.targets ?? []).map((x) => x.expr).join('\n'), expr, `${title} queries what it says`);
    t.same(
      (p?.links ?? []).map((l) => l.url),
      [`${base}${anchor}`],
      `${title} links the runbook`,
    );
  }
});

t.test('the outcomes a description names are the outcomes calls_total has', async (t) => {
  const { CALL_OUTCOMES } = await import('../../src/metrics/calls.js');
  const p = panels.find((x) => x.title === 'Calls / s by method and outcome')!;
  for (const o of CALL_OUTCOMES) t.match(p.description, new RegExp(`\\b${o}\\b`), `names ${o}`);
  for (const gone of ['rate_limited', ' error (Switchyard'])
    t.notOk(p.description?.includes(gone), `does not name "${gone}", no such outcome`);
});

t.test('the on-call row comes first: SLO burn, availability, healthy upstreams, error ratio, p99', async (t) => {
  t.equal(d.panels[0]?.type, 'row');
  t.equal(d.panels[0]?.title, 'On call', 'the first row');
  const next = d.panels.find((p, i) => i > 0 && p.type === 'row')!;
  const first = d.panels.filter((p) => p.type !== 'row' && p.gridPos.y < next.gridPos.y);
  t.ok(
    d.panels.every((p) => p === d.panels[0] || first.includes(p) || p.gridPos.y >= next.gridPos.y),
    'every other panel is below it',
  );
  const titles = first.map((p) => p.title);
  for (const title of [
    'Error budget burn rate (1 h)',
    'Error budget burn rate (6 h)',
    'Availability and error budget left (30 d)',
    'Healthy upstreams',
    'Service error ratio',
    'p99 call latency',
    'Error budget burn rate',
    'Calls / s by reason (refused or failed)',
    'Replicas: scraped and ready',
  ])
    t.ok(titles.includes(title), `on call: ${title}`);
  // Its top line, left to right, is what a page asks first.
  t.same(
    first
      .filter((p) => p.gridPos.y === 1)
      .sort((a, b) => a.gridPos.x - b.gridPos.x)
      .map((p) => p.title),
    titles.slice(0, 6),
  );
  const q = (title: string): Target[] => first.find((p) => p.title === title)?.targets ?? [];
  t.match(q('Error budget burn rate (1 h)')[0]?.expr, /^switchyard:slo_burn_rate:1h\{/);
  t.match(q('Error budget burn rate (6 h)')[0]?.expr, /^switchyard:slo_burn_rate:6h\{/);
  const thirty = q('Availability and error budget left (30 d)');
  t.ok(
    thirty.length === 2 && thirty.every((x) => /\[30d\]/.test(x.expr) && x.instant === true),
    '30 days, as one instant query',
  );
  t.match(thirty[1]?.expr, /1 - switchyard:slo_objective/, "the budget is the one objective's");
});
