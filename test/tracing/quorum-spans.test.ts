/**
 * A quorum read in the trace (SPEC 4.9, 13): each node asked is a CLIENT span of its own under the
 * call's span, naming its upstream, and each node received that span as its traceparent's parent;
 * the call's span counts every node asked as an attempt. A real OTLP/HTTP collector and real anvils.
 */
import t from 'tap';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { startCollector, startHeaderProxy } from './collector.js';

const CLIENT = 3;

t.test('every node of a quorum read is a CLIENT span of its own', async (t) => {
  const nodes = await Promise.all([startAnvil(), startAnvil(), startAnvil()]);
  t.teardown(() => Promise.all(nodes.map((n) => n.stop())));
  const proxies = await Promise.all(nodes.map((n) => startHeaderProxy(t, n.url)));
  const collector = await startCollector(t);
  const sy = await startSwitchyard(t, {
    upstreams: proxies.map((p, i) => ({ name: `node-${i}`, url: p.url })),
    tracing: { enabled: true, endpoint: collector.url, sampleRate: 1 },
    routing: { quorum: [{ methods: ['eth_getBalance'], min: 2, of: 3 }] },
  });
  const r = await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [DEV_ADDRESS, 'latest'] });
  // Decided at the second answer; the third node's span is in the trace all the same.
  t.equal(r.headers['x-switchyard-quorum'], '2/3', 'agreed by two of the three nodes asked');
  const traceId = String(r.headers.traceparent).split('-')[1]!;
  const spans = await waitFor('the trace with the three node spans', () => {
    const got = collector.spans.filter((s) => s.traceId === traceId);
    return got.filter((s) => s.kind === CLIENT).length === 3 && got.some((s) => s.name === 'eth_getBalance')
      ? got
      : undefined;
  });
  const call = spans.find((s) => s.name === 'eth_getBalance')!;
  const clients = spans.filter((s) => s.kind === CLIENT);
  t.same(
    clients.map((s) => s.attributes['switchyard.upstream']).sort(),
    ['node-0', 'node-1', 'node-2'],
    'one CLIENT span per node asked, naming it',
  );
  t.ok(
    clients.every((s) => s.parentSpanId === call.spanId),
    'each under the call span',
  );
  t.equal(call.attributes['switchyard.attempts'], 3, 'the call counts three attempts');
  const seen = proxies.flatMap((p) => p.seen).filter((s) => s.methods.includes('eth_getBalance'));
  t.same(
    seen.map((s) => String(s.traceparent).split('-')[2]).sort(),
    clients.map((s) => s.spanId).sort(),
    "each node's traceparent names its own CLIENT span",
  );
});
