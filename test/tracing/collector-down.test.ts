/**
 * A collector that is down or hangs costs clients nothing: every call is answered as without
 * tracing, while the spans that cannot be sent are counted in
 * switchyard_tracing_spans_dropped_total (export_failed when the collector refuses or does not
 * answer within tracing.exportTimeoutMs, queue_full past tracing.maxQueueSize), and an export
 * thread that fails loses only spans: counted as export_failed, and logged.
 */
import type { Worker } from 'node:worker_threads';
import t, { type Test } from 'tap';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { freePort } from '../helpers/ports.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { memoryLogger } from '../limits/fixtures/tools.js';
import { startCollector, startHangingCollector } from './collector.js';

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

t.test(
  'an export thread that fails: calls answered, its spans and later ones counted, the failure logged',
  async (t) => {
    const collector = await startCollector(t);
    const logs = memoryLogger('info');
    const sy = await startSwitchyard(
      t,
      {
        upstreams: [{ name: 'only', url: node.url }],
        tracing: { enabled: true, endpoint: collector.url, sampleRate: 1 },
      },
      { logger: logs.logger },
    );
    // A thread that throws cannot be made from outside: a span it cannot read is sent to it.
    const thread = (sy.app as unknown as { rooms: { tracing: { thread: Worker } } }).rooms.tracing.thread;
    const exited = new Promise((resolve) => thread.once('exit', resolve));
    thread.postMessage({ spans: [null] });
    await exited;
    t.ok(
      logs.lines().some((l) => l.msg === 'the tracing export thread failed: spans are dropped' && l.level === 'error'),
      'the failure logged at error',
    );
    const before = await dropped(sy.adminUrl, 'export_failed');
    await clientsServed(t, sy.url);
    // Twenty requests of a SERVER span and two call spans each, kept (sampleRate 1), none sent.
    t.ok(
      await waitFor(
        'the later spans counted',
        async () => (await dropped(sy.adminUrl, 'export_failed')) >= before + 60,
      ),
    );
    t.equal(collector.spans.length, 0, 'the collector was sent nothing');
  },
);
