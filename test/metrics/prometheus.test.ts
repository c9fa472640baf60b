// A real Prometheus (the Debian package) scrapes a real Switchyard in front of a real anvil, with
// config/prometheus.yml's scrape job and config/alerts.yml's rules. Pins: the metrics the spec
// names reach Prometheus; every metric named by a Grafana panel or an alert rule is one Switchyard
// exports (no dashboard or rule queries a name that does not exist); the rules load and evaluate.

import t from 'tap';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { App } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log/logger.js';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { call, get, post } from '../helpers/rpc.js';
import { testConfig } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { freePort } from '../helpers/ports.js';
import { stopProcess } from '../helpers/process.js';
import { startRedis } from '../helpers/redis.js';

const PROMETHEUS = '/usr/bin/prometheus';
const PROMTOOL = '/usr/bin/promtool';
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DASHBOARD = join(ROOT, 'grafana/dashboards/switchyard.json');
const PROMETHEUS_YML = join(ROOT, 'config/prometheus.yml');
const ALERTS = join(ROOT, 'config/alerts.yml');

const run = promisify(execFile);

const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'offset',
  'bool',
  'inf',
  'nan',
  'sum',
  'min',
  'max',
  'avg',
  'count',
  'stddev',
  'stdvar',
  'topk',
  'bottomk',
  'quantile',
  'count_values',
  'group',
]);

/**
 * Metric names a PromQL expression (or a Grafana `label_values(metric, label)` query) selects.
 * Strings, label matchers, ranges and grouping label lists are cut out first; what is left that is
 * an identifier, not a keyword and not called like a function is a metric name.
 */
function metricNames(expr: string): string[] {
  const lv = /^\s*label_values\(\s*([a-zA-Z_:][\w:]*)\s*(\{[^}]*\})?\s*,/.exec(expr);
  if (lv) return [lv[1]!];
  if (/^\s*label_values\(/.test(expr)) return [];
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' $1 ');
  const names = new Set<string>();
  const token = /(\$\{?\w+\}?)|(0x[0-9a-f]+|\d+(?:\.\d+)?(?:e[+-]?\d+)?[a-z]*)|([a-z_:][\w:]*)/gi;
  for (const m of stripped.matchAll(token)) {
    const name = m[3];
    if (name === undefined || KEYWORDS.has(name.toLowerCase())) continue;
    const after = stripped.slice(m.index! + name.length).trimStart();
    if (after.startsWith('(')) continue;
    names.add(name);
  }
  return [...names];
}

/**
 * Grafana's variables as a real dashboard load would fill them, so expressions can be run as-is:
 * "All" (`.*`) for each, or one chain id for `$chain_id`.
 */
function expandGrafana(expr: string, chain = '.*'): string {
  return expr
    .replace(/\$__rate_interval|\$\{__rate_interval\}/g, '1m')
    .replace(/\$__interval|\$\{__interval\}/g, '15s')
    .replace(/\$__range|\$\{__range\}/g, '5m')
    .replace(/\$\{?chain_id\}?/g, chain)
    .replace(/\$\{?(instance|job|upstream)\}?/g, '.*');
}

interface Panel {
  title?: string;
  type: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
  datasource?: { uid?: string };
}

function dashboardQueries(): { where: string; expr: string }[] {
  const d = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: Panel[];
    templating?: { list: { name: string; type: string; query?: string | { query?: string } }[] };
    annotations?: { list: { name: string; expr?: string }[] };
  };
  const out: { where: string; expr: string }[] = [];
  const walk = (panels: Panel[]): void => {
    for (const p of panels) {
      for (const target of p.targets ?? [])
        if (target.expr) out.push({ where: `panel "${p.title}"`, expr: target.expr });
      walk(p.panels ?? []);
    }
  };
  walk(d.panels);
  for (const a of d.annotations?.list ?? []) if (a.expr) out.push({ where: `annotation "${a.name}"`, expr: a.expr });
  for (const v of d.templating?.list ?? []) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    if (q) out.push({ where: `variable $${v.name}`, expr: q });
  }
  return out;
}

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  annotations?: Record<string, string>;
}
function alertRules(): Rule[] {
  const doc = YAML.parse(readFileSync(ALERTS, 'utf8')) as { groups: { rules: Rule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

interface PromResponse<T> {
  status: string;
  data: T;
  error?: string;
}

async function promApi<T>(base: string, path: string): Promise<T> {
  const res = await fetch(`${base}${path}`);
  const body = (await res.json()) as PromResponse<T>;
  if (body.status !== 'success') throw new Error(`${path}: ${body.error ?? res.status}`);
  return body.data;
}

type Vector = { metric: Record<string, string>; value: [number, string] }[];
const query = (base: string, expr: string): Promise<Vector> =>
  promApi<{ result: Vector }>(base, `/api/v1/query?query=${encodeURIComponent(expr)}`).then((d) => d.result);

t.test('the name extractor reads PromQL the way Prometheus does', async (t) => {
  t.same(
    metricNames(
      'histogram_quantile(0.99, sum by (le, method) (rate(switchyard_call_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval])))',
    ),
    ['switchyard_call_duration_seconds_bucket'],
  );
  t.same(
    metricNames(
      'sum by (instance) (rate(a_total{outcome="error"}[5m])) / sum by (instance) (rate(b_total[5m])) > 0.05',
    ),
    ['a_total', 'b_total'],
  );
  t.same(metricNames('(x > 0.1) and on (instance) sum without (reason) (y offset 5m) > 1'), ['x', 'y']);
  t.same(metricNames('up{job="switchyard"} == 0'), ['up']);
  t.same(metricNames('label_values(switchyard_fleet_head_block_number, instance)'), [
    'switchyard_fleet_head_block_number',
  ]);
  t.same(metricNames('label_values(switchyard_build_info{job=~"$job"}, instance)'), ['switchyard_build_info']);
});

if (!existsSync(PROMETHEUS)) {
  t.fail(
    `${PROMETHEUS} not found: the Debian package "prometheus" is required; .ci/run must \`apt-get install -y prometheus\` before running the tests`,
  );
} else {
  t.test(
    'a real Prometheus scrapes Switchyard; the dashboard and alert rules query only exported metrics',
    async (t) => {
      const anvil = await startAnvil();
      t.teardown(() => anvil.stop());
      // A Redis for the rate limits: switchyard_redis_up (RedisUnreachable, the Redis panel) exists
      // only while some Redis is in use.
      const redis = await startRedis(t);

      // Process metrics on: the dashboard's process panels need them (startSwitchyard turns them off).
      // Rate limits roomy enough for the traffic below, except eth_getLogs, which costs more than a
      // second's budget and so fits only the hourly burst allowance, once: the second such call is
      // refused deterministically (switchyard_rate_limited_calls_total). node-a has a budget far above
      // that traffic: the budget series (the dashboard's budget panels) exist only for a budgeted node.
      const config = validateConfig(
        testConfig({
          // node-s, a shadow of the same node, gets a copy of every answered read: the shadow panel's series.
          upstreams: [
            { name: 'node-a', url: anvil.url, rateLimit: { ratePerSec: 10_000, burst: 30_000 } },
            { name: 'node-s', url: anvil.url, shadow: true },
          ],
          routing: { shadowSampleRate: 1 },
          rateLimit: {
            perIp: { ratePerSec: 10_000, burst: 30_000, burstWindowSec: 3600 },
            methodCost: { eth_getLogs: 15_000 },
            redis: redis.url,
          },
        }),
      );
      const app = await App.start(config, { logger: createLogger('silent'), processMetrics: true });
      t.teardown(() => app.close());
      const url = `http://127.0.0.1:${app.ports.http}`;
      const adminUrl = `http://127.0.0.1:${app.ports.admin}`;
      await waitFor('switchyard ready', async () => (await get(`${adminUrl}/ready?upstreams=1`)).status === 200);

      // The repository's scrape job and rules, pointed at this Switchyard and sped up to 1 s.
      const dir = mkdtempSync(join(tmpdir(), 'switchyard-prom-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      const promConfig = YAML.parse(readFileSync(PROMETHEUS_YML, 'utf8'));
      promConfig.global = {
        ...promConfig.global,
        scrape_interval: '1s',
        scrape_timeout: '1s',
        evaluation_interval: '1s',
      };
      promConfig.rule_files = [ALERTS];
      // compose's Alertmanager does not exist here: the rules are read from Prometheus' API instead.
      delete promConfig.alerting;
      t.equal(promConfig.scrape_configs.length, 1, 'config/prometheus.yml has one scrape job');
      promConfig.scrape_configs[0].static_configs = [
        { targets: [`127.0.0.1:${app.ports.admin}`], labels: { replica: '1' } },
      ];
      const configFile = join(dir, 'prometheus.yml');
      writeFileSync(configFile, YAML.stringify(promConfig));

      if (existsSync(PROMTOOL)) {
        await t.resolves(
          run(PROMTOOL, ['check', 'config', PROMETHEUS_YML]),
          'promtool check config config/prometheus.yml',
        );
        await t.resolves(run(PROMTOOL, ['check', 'config', configFile]), 'promtool check config (test copy)');
        await t.resolves(run(PROMTOOL, ['check', 'rules', ALERTS]), 'promtool check rules config/alerts.yml');
      } else {
        t.comment(`${PROMTOOL} not found; skipping promtool checks (the Debian prometheus package ships it)`);
      }

      const port = await freePort();
      const prom = promBase(port);
      const proc = startPrometheus(configFile, dir, port);
      t.teardown(() => stopProcess(proc));

      // Traffic that makes every family have samples: forwarded reads, local answers, a batch, an
      // unknown method (outcome error), a 415, a rate-limited call, and a null hash lookup (retried
      // once: a failover).
      await post(anvil.url, { jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: ['0x3'] });
      await waitFor('switchyard sees block 3', async () => (await call(url, 'eth_blockNumber')).result === '0x3');
      t.equal((await call(url, 'eth_chainId')).result, '0xba');
      t.match((await call(url, 'eth_getBalance', [DEV_ADDRESS, 'latest'])).result, /^0x[0-9a-f]+$/);
      t.match((await call(url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest'])).result, /^0x[0-9a-f]+$/);
      const batch = await post(
        url,
        [1, 2, 3].map((id) => ({ jsonrpc: '2.0', id, method: 'eth_getBalance', params: [DEV_ADDRESS, 'latest'] })),
      );
      t.equal(batch.json().length, 3);
      t.equal((await call(url, 'foo_bar')).error?.code, -32601);
      t.equal((await post(url, '{}', { 'content-type': 'text/plain' })).status, 415);
      const getLogs = { jsonrpc: '2.0', id: 9, method: 'eth_getLogs', params: [{ fromBlock: '0x0', toBlock: '0x1' }] };
      t.equal((await post(url, getLogs)).status, 200, 'the first eth_getLogs is paid from the burst allowance');
      const limited = await post(url, getLogs);
      t.equal(limited.status, 429, 'the second finds the allowance spent and is refused');
      t.equal(limited.json().error?.code, -32005);
      t.equal((await call(url, 'eth_getTransactionByHash', [`0x${'ab'.repeat(32)}`])).result, null);
      // The sentinel: the last call, and the only eth_gasPrice. A scrape that has it has all the rest.
      t.match((await call(url, 'eth_gasPrice')).result, /^0x[0-9a-f]+$/);

      await waitFor('prometheus ready', async () => (await fetch(`${prom}/-/ready`)).ok, {
        timeoutMs: 20_000,
        intervalMs: 200,
      });
      await waitFor(
        'a scrape after the traffic',
        async () =>
          (await query(prom, 'switchyard_calls_total{method="eth_gasPrice"}')).length > 0 &&
          (await query(prom, 'switchyard_fleet_head_block_number == 3')).length > 0,
        { timeoutMs: 20_000, intervalMs: 250 },
      );

      await t.test('the metrics of SPEC section 8 reach Prometheus', async (t) => {
        const up = await query(prom, 'up{job="switchyard"}');
        t.equal(up[0]?.value[1], '1', 'the scrape job is up');
        for (const name of [
          'switchyard_calls_total',
          'switchyard_call_duration_seconds_bucket',
          'switchyard_http_requests_total',
          'switchyard_batch_size_bucket',
          'switchyard_upstream_calls_total',
          'switchyard_upstream_duration_seconds_bucket',
          'switchyard_upstream_head_block_number',
          'switchyard_upstream_lag_blocks',
          'switchyard_upstream_healthy',
          'switchyard_upstream_in_flight',
          'switchyard_upstream_breaker_state',
          'switchyard_fleet_head_block_number',
          'switchyard_fleet_finalized_block_number',
          'switchyard_failovers_total',
          'switchyard_in_flight_calls',
          'switchyard_rate_limited_calls_total',
          'process_resident_memory_bytes',
          'nodejs_eventloop_lag_p99_seconds',
          'switchyard_build_info',
          'switchyard_config_last_reload_successful',
          'switchyard_upstream_quarantined',
          'switchyard_routing_max_lag_blocks',
        ]) {
          t.ok((await query(prom, name)).length > 0, `${name} has series`);
        }
        const value = async (expr: string): Promise<number> => Number((await query(prom, expr))[0]?.value[1] ?? NaN);
        t.equal(await value('switchyard_upstream_healthy{upstream="node-a"}'), 1, 'node-a healthy');
        t.equal(await value('switchyard_upstream_head_block_number{upstream="node-a"}'), 3, 'node-a head');
        t.equal(await value('switchyard_upstream_lag_blocks{upstream="node-a"}'), 0, 'node-a lag');
        t.equal(
          await value('switchyard_upstream_breaker_state{upstream="node-a",state="closed"}'),
          1,
          'breaker closed',
        );
        t.equal(
          await value('switchyard_upstream_breaker_state{upstream="node-a",state="open"}'),
          0,
          'breaker not open',
        );
        t.ok(
          (await value('sum(switchyard_calls_total{method="eth_getBalance"})')) >= 4,
          'eth_getBalance calls counted, batch elements included',
        );
        t.ok(
          (await value('switchyard_calls_total{outcome="client_error",reason="METHOD_NOT_FOUND"}')) >= 1,
          'the unknown method counted as a client error',
        );
        t.ok(
          (await value('sum(switchyard_calls_total{reason="RATE_LIMITED"})')) >= 1,
          'the rate-limited call counted in calls_total',
        );
        t.ok((await value('switchyard_http_requests_total{status="415"}')) >= 1, '415 counted');
        t.ok(
          (await value('switchyard_failovers_total{reason="null_answer"}')) >= 1,
          'the null retry counted as a failover',
        );
        t.ok((await value('switchyard_batch_size_count')) >= 1, 'batch sizes observed');
        t.ok((await value('switchyard_rate_limited_calls_total{reason="rate"}')) >= 1, 'the refused call counted');
        t.notOk(
          JSON.stringify(await query(prom, '{__name__=~"switchyard_.+"}')).includes(anvil.url),
          'no upstream URL in any label',
        );
      });

      await t.test('every metric named by a dashboard panel or an alert rule exists', async (t) => {
        const known = new Set(await promApi<string[]>(prom, '/api/v1/label/__name__/values'));
        // Series the rules record themselves (switchyard:up, switchyard:target_chain_id) exist
        // once the rule group has run; what they read is checked like any other expression.
        for (const r of alertRules()) if (r.record) known.add(r.record);
        const uses = [
          ...dashboardQueries(),
          ...alertRules().map((r) => ({ where: `alert ${r.alert ?? r.record}`, expr: r.expr })),
        ];
        t.ok(uses.length >= 30, `${uses.length} expressions read`);
        const missing = new Map<string, string[]>();
        for (const { where, expr } of uses) {
          const names = metricNames(expr);
          // A constant (the SLO's objective, switchyard:slo_objective) is the one expression without a metric.
          if (!/^\s*label_values\(|^\s*vector\([\d.]+\)\s*$/.test(expr))
            t.ok(names.length > 0, `${where} names a metric: ${expr}`);
          for (const n of names) if (!known.has(n)) missing.set(n, [...(missing.get(n) ?? []), where]);
        }
        for (const [name, where] of missing) t.comment(`not exported: ${name} (used by ${where.join(', ')})`);
        t.same([...missing.keys()], [], 'every metric name used by a panel or rule is exported by Switchyard');
      });

      await t.test('every dashboard expression is valid PromQL to Prometheus', async (t) => {
        for (const { where, expr } of dashboardQueries()) {
          const lv = /^\s*label_values\((.*),\s*(\w+)\s*\)\s*$/.exec(expr);
          if (lv) {
            // A variable: its selector must be valid and find the label it lists.
            const found = await query(prom, expandGrafana(lv[1]!));
            t.ok(
              found.some((r) => r.metric[lv[2]!] !== undefined),
              `${where}: ${expr} finds ${lv[2]} values`,
            );
            continue;
          }
          await t.resolves(query(prom, expandGrafana(expr)), `${where}: ${expr}`);
        }
      });

      await t.test('every dashboard expression honours the chain variable', async (t) => {
        // The SLO panels read recording rules: wait until the group has recorded them.
        await waitFor(
          'the SLO burn rates recorded',
          async () => (await query(prom, 'switchyard:slo_burn_rate:1h{chain_id="0xba"}')).length > 0,
          { timeoutMs: 20_000, intervalMs: 250 },
        );
        // A series that says nothing of a chain: `or vector(0)`'s stand-in for "none".
        const real = (v: Vector): Vector => v.filter((r) => Object.keys(r.metric).length > 0 || r.value[1] !== '0');
        let answered = 0;
        for (const { where, expr } of dashboardQueries()) {
          if (/^\s*label_values\(/.test(expr)) continue;
          const ours = real(await query(prom, expandGrafana(expr, '0xba')));
          const all = real(await query(prom, expandGrafana(expr)));
          t.equal(ours.length, all.length, `${where}: chain 0xba (this replica's) shows what "All" shows`);
          if (ours.length > 0) answered++;
          t.same(
            real(await query(prom, expandGrafana(expr, '0x1'))),
            [],
            `${where}: chain 0x1 (no replica) shows nothing`,
          );
        }
        t.ok(answered >= 40, `${answered} expressions had data for chain 0xba, and none for chain 0x1`);
      });

      await t.test('the alert rules loaded and evaluate without errors', async (t) => {
        type RuleState = { name: string; type: string; health: string; lastError?: string; lastEvaluation?: string };
        const rules = await waitFor(
          'every rule evaluated once',
          async () => {
            const data = await promApi<{ groups: { file: string; rules: RuleState[] }[] }>(prom, '/api/v1/rules');
            const all = data.groups.filter((g) => g.file === ALERTS).flatMap((g) => g.rules);
            return all.length > 0 && all.every((r) => r.health !== 'unknown') ? all : undefined;
          },
          { timeoutMs: 15_000, intervalMs: 250 },
        );
        t.equal(rules.length, alertRules().length, 'every rule of config/alerts.yml is loaded');
        for (const r of rules) t.equal(r.health, 'ok', `${r.name} evaluates${r.lastError ? `: ${r.lastError}` : ''}`);
        const names = rules.map((r) => r.name);
        for (const required of [
          'NoHealthyUpstream',
          'UpstreamLagging',
          'HighErrorRatio',
          'RateLimitingSurge',
          'UpstreamRedundancyDegraded',
          'UpstreamQuarantined',
          'LoadShedding',
          'HighCallLatency',
          'SwitchyardTargetAbsent',
          'ConfigReloadFailed',
        ]) {
          t.ok(names.includes(required), `${required} is defined`);
        }
        // The chain every alert names: the recording rule joins it from switchyard_build_info of
        // the scraped replica (the configured chain id, 0xba).
        const chains = await waitFor(
          'switchyard:target_chain_id recorded',
          async () => {
            const v = await query(prom, 'switchyard:target_chain_id');
            return v.length > 0 ? v : undefined;
          },
          { timeoutMs: 15_000, intervalMs: 250 },
        );
        t.same(
          chains.map((c) => [c.metric.chain_id, c.metric.instance !== undefined]),
          [['0xba', true]],
          'one replica, on chain 0xba',
        );
        const alerts = await promApi<{ alerts: { labels: Record<string, string>; state: string }[] }>(
          prom,
          '/api/v1/alerts',
        );
        t.notOk(
          alerts.alerts.some((a) => a.labels.alertname === 'NoHealthyUpstream'),
          'NoHealthyUpstream quiet while node-a is healthy',
        );
      });
    },
  );
}

function promBase(port: number): string {
  return `http://127.0.0.1:${port}`;
}

function startPrometheus(configFile: string, dir: string, port: number): ChildProcess {
  const proc = spawn(
    PROMETHEUS,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  proc.once('exit', (code, signal) => {
    if (code !== 0 && signal === null) process.stderr.write(`prometheus exited with ${code}:\n${stderr}\n`);
  });
  process.once('exit', () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  return proc;
}
