/**
 * deploy/kubernetes agrees with the config schema: the config the ConfigMap is made of is valid, the container
 * ports are the configured ports, the probes hit /health and /ready on the admin port, the
 * termination period leaves room for shutdownDelayMs + shutdownGraceMs, selectors match, the
 * kustomization lists every manifest, and the shipped Prometheus scrape job has the job name the
 * alert rules select and keeps the Switchyard pods' admin port. Admin writes (SPEC 9): admin.token
 * comes from the Secret through the container's environment, and the NetworkPolicy selects the pods
 * and lets only Prometheus reach the admin port (the kubelet's probes come from the node, which a
 * NetworkPolicy does not block: networkpolicy.yaml says so).
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { parseConfigText } from '../../src/config/load.js';

const DIR = fileURLToPath(new URL('../../deploy/kubernetes/', import.meta.url));
/** The Switchyard config itself (kustomization.yaml's configMapGenerator makes the ConfigMap of it). */
const CONFIG_FILE = 'config.yaml';
const docs: any[] = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && f !== CONFIG_FILE)
  .flatMap((f) => parseAllDocuments(readFileSync(join(DIR, f), 'utf8')).map((d) => d.toJS()));
const find = (kind: string, name: string): any => docs.find((d) => d.kind === kind && d.metadata.name === name);
/** The ConfigMap's config, with the environment the Deployment gives the container (the Secret's token). */
const shippedConfig = (): ReturnType<typeof parseConfigText> =>
  parseConfigText(readFileSync(join(DIR, CONFIG_FILE), 'utf8'), {
    SWITCHYARD_ADMIN_TOKEN: find('Secret', 'switchyard-admin').stringData.token,
  });

/** The optional examples, listed commented out in kustomization.yaml. */
const EXAMPLES = ['hpa.yaml', 'podmonitor.yaml'];

t.test('the kustomization lists every manifest, and the config through a hashed ConfigMap', async (t) => {
  const text = readFileSync(join(DIR, 'kustomization.yaml'), 'utf8');
  const k = parse(text) as { resources: string[]; configMapGenerator: { name: string; files: string[] }[] };
  const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && f !== CONFIG_FILE);
  t.same([...k.resources, ...EXAMPLES].sort(), files.sort());
  for (const e of EXAMPLES)
    t.match(text, new RegExp(`^\\s*# - ${e.replace('.', '\\.')}$`, 'm'), `${e} listed commented out`);
  t.same(k.configMapGenerator, [
    {
      name: 'switchyard-config',
      files: [CONFIG_FILE],
      options: { labels: { 'app.kubernetes.io/name': 'switchyard' } },
    },
  ]);
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
  // One stall of a second (a GC pause, a throttled CPU) must not take a pod out of the Service.
  t.ok(c.readinessProbe.failureThreshold >= 3, 'readiness: three failures before the pod is dropped');
  t.ok(c.readinessProbe.timeoutSeconds >= 2, 'readiness: an answer may take 2 s');
  t.ok(c.livenessProbe.timeoutSeconds >= 2 && c.livenessProbe.failureThreshold >= 3, 'liveness as patient');
  for (const name of ['switchyard', 'switchyard-redis'])
    t.equal(
      find('Deployment', name).spec.template.spec.automountServiceAccountToken,
      false,
      `${name}: no service account token mounted (neither calls the Kubernetes API)`,
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
    // The job name the alerts select, read from the one rule that names it (the recording rule
    // switchyard:up: up{job="..."}), which every alert reads the targets through.
    const alerts = parse(readFileSync(fileURLToPath(new URL('../../config/alerts.yml', import.meta.url)), 'utf8')) as {
      groups: { rules: { alert?: string; record?: string; expr: string }[] }[];
    };
    const rules = alerts.groups.flatMap((g) => g.rules);
    const jobs = new Set(rules.flatMap((r) => [...r.expr.matchAll(/\bjob="([^"]+)"/g)].map((m) => m[1]!)));
    t.same([...jobs].length, 1, `the rules select one job: ${[...jobs].join(', ')}`);
    const job = [...jobs][0]!;
    t.equal(
      rules.find((r) => r.record === 'switchyard:up')?.expr.trim(),
      `up{job="${job}"}`,
      'switchyard:up is up of that job',
    );
    t.ok(
      rules.some((r) => r.alert === 'SwitchyardTargetAbsent' && r.expr.includes('absent(switchyard:up)')),
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
  const raw = parse(readFileSync(join(DIR, CONFIG_FILE), 'utf8')) as { admin: { token: unknown } };
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

/** Every pod template shipped: the Deployments' (PodMonitor, HPA and the rest carry none). */
const podSpecs = (): { name: string; spec: any }[] =>
  docs.filter((d) => d.spec?.template?.spec).map((d) => ({ name: d.metadata.name, spec: d.spec.template.spec }));

// The rules of Pod Security Standards "restricted" (kubernetes.io/docs/concepts/security/pod-security-standards),
// as the admission controller checks them: a field at the pod level counts for every container
// unless a container overrides it.
t.test('every pod passes Pod Security "restricted"', async (t) => {
  const pods = podSpecs();
  t.same(pods.map((p) => p.name).sort(), ['switchyard', 'switchyard-redis']);
  for (const { name, spec } of pods) {
    const pod = spec.securityContext ?? {};
    t.notOk(spec.hostNetwork || spec.hostPID || spec.hostIPC, `${name}: no host namespaces`);
    for (const v of spec.volumes ?? [])
      t.ok(
        [
          'configMap',
          'secret',
          'emptyDir',
          'projected',
          'downwardAPI',
          'persistentVolumeClaim',
          'csi',
          'ephemeral',
        ].some((k) => k in v),
        `${name}: volume ${v.name} is of an allowed type`,
      );
    t.not(pod.runAsUser, 0, `${name}: pod runAsUser is not 0`);
    for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
      const sc = c.securityContext ?? {};
      const where = `${name}/${c.name}`;
      t.equal(sc.privileged ?? false, false, `${where}: not privileged`);
      t.equal(sc.allowPrivilegeEscalation, false, `${where}: allowPrivilegeEscalation false`);
      t.equal(sc.runAsNonRoot ?? pod.runAsNonRoot, true, `${where}: runAsNonRoot`);
      t.not(sc.runAsUser ?? pod.runAsUser, 0, `${where}: runAsUser is not 0`);
      t.same(sc.capabilities?.drop, ['ALL'], `${where}: capabilities drop ALL`);
      t.ok(
        (sc.capabilities?.add ?? []).every((a: string) => a === 'NET_BIND_SERVICE'),
        `${where}: adds no capability but NET_BIND_SERVICE`,
      );
      const seccomp = (sc.seccompProfile ?? pod.seccompProfile)?.type;
      t.ok(seccomp === 'RuntimeDefault' || seccomp === 'Localhost', `${where}: seccompProfile ${seccomp}`);
      t.notOk(
        (c.ports ?? []).some((p: any) => p.hostPort),
        `${where}: no hostPort`,
      );
    }
  }
});

t.test('replicas spread over nodes; PodMonitor and HPA examples select the Deployment', async (t) => {
  const dep = find('Deployment', 'switchyard');
  const labels = dep.spec.template.metadata.labels;
  const spread = dep.spec.template.spec.topologySpreadConstraints ?? [];
  const byNode = spread.find((c: any) => c.topologyKey === 'kubernetes.io/hostname');
  t.ok(byNode, 'a spread constraint over kubernetes.io/hostname');
  t.equal(byNode?.maxSkew, 1);
  t.equal(byNode?.whenUnsatisfiable, 'DoNotSchedule', 'two replicas never share a node while another is free');
  t.has(labels, byNode?.labelSelector.matchLabels, 'it counts the Switchyard pods');

  const pm = find('PodMonitor', 'switchyard');
  t.has(labels, pm.spec.selector.matchLabels, 'the PodMonitor selects the pods');
  t.equal(pm.spec.podMetricsEndpoints[0].port, 'admin', 'on the admin port');
  t.equal(labels[pm.spec.jobLabel], 'switchyard', 'its job is "switchyard", what the alerts select');

  const hpa = find('HorizontalPodAutoscaler', 'switchyard');
  t.same(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'switchyard' });
  t.equal(hpa.spec.metrics[0].resource.name, 'cpu', 'scales on CPU');
  t.ok(dep.spec.template.spec.containers[0].resources.requests.cpu, 'a CPU request for the utilization to be of');
  t.ok(hpa.spec.minReplicas >= 2, 'never below two replicas');
});

const KUBECTL = '/usr/bin/kubectl';
t.test('a config edit renames the ConfigMap the pods mount, so `kubectl apply -k` rolls them', async (t) => {
  if (!existsSync(KUBECTL)) {
    t.comment(`${KUBECTL} not found: skipped (kubectl kustomize builds offline)`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-kustomize-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(DIR, dir, { recursive: true });
  const mounted = (): { configMaps: string[]; mount: string } => {
    const built = parseAllDocuments(execFileSync(KUBECTL, ['kustomize', dir], { encoding: 'utf8' })).map((d) =>
      d.toJS(),
    );
    const dep = built.find((d: any) => d.kind === 'Deployment' && d.metadata.name === 'switchyard');
    return {
      configMaps: built.filter((d: any) => d.kind === 'ConfigMap').map((d: any) => d.metadata.name),
      mount: dep.spec.template.spec.volumes.find((v: any) => v.name === 'config').configMap.name,
    };
  };
  const before = mounted();
  t.match(before.mount, /^switchyard-config-[a-z0-9]+$/, 'the pods mount a hash-suffixed ConfigMap');
  t.ok(before.configMaps.includes(before.mount), 'which the build contains');
  const file = join(dir, CONFIG_FILE);
  writeFileSync(file, readFileSync(file, 'utf8').replace('level: info', 'level: debug'));
  const after = mounted();
  t.not(after.mount, before.mount, 'an edited config gives a new name in the pod template');
  t.ok(after.configMaps.includes(after.mount));
});
