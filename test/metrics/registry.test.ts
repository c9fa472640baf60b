// The registry as a dashboard first sees it: every series that reads 0 from the start is made from
// the closed label list the producing code takes its type from (metrics/labels.ts: a value added
// there gets its series here), and the series that mean something only while a Redis is in use
// exist only then.

import t from 'tap';
import {
  CACHE_CLASSES,
  CONNECTION_REFUSALS,
  FAILOVER_REASONS,
  INCIDENT_KINDS,
  LIMIT_REFUSALS,
  SUBSCRIPTION_KINDS,
  WEBHOOK_OUTCOMES,
  WS_CLOSE_REASONS,
} from '../../src/metrics/labels.js';
import { REDIS_UP } from '../../src/metrics/redis.js';
import { Metrics } from '../../src/metrics/registry.js';
import { PROBE_CHECKS, PROBE_RESULTS, RELOAD_RESULTS } from '../../src/metrics/service.js';
import { FAILOVER_LABELS } from '../../src/metrics/upstream.js';
import { metricSamples } from '../helpers/metrics-text.js';

/** The values of `label` on the series of `name`, sorted, and whether every one of them reads 0. */
function series(text: string, name: string, label: string): { values: string[]; zero: boolean } {
  const values: string[] = [];
  let zero = true;
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`).exec(line);
    if (!m) continue;
    const v = new RegExp(`${label}="([^"]*)"`).exec(m[1]!);
    if (v) values.push(v[1]!);
    if (Number(m[2]) !== 0) zero = false;
  }
  return { values: values.sort(), zero };
}

const sorted = (xs: readonly string[]): string[] => [...xs].sort();

t.test("series that read 0 from the start come from the producers' label lists", async (t) => {
  const text = await new Metrics({ processMetrics: false }).registry.metrics();
  const cases: [string, string, readonly string[]][] = [
    ['switchyard_failovers_total', 'reason', FAILOVER_LABELS],
    ['switchyard_rate_limited_calls_total', 'reason', LIMIT_REFUSALS],
    ['switchyard_connections_refused_total', 'reason', CONNECTION_REFUSALS],
    ['switchyard_connections_evicted_total', 'reason', CONNECTION_REFUSALS],
    ['switchyard_ws_closes_total', 'reason', WS_CLOSE_REASONS],
    ['switchyard_ws_subscriptions', 'kind', SUBSCRIPTION_KINDS],
    ['switchyard_ws_notifications_total', 'kind', SUBSCRIPTION_KINDS],
    ['switchyard_uptime_incident_open', 'kind', INCIDENT_KINDS],
    ['switchyard_config_reloads_total', 'result', RELOAD_RESULTS],
    ['switchyard_uptime_webhooks_total', 'outcome', WEBHOOK_OUTCOMES],
  ];
  for (const [name, label, list] of cases) {
    const s = series(text, name, label);
    t.same(s.values, sorted(list), `${name}: one series per ${label} in the list`);
    t.ok(s.zero, `${name}: every series at 0`);
  }
  t.same(
    series(text, 'switchyard_cache_lookups_total', 'class').values,
    sorted(CACHE_CLASSES.flatMap((c) => [c, c])),
    'cache lookups: a hit and a miss series per class',
  );
  t.same(
    series(text, 'switchyard_uptime_probes_total', 'check').values,
    sorted(PROBE_CHECKS.flatMap((c) => PROBE_RESULTS.map(() => c))),
    'uptime probes: an ok and a fail series per check',
  );
  t.ok(
    FAILOVER_REASONS.every((r) => (FAILOVER_LABELS as readonly string[]).includes(r)),
    'every verdict reason that fails over is a failover label',
  );
});

t.test('the Redis series exist only while a Redis is in use, shared-heads ones once configured', async (t) => {
  const metrics = new Metrics({ processMetrics: false });
  const text = (): Promise<string> => metrics.registry.metrics();
  t.notOk((await text()).includes(REDIS_UP), 'no Redis in use: no switchyard_redis_up');
  t.notOk((await text()).includes('switchyard_shared_heads_'), 'no shared heads: no shared-heads counters');
  metrics.setRedisUp(false);
  t.same(metricSamples(await text(), REDIS_UP), [0], 'a Redis down: 0');
  metrics.setRedisUp(true);
  t.same(metricSamples(await text(), REDIS_UP), [1], 'back: 1');
  metrics.setRedisUp(null);
  t.same(metricSamples(await text(), REDIS_UP), [], 'the last Redis dropped by a reload: gone, not 0');
  metrics.setRedisUp(true);
  t.same(metricSamples(await text(), REDIS_UP), [1], 'a Redis in use again: 1');

  metrics.declareSharedHeads();
  metrics.declareSharedHeads();
  t.same(metricSamples(await text(), 'switchyard_shared_heads_taken_total'), [0], 'declared (twice): one series at 0');
  metrics.recordSharedHeadsTaken();
  metrics.recordSharedHeadsFailure();
  t.same(metricSamples(await text(), 'switchyard_shared_heads_taken_total'), [1]);
  t.same(metricSamples(await text(), 'switchyard_shared_heads_failures_total'), [1]);
});

t.test('forgetUpstream drops every series of a removed upstream', async (t) => {
  const metrics = new Metrics({ processMetrics: false });
  metrics.declareUpstream('gone');
  metrics.setUpstreamHead('gone', 5);
  metrics.setUpstreamLag('gone', 0);
  metrics.setUpstreamHealthy('gone', true);
  metrics.setUpstreamInFlight('gone', 1);
  metrics.setUpstreamHeldInFlight('gone', 1);
  metrics.setUpstreamLatency('gone', 0.1);
  metrics.setBreakerState('gone', 'open');
  t.same(
    metricSamples(await metrics.registry.metrics(), 'switchyard_upstream_breaker_state', { upstream: 'gone' }).sort(),
    [0, 0, 1],
    'one breaker series per state, 1 on the current',
  );
  metrics.forgetUpstream('gone');
  const left = (await metrics.registry.metrics())
    .split('\n')
    .filter(
      (l) =>
        !l.startsWith('#') &&
        l.includes('upstream="gone"') &&
        !/^switchyard_upstream_(quarantined|rate_limited|held_lane_full)_total/.test(l),
    );
  t.same(left, [], 'no gauge series left for it (the event counter keeps its count)');
});
