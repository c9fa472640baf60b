/**
 * Tracing follows OpenTelemetry's environment (SPEC 8): OTEL_EXPORTER_OTLP_ENDPOINT (with
 * /v1/traces appended), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as it is), OTEL_EXPORTER_OTLP_HEADERS
 * (percent-decoded), OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES fill what the file leaves out,
 * and the file wins where it writes a value; OTEL_TRACES_EXPORTER=otlp turns tracing on when the
 * file does not say, OTEL_SDK_DISABLED=true turns it off. First the rules on the configuration,
 * then the built process with a real OTLP/HTTP collector: what arrives, and no header value in
 * its output.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import { maskedConfig } from '../../src/config/mask.js';
import { startAnvil } from '../helpers/anvil.js';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';
import { startCollector } from './collector.js';

const base = { upstreams: [{ name: 'a', url: 'http://127.0.0.1:8545' }] };
const ON = { OTEL_TRACES_EXPORTER: 'otlp' };

t.test('what the environment fills, and where the file wins', async (t) => {
  t.equal(validateConfig(base, {}).tracing.enabled, false, 'off by default');
  const endpointOnly = validateConfig(base, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).tracing;
  t.equal(endpointOnly.enabled, false, 'an endpoint alone does not turn tracing on');
  t.equal(endpointOnly.endpoint, 'http://127.0.0.1:4318/v1/traces', 'and fills nothing while off');
  t.equal(validateConfig(base, { OTEL_TRACES_EXPORTER: 'none' }).tracing.enabled, false);
  t.equal(validateConfig(base, { OTEL_TRACES_EXPORTER: 'console, otlp' }).tracing.enabled, true, 'otlp listed: on');
  t.equal(
    validateConfig({ ...base, tracing: { enabled: false } }, ON).tracing.enabled,
    false,
    "the file's enabled: false wins",
  );
  t.equal(
    validateConfig({ ...base, tracing: { enabled: true } }, { OTEL_SDK_DISABLED: 'TRUE' }).tracing.enabled,
    false,
    'OTEL_SDK_DISABLED=true turns it off whatever the file says',
  );
  t.equal(
    validateConfig({ ...base, tracing: { enabled: true } }, { OTEL_SDK_DISABLED: 'false' }).tracing.enabled,
    true,
  );

  const c = validateConfig(base, {
    ...ON,
    OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example:4318/otlp/',
    OTEL_EXPORTER_OTLP_HEADERS: ' Authorization = Bearer%20env%2Ctoken , x-tenant=acme,',
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=traces-tenant',
    OTEL_EXPORTER_OTLP_TIMEOUT: '2500',
    OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs,deployment.environment.name=staging,team=rpc%2Fedge',
  }).tracing;
  t.equal(c.enabled, true);
  t.equal(c.endpoint, 'https://collector.example:4318/otlp/v1/traces', 'v1/traces appended to the base path');
  t.same(c.headers, { Authorization: 'Bearer env,token', 'x-tenant': 'traces-tenant' }, 'decoded; traces headers over');
  t.equal(c.exportTimeoutMs, 2500);
  t.equal(c.serviceName, 'from-attrs', 'service.name from the resource attributes when OTEL_SERVICE_NAME is unset');
  t.same(c.resourceAttributes, { 'deployment.environment.name': 'staging', team: 'rpc/edge' });

  t.equal(
    validateConfig(base, {
      ...ON,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://generic:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/custom/path',
    }).tracing.endpoint,
    'http://traces:4318/custom/path',
    'the traces endpoint is used as it is, and wins over the generic one',
  );
  t.equal(
    validateConfig(base, { ...ON, OTEL_SERVICE_NAME: 'named', OTEL_RESOURCE_ATTRIBUTES: 'service.name=other' }).tracing
      .serviceName,
    'named',
    'OTEL_SERVICE_NAME wins over service.name in the attributes',
  );

  const fileWins = validateConfig(
    {
      ...base,
      tracing: {
        endpoint: 'http://file:4318',
        headers: { 'X-Tenant': 'file-tenant' },
        serviceName: 'file-name',
        exportTimeoutMs: 7000,
        resourceAttributes: { team: 'file-team' },
      },
    },
    {
      ...ON,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=env-tenant,authorization=Bearer%20t',
      OTEL_EXPORTER_OTLP_TIMEOUT: '100',
      OTEL_SERVICE_NAME: 'env-name',
      OTEL_RESOURCE_ATTRIBUTES: 'team=env-team,region=eu',
    },
  ).tracing;
  t.equal(fileWins.endpoint, 'http://file:4318');
  t.same(fileWins.headers, { authorization: 'Bearer t', 'X-Tenant': 'file-tenant' }, 'per header name, without case');
  t.equal(fileWins.serviceName, 'file-name');
  t.equal(fileWins.exportTimeoutMs, 7000);
  t.same(fileWins.resourceAttributes, { team: 'file-team', region: 'eu' }, 'per attribute');
  t.throws(
    () => validateConfig({ ...base, tracing: { endpoint: null } }, { ...ON, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://e' }),
    ConfigError,
    "the file's null endpoint is a value: it wins, and tracing on without one is refused",
  );

  const masked = JSON.stringify(
    maskedConfig(validateConfig(base, { ...ON, OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20s3cret' })),
  );
  t.notOk(masked.includes('s3cret'), 'check --print masks headers from the environment');
});

t.test('a malformed variable is refused, naming it and never quoting its value', async (t) => {
  const cases: Record<string, string>[] = [
    { OTEL_EXPORTER_OTLP_HEADERS: 'authorization' },
    { OTEL_EXPORTER_OTLP_HEADERS: 'x=%zz-s3cret' },
    { OTEL_EXPORTER_OTLP_HEADERS: 'bad name=s3cret' },
    { OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x=line%0Abreak-s3cret' },
    { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector-s3cret:4318' },
    { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://s3cret@host' },
    { OTEL_RESOURCE_ATTRIBUTES: 'team=%s3cret' },
    { OTEL_EXPORTER_OTLP_TIMEOUT: 'soon' },
  ];
  for (const env of cases) {
    const name = Object.keys(env)[0]!;
    try {
      validateConfig(base, { ...ON, ...env });
      t.fail(`${name} refused`);
    } catch (err) {
      t.type(err, ConfigError);
      const text = (err as Error).message;
      t.match(text, new RegExp(`^${name}: `), `${name} named`);
      t.notOk(text.includes('s3cret'), `${name}'s value not quoted`);
    }
  }
  t.doesNotThrow(() => validateConfig(base, { OTEL_EXPORTER_OTLP_HEADERS: 'junk' }), 'not read while tracing is off');
});

const anvil = await startAnvil();
t.teardown(() => anvil.stop());

const ENV_TOKEN = 'env-token-9f3a';

/** The built process with `yaml`'s tracing section and `env`; answers its URL once ready. */
async function run(t: Test, tracing: string, env: NodeJS.ProcessEnv): Promise<{ url: string; output: () => string }> {
  const file = join(t.testdir(), 'config.yaml');
  writeFileSync(
    file,
    `
server: { host: 127.0.0.1, port: 0, wsPort: null }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [ { name: solo, url: "${anvil.url}", discover: false } ]
routing: { headPollMs: 100 }
rateLimit: { perIp: null }
uptime: { store: null }
log: { level: debug }
tracing: { sampleRate: 1${tracing} }
`,
  );
  const cli = runCli(t, ['--config', file], env);
  const ports = await waitFor('listening line', () => listeningPorts(cli.stdout()));
  const admin = `http://127.0.0.1:${ports.admin}`;
  await waitFor('ready', async () => (await request(`${admin}/ready?upstreams=1`)).statusCode === 200);
  return { url: `http://127.0.0.1:${ports.http}`, output: () => cli.stdout() + cli.stderr() };
}

const ENV = (collectorUrl: string): NodeJS.ProcessEnv => ({
  OTEL_TRACES_EXPORTER: 'otlp',
  OTEL_EXPORTER_OTLP_ENDPOINT: `${collectorUrl}/otlp`,
  OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${ENV_TOKEN},x-tenant=env-tenant`,
  OTEL_SERVICE_NAME: 'env-service',
  OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging,team=rpc%2Fedge',
});

t.test('the built process exports where the environment says, with its headers and resource', async (t) => {
  const collector = await startCollector(t);
  const sy = await run(t, '', ENV(collector.url));
  const r = await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] });
  t.equal(r.status, 200);
  const span = await waitFor('a span at the collector', () => collector.spans.find((s) => s.kind === 2));
  t.equal(collector.posts[0]!.path, '/otlp/v1/traces', 'the generic endpoint with /v1/traces appended');
  t.equal(collector.posts[0]!.headers.authorization, `Bearer ${ENV_TOKEN}`, 'the header, percent-decoded');
  t.equal(collector.posts[0]!.headers['x-tenant'], 'env-tenant');
  t.match(span.resource, {
    'service.name': 'env-service',
    'deployment.environment.name': 'staging',
    team: 'rpc/edge',
    'service.version': String,
  });
  t.match(span.resource['service.instance.id'], /^[0-9a-f-]{36}$/);
  t.notOk(sy.output().includes(ENV_TOKEN), 'the header value is in no line the process wrote');
});

t.test('the file wins where it writes a value', async (t) => {
  const fromEnv = await startCollector(t);
  const fromFile = await startCollector(t);
  const sy = await run(
    t,
    `, enabled: true, endpoint: "${fromFile.url}", headers: { X-Tenant: file-tenant }, serviceName: file-service, resourceAttributes: { team: file-team }`,
    ENV(fromEnv.url),
  );
  await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] });
  const span = await waitFor('a span at the file collector', () => fromFile.spans.find((s) => s.kind === 2));
  t.equal(fromFile.posts[0]!.path, '/v1/traces');
  t.equal(fromFile.posts[0]!.headers['x-tenant'], 'file-tenant', "the file's header alone, its name's case aside");
  t.equal(fromFile.posts[0]!.headers.authorization, `Bearer ${ENV_TOKEN}`, "the environment's other header");
  t.match(span.resource, {
    'service.name': 'file-service',
    team: 'file-team',
    'deployment.environment.name': 'staging',
  });
  t.equal(fromEnv.posts.length, 0, "nothing went to the environment's collector");
  t.notOk(sy.output().includes(ENV_TOKEN));
});
