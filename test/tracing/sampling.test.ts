/**
 * Which traces are exported: with tracing.sampleRate 0, a fast successful request is not, while
 * one with an error, one slower than tracing.slowMs and one under a sampled client parent are,
 * whatever the sample; an unsampled parent is followed (not exported when fast and fine). The
 * answer's traceparent says which (flags 01 or 00), and so does the traceparent a node receives.
 * A WebSocket frame is a SERVER span of its own.
 */
import t from 'tap';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { post } from '../helpers/rpc.js';
import { validateConfig } from '../../src/config/load.js';
import { startSwitchyard, testConfig } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket } from '../helpers/ws.js';
import { startCollector, startHeaderProxy } from './collector.js';

const SERVER = 2;

const node = await startAnvil();
t.teardown(() => node.stop());
const proxy = await startHeaderProxy(t, node.url);
const collector = await startCollector(t);
const settings = {
  upstreams: [{ name: 'only', url: proxy.url }],
  tracing: { enabled: true, endpoint: `${collector.url}/v1/traces`, sampleRate: 0, slowMs: 300 },
};
const sy = await startSwitchyard(t, settings);

const balance = (id: number, who = DEV_ADDRESS): object => ({
  jsonrpc: '2.0',
  id,
  method: 'eth_getBalance',
  params: [who, 'latest'],
});

function parts(header: unknown): { traceId: string; spanId: string; flags: string } {
  const [, traceId = '', spanId = '', flags = ''] = String(header).split('-');
  return { traceId, spanId, flags };
}

const exported = (traceId: string): boolean => collector.spans.some((s) => s.traceId === traceId && s.kind === SERVER);

t.test('sampleRate 0: errors, slow requests and sampled parents are exported, the rest is not', async (t) => {
  const fast = parts((await post(sy.url, balance(1))).headers.traceparent);
  t.equal(fast.flags, '00', 'a fast, fine request: not sampled');
  const unsampledParent = `00-${'1'.repeat(32)}-${'2'.repeat(16)}-00`;
  const declined = parts(
    (await post(sy.url, balance(2, `0x${'2'.repeat(40)}`), { traceparent: unsampledParent })).headers.traceparent,
  );
  t.equal(declined.traceId, '1'.repeat(32), 'the client trace continues');
  t.equal(declined.flags, '00', 'an unsampled parent, fast and fine: not sampled');
  const atNode = proxy.seen.find((s) => s.traceparent?.includes('1'.repeat(32)));
  t.match(atNode?.traceparent, /-00$/, 'the node is told the trace is not sampled');

  const failed = parts(
    (await post(sy.url, { jsonrpc: '2.0', id: 3, method: 'nope_nothing', params: [] })).headers.traceparent,
  );
  t.equal(failed.flags, '01', 'an error: exported');
  const sampledParent = `00-${'3'.repeat(32)}-${'4'.repeat(16)}-01`;
  const followed = parts(
    (await post(sy.url, balance(4, `0x${'4'.repeat(40)}`), { traceparent: sampledParent })).headers.traceparent,
  );
  t.equal(followed.flags, '01', 'a sampled parent: exported');
  proxy.slow('eth_getBalance', 400);
  const slowAnswer = await post(sy.url, balance(5, `0x${'5'.repeat(40)}`));
  proxy.slow('eth_getBalance', 0);
  const slow = parts(slowAnswer.headers.traceparent);
  t.equal(slow.flags, '01', 'slower than slowMs: exported');

  await waitFor(
    'the kept traces',
    () => exported(failed.traceId) && exported(followed.traceId) && exported(slow.traceId),
  );
  // The fast ones were let go when they ended, before the kept ones were even sent.
  t.notOk(exported(fast.traceId), 'the fast one is not exported');
  t.notOk(exported(declined.traceId), 'the unsampled parent is not exported');
  const server = collector.spans.find((s) => s.traceId === followed.traceId && s.kind === SERVER)!;
  t.equal(server.parentSpanId, '4'.repeat(16), 'under the client span');
  // The failed request was not sampled: the tail rule exports its call's span too, with the outcome.
  const failedServer = collector.spans.find((s) => s.traceId === failed.traceId && s.kind === SERVER)!;
  const failedCall = collector.spans.find(
    (s) => s.traceId === failed.traceId && s.parentSpanId === failedServer.spanId,
  );
  t.equal(failedCall?.attributes['rpc.method_original'], 'nope_nothing', "the unsampled call's span is exported");
  t.equal(failedCall?.attributes['error.type'], 'METHOD_NOT_FOUND', 'with its outcome');
  t.equal(failedCall?.attributes['switchyard.attempts'], 0, 'and its attempts');
  t.equal(failedCall?.status, 2, 'as an error');
});

t.test('a WebSocket frame is a SERVER span of its own', async (t) => {
  const ws = await openSocket(t, sy.url.replace('http', 'ws'));
  const answer = await ws.ask(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ws_unknownThing', params: [] }));
  t.equal(answer.error?.code, -32601);
  const call = await waitFor('the frame trace', () =>
    collector.spans.find((s) => s.attributes['rpc.method_original'] === 'ws_unknownThing'),
  );
  const server = collector.spans.find((s) => s.spanId === call.parentSpanId);
  t.equal(server?.kind, SERVER);
  t.equal(server?.attributes['network.protocol.name'], 'websocket');
  t.equal(server?.parentSpanId, '', 'a trace of its own');
});

t.test('a reload applies sampleRate from the next request', async (t) => {
  await sy.app.reload(validateConfig(testConfig({ ...settings, tracing: { ...settings.tracing, sampleRate: 1 } })));
  const r = parts(
    (await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] })).headers.traceparent,
  );
  t.equal(r.flags, '01', 'a fast, fine request is now sampled');
  await waitFor('its trace', () => exported(r.traceId));
  await sy.app.reload(validateConfig(testConfig(settings)));
  const after = parts(
    (await post(sy.url, { jsonrpc: '2.0', id: 2, method: 'eth_chainId', params: [] })).headers.traceparent,
  );
  t.equal(after.flags, '00', 'and no longer after the next reload');
});
