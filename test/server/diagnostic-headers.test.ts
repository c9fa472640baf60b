/**
 * The diagnostic response headers on JSON-RPC answers over HTTP, against a real anvil: which node
 * answered, whether the cache did (hit, miss, partial, none), how many calls were sent to nodes,
 * and Server-Timing; exposed to pages through CORS, with Timing-Allow-Origin for Resource Timing;
 * none of them with server.diagnosticHeaders false.
 */
import t from 'tap';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';

const node = await startAnvil();
t.teardown(() => node.stop());

const block0 = (id: number): object => ({ jsonrpc: '2.0', id, method: 'eth_getBlockByNumber', params: ['0x0', false] });
const balance = (id: number, who: string): object => ({
  jsonrpc: '2.0',
  id,
  method: 'eth_getBalance',
  params: [who, 'latest'],
});

t.test('miss, hit, partial and none, with the node, the attempts and Server-Timing', async (t) => {
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'anvil-a', url: node.url }] });
  const miss = await post(sy.url, block0(1), { origin: 'https://dapp.example' });
  t.equal(miss.headers['x-switchyard-cache'], 'miss');
  t.equal(miss.headers['x-switchyard-upstream'], 'anvil-a', 'the node by name');
  t.equal(miss.headers['x-switchyard-attempts'], '1');
  t.match(String(miss.headers['server-timing']), /^total;dur=\d+(\.\d)?, upstream;dur=\d+(\.\d)?$/);
  t.match(
    String(miss.headers['access-control-expose-headers']),
    /X-Switchyard-Upstream.*X-Switchyard-Cache.*X-Switchyard-Attempts.*Server-Timing/,
    'pages may read them',
  );
  t.equal(miss.headers['timing-allow-origin'], '*', "another origin's page sees Server-Timing in Resource Timing");

  const hit = await post(sy.url, block0(2));
  t.equal(hit.headers['x-switchyard-cache'], 'hit');
  t.equal(hit.headers['x-switchyard-attempts'], '0');
  t.notOk('x-switchyard-upstream' in hit.headers, 'no node answered');
  t.match(String(hit.headers['server-timing']), /^total;dur=[\d.]+$/, 'no upstream time');

  const partial = await post(sy.url, [
    block0(3),
    { jsonrpc: '2.0', id: 4, method: 'eth_getBlockByNumber', params: ['0x0', true] },
  ]);
  t.equal(partial.headers['x-switchyard-cache'], 'partial');

  const local = await post(sy.url, { jsonrpc: '2.0', id: 5, method: 'eth_chainId', params: [] });
  t.equal(local.headers['x-switchyard-cache'], 'none');
  t.equal(local.headers['x-switchyard-attempts'], '0');

  const uncached = await post(sy.url, balance(6, DEV_ADDRESS));
  t.ok(['miss', 'none'].includes(String(uncached.headers['x-switchyard-cache'])), 'a latest read');
  t.equal(uncached.headers['x-switchyard-upstream'], 'anvil-a');
});

t.test('server.diagnosticHeaders false: none of them', async (t) => {
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'anvil-a', url: node.url }],
    server: { diagnosticHeaders: false },
  });
  const r = await post(sy.url, balance(1, `0x${'7'.repeat(40)}`));
  t.equal(r.status, 200);
  for (const h of [
    'x-switchyard-upstream',
    'x-switchyard-cache',
    'x-switchyard-attempts',
    'server-timing',
    'timing-allow-origin',
  ])
    t.notOk(h in r.headers, `no ${h}`);
});
