/**
 * A node that takes no batches (a proxy in front of a real anvil answers every batch with one
 * error object): the calls of an exchange then go one by one, and each still carries a
 * traceparent whose parent is the exchange's CLIENT span, so the node's own traces join (SPEC 13).
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { startCollector, startHeaderProxy } from './collector.js';

const CLIENT = 3;

const node = await startAnvil();
t.teardown(() => node.stop());
const proxy = await startHeaderProxy(t, node.url);
const collector = await startCollector(t);
const sy = await startSwitchyard(t, {
  upstreams: [{ name: 'node-a', url: proxy.url }],
  tracing: { enabled: true, endpoint: collector.url, sampleRate: 1 },
});

t.test('calls sent one by one after a refused batch carry the exchange span as parent', async (t) => {
  proxy.refuseBatches();
  const batch = [1, 2, 3].map((n) => ({
    jsonrpc: '2.0',
    id: n,
    method: 'eth_getBalance',
    params: [`0x${String(n).repeat(40)}`, 'latest'],
  }));
  const from = proxy.seen.length;
  const r = await post(sy.url, batch);
  t.equal(r.status, 200);
  t.ok(
    r.json().every((a: object) => 'result' in a),
    'every call answered, one by one',
  );
  const traceId = String(r.headers.traceparent).split('-')[1]!;
  const exchange = await waitFor('the exchange span', () =>
    collector.spans.find((s) => s.traceId === traceId && s.kind === CLIENT && s.links.length === 3),
  );
  const seen = proxy.seen.slice(from).filter((s) => s.methods.includes('eth_getBalance'));
  t.equal(seen.filter((s) => s.methods.length === 3).length, 1, 'the batch was tried and refused');
  const alone = seen.filter((s) => s.methods.length === 1);
  t.equal(alone.length, 3, 'then each call alone');
  for (const s of alone)
    t.equal(s.traceparent, `00-${traceId}-${exchange.spanId}-01`, "each one's parent is the exchange's CLIENT span");
});
