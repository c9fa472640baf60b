/**
 * A collector that is down or hangs costs clients nothing: every call is answered as without
 * tracing, while the spans that cannot be sent are counted in
 * switchyard_tracing_spans_dropped_total (export_failed when the collector refuses or does not
 * answer within tracing.exportTimeoutMs, queue_full past tracing.maxQueueSize).
 */
import t, { type Test } from 'tap';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { freePort } from '../helpers/ports.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { startHangingCollector } from './collector.js';

const node = await startAnvil();
t.teardown(() => node.stop());

async function dropped(adminUrl: string, reason: string): Promise<number> {
  const text = (await get(`${adminUrl}/metrics`)).text;
  return metricSamples(text, 'switchyard_tracing_spans_dropped_total', { reason })[0] ?? 0;
}

/** Twenty requests of two calls each, every one answered with a result. */
async function clientsServed(t: Test, url: string): Promise<void> {
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      post(url, [
        { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [`0x${String(i % 10).repeat(40)}`, 'latest'] },
        { jsonrpc: '2.0', id: 2, method: 'eth_getTransactionCount', params: [DEV_ADDRESS, 'latest'] },
      ]),
    ),
  );
  t.ok(
    answers.every((a) => a.status === 200 && a.json().every((r: { result?: string }) => typeof r.result === 'string')),
    'every call answered with a result',
  );
}

t.test('a collector that is down: calls answered, spans counted as dropped', async (t) => {
  const port = await freePort();
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'only', url: node.url }],
    tracing: { enabled: true, endpoint: `http://127.0.0.1:${port}`, sampleRate: 1, exportTimeoutMs: 500 },
  });
  await clientsServed(t, sy.url);
  t.ok(await waitFor('export failures counted', async () => (await dropped(sy.adminUrl, 'export_failed')) > 0));
});

t.test('a collector that hangs: calls answered, a full queue and timed-out exports counted', async (t) => {
  const collector = await startHangingCollector(t);
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'only', url: node.url }],
    tracing: {
      enabled: true,
      endpoint: collector.url,
      sampleRate: 1,
      maxQueueSize: 8,
      maxExportBatchSize: 4,
      exportTimeoutMs: 1_000,
    },
  });
  await clientsServed(t, sy.url);
  t.ok(await waitFor('a full queue counted', async () => (await dropped(sy.adminUrl, 'queue_full')) > 0));
  t.ok(await waitFor('timed-out exports counted', async () => (await dropped(sy.adminUrl, 'export_failed')) > 0));
  t.ok(collector.received() > 0, 'the collector was sent spans');
  await clientsServed(t, sy.url);
});
