// config/alertmanager.yml as Alertmanager applies it (amtool is not on the test machines, so its
// inhibition and grouping are replayed here from the YAML: a target alert is muted while a
// different firing alert matches a rule's source matchers with the same values of its `equal`
// labels; notifications are grouped by the route's group_by). Pins: a fleet-wide upstream outage on
// two replicas pages once, for its cause; a replica's own trouble does not mute another replica's
// alerts; every alert name a matcher names is a rule of config/alerts.yml.

import t from 'tap';
import { readFileSync } from 'node:fs';
import YAML from 'yaml';

type Labels = Record<string, string>;
interface InhibitRule {
  source_matchers: string[];
  target_matchers: string[];
  equal?: string[];
}
const am = YAML.parse(readFileSync(new URL('../../config/alertmanager.yml', import.meta.url), 'utf8')) as {
  route: { group_by: string[] };
  inhibit_rules: InhibitRule[];
};
const rules = (
  YAML.parse(readFileSync(new URL('../../config/alerts.yml', import.meta.url), 'utf8')) as {
    groups: { rules: { alert: string; labels: Labels }[] }[];
  }
).groups.flatMap((g) => g.rules);
const severity = (name: string): string => rules.find((r) => r.alert === name)!.labels.severity!;

/** One matcher of Alertmanager's `name op "value"` syntax; regexes are anchored, as Alertmanager does. */
function matcher(text: string): (l: Labels) => boolean {
  const m = /^\s*(\w+)\s*(=~|!~|!=|=)\s*"(.*)"\s*$/.exec(text);
  if (!m) throw new Error(`unreadable matcher ${text}`);
  const [, name, op, value] = m as unknown as [string, string, string, string];
  const re = new RegExp(`^(?:${value})$`);
  return (l) => {
    const v = l[name] ?? '';
    return op === '=' ? v === value : op === '!=' ? v !== value : op === '=~' ? re.test(v) : !re.test(v);
  };
}
const all = (ms: string[]) => {
  const fs = ms.map(matcher);
  return (l: Labels): boolean => fs.every((f) => f(l));
};

/** An alert as Prometheus sends it: the rule's labels and the series' labels. */
const alert = (name: string, labels: Labels): Labels => ({
  alertname: name,
  severity: severity(name),
  job: 'switchyard',
  ...labels,
});

/** The alerts left after inhibition, and the notification groups they form. */
function notify(firing: Labels[]): { left: Labels[]; groups: Set<string> } {
  const left = firing.filter(
    (target) =>
      !am.inhibit_rules.some((r) => {
        if (!all(r.target_matchers)(target)) return false;
        return firing.some(
          (source) =>
            source !== target &&
            all(r.source_matchers)(source) &&
            (r.equal ?? []).every((k) => (source[k] ?? '') === (target[k] ?? '')),
        );
      }),
  );
  const groups = new Set(left.map((a) => am.route.group_by.map((k) => a[k] ?? '').join('/')));
  return { left, groups };
}

const replicas = ['sy-0:9545', 'sy-1:9545'];
const upstreams = ['node-0', 'node-1', 'node-2'];

t.test('every alert name in a matcher is a rule of config/alerts.yml', async (t) => {
  const names = new Set(rules.map((r) => r.alert));
  for (const r of am.inhibit_rules)
    for (const m of [...r.source_matchers, ...r.target_matchers]) {
      const x = /^alertname(=~|=|!=)"(.*)"$/.exec(m.replace(/\s/g, ''));
      if (!x) continue;
      for (const n of x[2]!.split('|')) t.ok(names.has(n), `${m}: ${n} is an alert`);
    }
});

t.test('every upstream down on every replica: one page, for NoHealthyUpstream', async (t) => {
  const firing = replicas.flatMap((instance) => [
    alert('NoHealthyUpstream', { instance }),
    alert('UptimeIncidentOpen', { instance, kind: 'unreachable' }),
    alert('UpstreamRedundancyDegraded', { instance }),
    alert('HighErrorRatio', { instance }),
    alert('FleetHeadStalled', { instance }),
    ...upstreams.flatMap((upstream) => [
      alert('UpstreamBreakerOpen', { instance, upstream, state: 'closed' }),
      alert('UpstreamLagging', { instance, upstream }),
    ]),
  ]);
  const { left, groups } = notify(firing);
  t.same(new Set(left.map((a) => a.alertname)), new Set(['NoHealthyUpstream']), 'only the cause is left');
  t.equal(left.length, replicas.length, 'one alert per replica');
  t.equal(groups.size, 1, 'in one notification');
});

t.test('every upstream held off or cordoned: one page, for AllUpstreamsHeldOffOrCordoned', async (t) => {
  const firing = replicas.flatMap((instance) => [
    alert('AllUpstreamsHeldOffOrCordoned', { instance }),
    alert('UptimeIncidentOpen', { instance, kind: 'unreachable' }),
    alert('HighErrorRatio', { instance }),
    alert('UpstreamRedundancyDegraded', { instance }),
  ]);
  const { left, groups } = notify(firing);
  t.same(new Set(left.map((a) => a.alertname)), new Set(['AllUpstreamsHeldOffOrCordoned']));
  t.equal(groups.size, 1);
});

t.test('no replica answers: one page, for SwitchyardAllReplicasDown', async (t) => {
  const firing = [
    alert('SwitchyardAllReplicasDown', {}),
    ...replicas.map((instance) => alert('SwitchyardDown', { instance })),
  ];
  const { left, groups } = notify(firing);
  t.same(
    left.map((a) => a.alertname),
    ['SwitchyardAllReplicasDown'],
  );
  t.equal(groups.size, 1);
});

t.test("one replica's trouble mutes only its own alerts", async (t) => {
  const firing = [
    alert('NoHealthyUpstream', { instance: replicas[0]! }),
    alert('UpstreamBreakerOpen', { instance: replicas[0]!, upstream: 'node-0', state: 'closed' }),
    alert('UpstreamBreakerOpen', { instance: replicas[1]!, upstream: 'node-0', state: 'closed' }),
    alert('SwitchyardDown', { instance: replicas[1]! }),
    alert('UpstreamLagging', { instance: replicas[1]!, upstream: 'node-1' }),
  ];
  const { left } = notify(firing);
  t.same(
    left.map((a) => `${a.alertname}@${a.instance}`).sort(),
    [`NoHealthyUpstream@${replicas[0]}`, `SwitchyardDown@${replicas[1]}`],
    'the other replica: SwitchyardDown mutes its own warnings, nothing mutes SwitchyardDown itself',
  );
  const quiet = notify([alert('UpstreamBreakerOpen', { instance: replicas[0]!, upstream: 'node-0', state: 'closed' })]);
  t.equal(quiet.left.length, 1, 'a breaker alone still notifies');
});
