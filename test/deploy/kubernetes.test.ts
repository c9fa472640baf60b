/**
 * deploy/kubernetes agrees with the config schema: the ConfigMap's config is valid, the container
 * ports are the configured ports, the probes hit /health and /ready on the admin port, the
 * termination period leaves room for shutdownDelayMs + shutdownGraceMs, selectors match, the
 * kustomization lists every manifest, and the shipped Prometheus scrape job has the job name the
 * alert rules select and keeps the Switchyard pods' admin port. Admin writes (SPEC 9): admin.token
 * comes from the Secret through the container's environment, and the NetworkPolicy selects the pods
 * and lets only Prometheus reach the admin port (the kubelet's probes come from the node, which a
 * NetworkPolicy does not block: networkpolicy.yaml says so).
 */
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { parseConfigText } from '../../src/config/load.js';

const DIR = fileURLToPath(new URL('../../deploy/kubernetes/', import.meta.url));
const docs: any[] = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
  .flatMap((f) => parseAllDocuments(readFileSync(join(DIR, f), 'utf8')).map((d) => d.toJS()));
const find = (kind: string, name: string): any => docs.find((d) => d.kind === kind && d.metadata.name === name);
/** The ConfigMap's config, with the environment the Deployment gives the container (the Secret's token). */
const shippedConfig = (): ReturnType<typeof parseConfigText> =>
  parseConfigText(find('ConfigMap', 'switchyard-config').data['config.yaml'], {
    SWITCHYARD_ADMIN_TOKEN: find('Secret', 'switchyard-admin').stringData.token,
  });

t.test('the kustomization lists every manifest', async (t) => {
  const k = parse(readFileSync(join(DIR, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
  const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
  t.same([...k.resources].sort(), files.sort());
});

t.test('the manifests agree with the configuration they ship', async (t) => {
  const config = shippedConfig();
  const dep = find('Deployment', 'switchyard');
  t.equal(dep.spec.replicas, 2, 'two replicas');
  const pod = dep.spec.template.spec;
  const c = pod.containers[0];
  const port = (name: string): number => c.ports.find((p: any) => p.name === name).containerPort;
  t.equal(port('rpc'), config.server.port, 'rpc port = server.port');
  t.equal(port('ws'), config.server.wsPort, 'ws port = server.wsPort');
  t.equal(port('admin'), config.admin.port, 'admin port = admin.port');
  t.equal(config.admin.host, '0.0.0.0', 'the admin port is reachable by the kubelet and Prometheus');
  t.same(c.livenessProbe.httpGet, { path: '/health', port: 'admin' });
  t.same(c.readinessProbe.httpGet, { path: '/ready', port: 'admin' });
  t.ok(
    pod.terminationGracePeriodSeconds * 1000 > config.server.shutdownDelayMs + config.server.shutdownGraceMs,
    'delay + grace < termination period',
  );
  t.ok(
    c.readinessProbe.periodSeconds * 1000 * c.readinessProbe.failureThreshold < config.server.shutdownDelayMs,
    'the readiness probe fails within the shutdown delay',
  );
  const configArg = c.args[c.args.indexOf('--config') + 1];
  const mount = c.volumeMounts.find((m: any) => m.name === 'config');
  t.equal(configArg, `${mount.mountPath}/config.yaml`, 'the config path is the mounted ConfigMap');
  t.equal(pod.volumes.find((v: any) => v.name === 'config').configMap.name, 'switchyard-config');
  t.notOk(
    Object.keys(dep.spec.template.metadata.annotations ?? {}).some((k) => k.startsWith('prometheus.io/')),
    'no prometheus.io annotations: an annotation job would scrape every replica again under another job name',
  );

  const labels = dep.spec.template.metadata.labels;
  for (const svc of [find('Service', 'switchyard'), find('Service', 'switchyard-admin')]) {
    t.has(labels, svc.spec.selector, `${svc.metadata.name} selects the pods`);
    for (const p of svc.spec.ports)
      t.ok(
        c.ports.some((cp: any) => cp.name === p.targetPort),
        `${svc.metadata.name} targets ${p.targetPort}`,
      );
  }
  t.has(labels, find('PodDisruptionBudget', 'switchyard').spec.selector.matchLabels, 'the PDB selects the pods');

  const redisSvc = find('Service', 'switchyard-redis');
  t.equal(
    config.redis,
    `redis://${redisSvc.metadata.name}:${redisSvc.spec.ports[0].port}`,
    'redis is the example Redis Service',
  );
  t.has(
    find('Deployment', 'switchyard-redis').spec.template.metadata.labels,
    redisSvc.spec.selector,
    'the Redis Service selects Redis',
  );
});

t.test(
  'the Prometheus scrape job is the one config/alerts.yml selects, on the admin port of the Switchyard pods',
  async (t) => {
    // The job name the alerts select, read from the rules (SwitchyardDown: up{job="..."} == 0).
    const alerts = parse(readFileSync(fileURLToPath(new URL('../../config/alerts.yml', import.meta.url)), 'utf8')) as {
      groups: { rules: { alert?: string; expr: string }[] }[];
    };
    const rules = alerts.groups.flatMap((g) => g.rules);
    const jobs = new Set(rules.flatMap((r) => [...r.expr.matchAll(/\bup\{job="([^"]+)"\}/g)].map((m) => m[1]!)));
    t.same([...jobs].length, 1, `the rules select one job: ${[...jobs].join(', ')}`);
    const job = [...jobs][0]!;
    t.ok(
      rules.some((r) => r.alert === 'SwitchyardTargetAbsent' && r.expr.includes(`job="${job}"`)),
      'SwitchyardTargetAbsent watches that job',
    );

    const cm = find('ConfigMap', 'switchyard-prometheus');
    t.ok(cm, 'a ConfigMap with the scrape config ships');
    const prom = parse(cm.data['prometheus.yml']) as { scrape_configs: any[] };
    t.equal(prom.scrape_configs.length, 1, 'one scrape job');
    const sc = prom.scrape_configs[0];
    t.equal(sc.job_name, job, `its job_name is ${job}, what the alerts select`);
    t.equal(sc.metrics_path, '/metrics');
    t.same(
      sc.kubernetes_sd_configs.map((c: any) => c.role),
      ['pod'],
      'pods are discovered',
    );

    const dep = find('Deployment', 'switchyard');
    const config = shippedConfig();
    const keep = (label: string): RegExp => {
      const r = sc.relabel_configs.find(
        (c: any) => c.action === 'keep' && c.source_labels.length === 1 && c.source_labels[0] === label,
      );
      t.ok(r, `a keep rule on ${label}`);
      // Prometheus anchors relabel regexes at both ends.
      return new RegExp(`^(?:${r?.regex ?? '(?!)'})$`);
    };
    const podLabel = keep('__meta_kubernetes_pod_label_app_kubernetes_io_name');
    t.ok(podLabel.test(dep.spec.template.metadata.labels['app.kubernetes.io/name']), 'it keeps the Deployment pods');
    t.notOk(
      podLabel.test(find('Deployment', 'switchyard-redis').spec.template.metadata.labels['app.kubernetes.io/name']),
      'and not the Redis pod',
    );
    const portName = keep('__meta_kubernetes_pod_container_port_name');
    const ports = dep.spec.template.spec.containers[0].ports as { name: string; containerPort: number }[];
    t.same(
      ports.filter((p) => portName.test(p.name)).map((p) => p.containerPort),
      [config.admin.port],
      'of each pod only the admin port (admin.port)',
    );
  },
);

t.test('admin writes: the token comes from the Secret, not from the ConfigMap', async (t) => {
  const secret = find('Secret', 'switchyard-admin');
  t.ok(secret, 'a Secret switchyard-admin ships');
  const raw = parse(find('ConfigMap', 'switchyard-config').data['config.yaml']) as { admin: { token: unknown } };
  t.equal(raw.admin.token, '${SWITCHYARD_ADMIN_TOKEN}', 'the config names the variable, never the token');
  const c = find('Deployment', 'switchyard').spec.template.spec.containers[0];
  const env = (c.env ?? []).find((e: any) => e.name === 'SWITCHYARD_ADMIN_TOKEN');
  t.same(
    env?.valueFrom?.secretKeyRef,
    { name: secret.metadata.name, key: 'token' },
    'the container gets SWITCHYARD_ADMIN_TOKEN from the Secret',
  );
  t.ok(Object.hasOwn(secret.stringData, 'token'), 'the Secret holds that key');
  t.equal(shippedConfig().admin.token, secret.stringData.token, 'the config validates with it as admin.token');
});

t.test('the NetworkPolicy lets only Prometheus reach the admin port, and clients the JSON-RPC ports', async (t) => {
  const np = find('NetworkPolicy', 'switchyard');
  t.ok(np, 'a NetworkPolicy ships');
  const dep = find('Deployment', 'switchyard');
  const labels = dep.spec.template.metadata.labels;
  t.has(labels, np.spec.podSelector.matchLabels, 'it selects the Switchyard pods');
  t.ok(np.spec.policyTypes.includes('Ingress'), 'it restricts ingress');
  const ports = dep.spec.template.spec.containers[0].ports as { name: string; containerPort: number }[];
  const config = shippedConfig();
  /** The ingress rules that admit a connection to the container port `name` (a rule without ports admits all). */
  const rulesFor = (name: string): any[] => {
    const number = ports.find((p) => p.name === name)!.containerPort;
    return np.spec.ingress.filter(
      (r: any) => r.ports === undefined || r.ports.some((p: any) => p.port === name || p.port === number),
    );
  };
  for (const name of ['rpc', 'ws'])
    t.ok(
      rulesFor(name).some((r) => r.from === undefined || r.from.length === 0),
      `${name} is open to every client`,
    );
  t.equal(ports.find((p) => p.name === 'admin')!.containerPort, config.admin.port, 'the admin port is admin.port');
  const admin = rulesFor('admin');
  t.ok(admin.length > 0, 'a rule admits the admin port');
  for (const r of admin) {
    t.ok(Array.isArray(r.from) && r.from.length > 0, 'never from everywhere');
    for (const peer of r.from ?? [])
      t.same(
        peer,
        { namespaceSelector: {}, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } } },
        'only from the Prometheus pods',
      );
  }
});
