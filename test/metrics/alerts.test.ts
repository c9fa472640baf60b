// config/alerts.yml as an on-call reads it: every rule has a summary, a description and a
// runbook_url whose anchor is a heading of docs/observability.md (its runbook); config/alerts.test.yml tests every alert both
// firing and quiet, with series Switchyard really emits (names from the metrics registry, label
// values from the closed sets of the code that produces them), every expected alert carrying chain_id,
// instance and its annotations; the scrape job is selected in one recording rule and every rule
// reads the metrics of that job only (joined and grouped by job and instance); the availability
// SLO has one objective and the SRE workbook's windows, burn rates and a traffic guard; an alert
// defined at two severities fires at each; and `promtool test rules` passes on the shipped files,
// unmodified.

import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { BREAKER_STATES, INCIDENT_KINDS } from '../../src/metrics/labels.js';
import { CALL_OUTCOMES, CALL_REASONS, Metrics } from '../../src/metrics/registry.js';
import { REDIS_UP } from '../../src/metrics/redis.js';
import { RELOAD_RESULTS } from '../../src/metrics/service.js';
import { MethodPolicy } from '../../src/methods/policy.js';
import { validateConfig } from '../../src/config/load.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ALERTS = join(ROOT, 'config/alerts.yml');
const TESTS = join(ROOT, 'config/alerts.test.yml');
const PROMTOOL = '/usr/bin/promtool';
const run = promisify(execFile);

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface UnitTest {
  input_series: { series: string; values: string }[];
  alert_rule_test: {
    alertname: string;
    exp_alerts: { exp_labels?: Record<string, string>; exp_annotations?: Record<string, string> }[];
  }[];
}

const all = (YAML.parse(readFileSync(ALERTS, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap(
  (g) => g.rules,
);
const rules = all.filter((r) => r.alert !== undefined);
const unit = YAML.parse(readFileSync(TESTS, 'utf8')) as { rule_files: string[]; tests: UnitTest[] };

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6}\s+(.+)$/gm))
    out.add(
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-'),
    );
  return out;
}

/** The job switchyard:up selects, and another job scraping the same replicas (a prometheus.io/* annotation job). */
const JOB = 'switchyard';
const OTHER_JOB = 'kubernetes-pods';

/** The one base every runbook_url starts with, and the dashboard every alert links (docs/observability.md). */
const RUNBOOK_BASE = 'https://switchyard.example/docs/observability.md';
const DASHBOARD_URL = 'http://localhost:3000/d/switchyard/switchyard';

t.test(
  'every rule has summary, description, an absolute runbook_url to a runbook section, a dashboard_url',
  async (t) => {
    const runbook = anchors(readFileSync(join(ROOT, 'docs/observability.md'), 'utf8'));
    t.ok(rules.length >= 14, `${rules.length} rules`);
    const docs = readFileSync(join(ROOT, 'docs/observability.md'), 'utf8');
    t.ok(
      docs.includes(RUNBOOK_BASE) && docs.includes(DASHBOARD_URL),
      'the docs name both bases, and how to change them',
    );
    for (const r of rules) {
      t.ok(r.annotations?.summary, `${r.alert}: summary`);
      t.ok(r.annotations?.description, `${r.alert}: description`);
      const m = new RegExp(`^${RUNBOOK_BASE.replace(/[.]/g, '\\.')}#(.+)$`).exec(r.annotations?.runbook_url ?? '');
      t.ok(
        m && runbook.has(m[1]!),
        `${r.alert}: runbook_url ${r.annotations?.runbook_url} is a heading of docs/observability.md`,
      );
      t.equal(r.annotations?.dashboard_url, DASHBOARD_URL, `${r.alert}: dashboard_url`);
    }
  },
);

t.test('every alert is unit-tested firing and quiet', async (t) => {
  const cases = unit.tests.flatMap((u) => u.alert_rule_test);
  for (const r of rules) {
    t.ok(
      cases.some((c) => c.alertname === r.alert && c.exp_alerts.length > 0),
      `${r.alert} fires in a test`,
    );
    t.ok(
      cases.some((c) => c.alertname === r.alert && c.exp_alerts.length === 0),
      `${r.alert} stays quiet in a test`,
    );
  }
});

t.test('every expected alert names its chain and replica, with its annotations', async (t) => {
  const cases = unit.tests.flatMap((u) => u.alert_rule_test);
  for (const c of cases)
    for (const a of c.exp_alerts) {
      t.match(a.exp_labels?.chain_id, /^(0x[0-9a-f]+|unknown)$/, `${c.alertname}: chain_id`);
      t.ok(a.exp_labels?.instance, `${c.alertname}: instance`);
      t.same(
        Object.keys(a.exp_annotations ?? {}).sort(),
        ['dashboard_url', 'description', 'runbook_url', 'summary'],
        `${c.alertname}: every annotation expected`,
      );
    }
  // The job the alert is about is the selected one; SwitchyardTargetAbsent has none (no target).
  for (const c of cases)
    if (c.alertname !== 'SwitchyardTargetAbsent')
      for (const a of c.exp_alerts) t.equal(a.exp_labels?.job, JOB, `${c.alertname}: job ${JOB}`);
  // Both ways of not knowing a replica's chain are exercised: a chain remembered, and none ever seen.
  const absent = cases.filter((c) => c.alertname === 'SwitchyardTargetAbsent').flatMap((c) => c.exp_alerts);
  t.same(
    absent.map((a) => a.exp_labels?.chain_id).sort(),
    ['0x1', 'unknown'],
    'TargetAbsent: chain remembered or unknown',
  );
});

t.test('the scrape job is selected in one place: the recording rule switchyard:up', async (t) => {
  const selecting = all.filter((r) => /\bjob\s*=/.test(r.expr));
  t.same(
    selecting.map((r) => r.record ?? r.alert),
    ['switchyard:up'],
    'one rule names the job',
  );
  t.match(selecting[0]?.expr, /^\s*up\{job="[^"]+"\}\s*$/, 'it is up of that job, nothing else');
  for (const r of all.filter((r) => r.record !== 'switchyard:up'))
    t.notMatch(r.expr, /(?<![\w:])up\b/, `${r.record ?? r.alert} reads up through switchyard:up`);
});

t.test(
  'every rule reads the switchyard_* metrics of the selected job only: joined and grouped by job and instance',
  async (t) => {
    const JOIN = '* on (job, instance) group_left (chain_id) switchyard:target_chain_id';
    for (const r of all) {
      const name = r.record ?? r.alert;
      // Grouping or matching by instance alone would merge the same replica scraped by two jobs.
      for (const m of r.expr.matchAll(/\b(by|on)\s*\(([^)]*)\)/g)) {
        const labels = m[2]!.split(',').map((x) => x.trim());
        if (labels.includes('instance')) t.ok(labels.includes('job'), `${name}: ${m[0]} names job too`);
      }
      if (r.record === 'switchyard:target_chain_id' || !/\b(switchyard|process|nodejs)_\w+/.test(r.expr)) continue;
      t.ok(r.expr.includes(JOIN), `${name} reads its metrics through ${JOIN}`);
    }
    // A second job scraping the same replicas is in the unit tests, so the claim is tested.
    t.ok(
      unit.tests.some((u) => u.input_series.some((x) => x.series.includes(`job="${OTHER_JOB}"`))),
      `a unit test feeds series of job ${OTHER_JOB}`,
    );
  },
);

t.test('the availability SLO: one objective, the SRE workbook windows and burn rates, a traffic guard', async (t) => {
  const objective = all.filter((r) => r.record === 'switchyard:slo_objective');
  t.equal(objective.length, 1, 'the objective is recorded once');
  t.match(objective[0]?.expr, /^\s*vector\(0\.999\)\s*$/, '99.9%');
  for (const w of ['5m', '30m', '1h', '6h', '3d']) {
    const burn = all.find((r) => r.record === `switchyard:slo_burn_rate:${w}`);
    t.ok(burn, `burn rate over ${w} recorded`);
    t.match(burn?.expr, /1 - switchyard:slo_objective/, `${w}: divided by the budget of the one objective`);
    if (w !== '5m') t.match(burn?.expr, new RegExp(`\\[${w}\\]`), `${w}: over ${w}`);
  }
  const expr = (name: string): string => rules.find((r) => r.alert === name)?.expr ?? '';
  // Each long window pairs with its short one at the workbook's factor, behind the guard.
  const pairs: [string, string, string, string][] = [
    ['AvailabilitySLOFastBurn', '1h', '5m', '14.4'],
    ['AvailabilitySLOFastBurn', '6h', '30m', '6'],
    ['AvailabilitySLOSlowBurn', '3d', '6h', '1'],
  ];
  for (const [alert, long, short, factor] of pairs) {
    const f = factor.replace('.', '\\.');
    t.match(
      expr(alert),
      new RegExp(
        `switchyard:slo_burn_rate:${long} > ${f}\\s+and on \\(job, chain_id\\) switchyard:slo_burn_rate:${short} > ${f}\\s+` +
          `and on \\(job, chain_id\\) avg_over_time\\(switchyard:slo_calls:rate5m\\[${long}\\]\\) >= 1`,
      ),
      `${alert}: ${factor}x over ${long} and ${short}, at least 1 call/s over ${long}`,
    );
  }
  t.equal(rules.find((r) => r.alert === 'AvailabilitySLOFastBurn')?.labels?.severity, 'critical', 'fast burn pages');
  t.equal(
    rules.find((r) => r.alert === 'AvailabilitySLOSlowBurn')?.labels?.severity,
    'warning',
    'slow burn is a ticket',
  );
});

t.test('an alert defined at two severities fires at each in a test', async (t) => {
  const cases = unit.tests.flatMap((u) => u.alert_rule_test);
  for (const r of rules) {
    if (rules.filter((x) => x.alert === r.alert).length < 2) continue;
    t.ok(
      cases.some(
        (c) => c.alertname === r.alert && c.exp_alerts.some((a) => a.exp_labels?.severity === r.labels?.severity),
      ),
      `${r.alert} fires at ${r.labels?.severity}`,
    );
  }
  t.same(
    rules.filter((r) => r.alert === 'UpstreamQuarantined').map((r) => r.labels?.severity),
    ['warning', 'critical'],
    'UpstreamQuarantined: a warning while another upstream serves, critical when none is healthy',
  );
});

t.test('the unit tests feed only series Switchyard emits', async (t) => {
  const metrics = new Metrics({ processMetrics: false });
  const policy = new MethodPolicy(validateConfig({ upstreams: [{ name: 'a', url: 'http://127.0.0.1:1' }] }).methods);
  // Label values from the registry's closed sets; upstream names are configuration.
  const closed: Record<string, (v: string) => boolean> = {
    outcome: (v) => (CALL_OUTCOMES as readonly string[]).includes(v),
    state: (v) => (BREAKER_STATES as readonly string[]).includes(v),
    result: (v) => (RELOAD_RESULTS as readonly string[]).includes(v),
    method: (v) => policy.label(v) === v,
    upstream: (v) => /^[a-zA-Z0-9_.-]{1,64}$/.test(v),
    le: (v) => v === '+Inf' || Number.isFinite(Number(v)),
    kind: (v) => (INCIDENT_KINDS as readonly string[]).includes(v),
    // switchyard_build_info: any version string; the chain id in hex as eth_chainId answers.
    version: (v) => v.length > 0,
    chain_id: (v) => /^0x[0-9a-f]+$/.test(v),
  };
  for (const u of unit.tests) {
    for (const { series } of u.input_series) {
      const m = /^([a-zA-Z_:][\w:]*)\{(.*)\}$/.exec(series);
      if (!m) {
        t.fail(`unreadable series ${series}`);
        continue;
      }
      const name = m[1]!;
      const labels = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!]));
      t.ok([JOB, OTHER_JOB].includes(labels.job!), `${series}: job="${JOB}" (or the second job)`);
      if (name === 'up') continue;
      const base = name.replace(/_(bucket|sum|count)$/, '');
      // Registered only while a Redis is in use (src/metrics/redis.ts); it has no labels.
      if (name === REDIS_UP) {
        t.same(Object.keys(labels).sort(), ['instance', 'job'], `${name}: no labels of its own`);
        continue;
      }
      const metric = metrics.registry.getSingleMetric(name) ?? metrics.registry.getSingleMetric(base);
      if (!metric) {
        t.fail(`${name} is not a metric Switchyard exports`);
        continue;
      }
      const declared = new Set<string>([
        ...((metric as unknown as { labelNames: string[] }).labelNames ?? []),
        'job',
        'instance',
        ...(name.endsWith('_bucket') ? ['le'] : []),
      ]);
      for (const [k, v] of Object.entries(labels)) {
        t.ok(declared.has(k), `${name}: label ${k} is declared`);
        if (k === 'reason' && base === 'switchyard_calls_total')
          t.ok((CALL_REASONS as readonly string[]).includes(v), `${name}: reason ${v} is in the catalogue`);
        else if (k !== 'job' && k !== 'instance' && k !== 'reason')
          t.ok(closed[k]?.(v), `${name}: ${k}="${v}" is a value the code emits`);
      }
    }
  }
});

if (!existsSync(PROMTOOL)) {
  t.fail(`${PROMTOOL} not found: the Debian package "prometheus" ships it`);
} else {
  t.test('promtool test rules config/alerts.test.yml, as shipped', async (t) => {
    t.same(unit.rule_files, ['alerts.yml'], 'the tests name the rules file beside them');
    await t.resolves(run(PROMTOOL, ['check', 'rules', ALERTS]), 'promtool check rules config/alerts.yml');
    const out = await run(PROMTOOL, ['test', 'rules', TESTS]).then(
      () => '',
      (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}`,
    );
    t.equal(out, '', 'promtool test rules passes');
  });
}
