/**
 * The tracing section: off by default, an endpoint required to turn it on, a bare collector
 * address completed with the traces path, secrets (endpoint, headers) masked in `check --print`,
 * and sampleRate/slowMs applied by a reload while the exporter settings wait for a restart.
 */
import t from 'tap';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import { maskedConfig } from '../../src/config/mask.js';
import { reloadedConfig } from '../../src/config/restart.js';
import { tracesUrl } from '../../src/tracing/provider.js';

const base = { upstreams: [{ name: 'a', url: 'http://127.0.0.1:8545' }] };

t.test('defaults and the endpoint rule', async (t) => {
  const c = validateConfig(base);
  // SPEC's defaults: a collector on this host, 1% of ordinary requests, the service named switchyard.
  t.match(c.tracing, {
    enabled: false,
    endpoint: 'http://127.0.0.1:4318/v1/traces',
    sampleRate: 0.01,
    slowMs: 1000,
    serviceName: 'switchyard',
    maxQueueSize: 2048,
  });
  t.throws(
    () => validateConfig({ ...base, tracing: { enabled: true, endpoint: null } }),
    ConfigError,
    'enabled needs an endpoint',
  );
  t.throws(
    () => validateConfig({ ...base, tracing: { enabled: true, endpoint: 'h', sampleRate: 2 } }),
    ConfigError,
    'a sample rate above 1 and a non-URL endpoint are refused',
  );
  t.equal(tracesUrl('http://collector:4318'), 'http://collector:4318/v1/traces');
  t.equal(tracesUrl('https://otlp.example/custom/traces'), 'https://otlp.example/custom/traces');
});

t.test('check --print masks the collector URL and headers', async (t) => {
  const c = validateConfig({
    ...base,
    tracing: {
      enabled: true,
      endpoint: 'https://user:s3cret@otlp.example/v1/traces?key=abc',
      headers: { authorization: 'Bearer tok3n' },
    },
  });
  const text = JSON.stringify(maskedConfig(c));
  for (const secret of ['s3cret', 'user', 'key=abc', 'tok3n']) t.notOk(text.includes(secret), `no ${secret}`);
  t.ok(text.includes('otlp.example'), 'the host stays visible');
});

t.test('a reload applies sampleRate and slowMs, and keeps the exporter settings', async (t) => {
  const running = validateConfig({ ...base, tracing: { enabled: true, endpoint: 'http://a:4318' } });
  const next = validateConfig({
    ...base,
    tracing: { enabled: true, endpoint: 'http://b:4318', sampleRate: 0.5, slowMs: 200, serviceName: 'other' },
  });
  const { config, kept } = reloadedConfig(running, next);
  t.same(kept, ['tracing.endpoint', 'tracing.serviceName']);
  t.match(config.tracing, { endpoint: 'http://a:4318', sampleRate: 0.5, slowMs: 200, serviceName: 'switchyard' });
});
