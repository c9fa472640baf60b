/**
 * An upstream answering another chain id (a plain anvil with --chain-id 1) next to a good one: it
 * is quarantined (/status "quarantined", switchyard_upstream_quarantined_total counted, a loud log
 * line), and no routed call ever reaches it, whatever the method; the good node answers them all.
 */
import t from 'tap';
import { startAnvil, DEV_ADDRESS } from '../helpers/anvil.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { get, post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

interface UpstreamStatus {
  name: string;
  state: string;
  routable: boolean;
}

t.test('an upstream on another chain id is quarantined and never used', async (t) => {
  const [good, wrong] = await Promise.all([startAnvil({ chainId: 186 }), startAnvil({ chainId: 1 })]);
  t.teardown(() => Promise.all([good.stop(), wrong.stop()]));
  // Listed first and with ten times the weight: if anything could route to it, it would.
  const sy = await startSwitchyard(t, {
    chainId: 186,
    upstreams: [
      { name: 'wrong-chain', url: wrong.url, weight: 10 },
      { name: 'good', url: good.url },
    ],
  });
  const status = async (): Promise<{ upstreams: UpstreamStatus[]; ready: boolean }> =>
    (await get(`${sy.adminUrl}/status`)).json();
  const wrongStatus = await waitFor('wrong-chain quarantined', async () =>
    (await status()).upstreams.find((u) => u.name === 'wrong-chain' && u.state === 'quarantined'),
  );
  t.equal(wrongStatus.routable, false, 'quarantined upstream is not routable');
  t.equal((await status()).upstreams.find((u) => u.name === 'good')!.state, 'healthy', 'the good one is healthy');

  let m = (await get(`${sy.adminUrl}/metrics`)).text;
  const q = /switchyard_upstream_quarantined_total\{upstream="wrong-chain"\} (\d+)/.exec(m);
  t.ok(q && Number(q[1]) > 0, `switchyard_upstream_quarantined_total{upstream="wrong-chain"} = ${q?.[1]}`);
  t.match(m, /switchyard_upstream_quarantined_total\{upstream="good"\} 0\n/, 'the good one is counted 0 times');
  t.match(m, /switchyard_upstream_healthy\{upstream="wrong-chain"\} 0/, 'healthy gauge 0');

  // A spread of methods, singles and a batch; distinct params so the cache cannot hide routing.
  const calls: { method: string; params: unknown[] }[] = [];
  for (let i = 0; i < 40; i++) {
    calls.push({ method: 'eth_getBalance', params: [`0x${(0xabc000 + i).toString(16).padStart(40, '0')}`, 'latest'] });
    calls.push({ method: 'web3_clientVersion', params: [] });
  }
  calls.push({ method: 'eth_getTransactionCount', params: [DEV_ADDRESS, 'latest'] });
  calls.push({ method: 'eth_getBlockByNumber', params: ['0x0', false] });
  calls.push({ method: 'eth_gasPrice', params: [] });
  calls.push({ method: 'eth_newBlockFilter', params: [] });
  const answers = await Promise.all(calls.map((c, i) => post(sy.url, { jsonrpc: '2.0', id: i, ...c })));
  const errors = answers.filter((a) => a.json().error !== undefined || a.json().id === undefined);
  t.same(errors.map((a) => a.text).slice(0, 3), [], `all ${calls.length} calls answered with a result`);
  const batch = await post(
    sy.url,
    calls.slice(0, 10).map((c, i) => ({ jsonrpc: '2.0', id: `b${i}`, ...c })),
  );
  t.same(
    (batch.json() as { id: string }[]).map((r) => r.id),
    calls.slice(0, 10).map((_, i) => `b${i}`),
    'a batch is answered too',
  );

  m = (await get(`${sy.adminUrl}/metrics`)).text;
  const toWrong = m.split('\n').filter((l) => l.startsWith('switchyard_upstream_calls_total{upstream="wrong-chain"'));
  t.same(toWrong, [], 'no routed call went to the wrong-chain upstream');
  const toGood = m
    .split('\n')
    .filter((l) => l.startsWith('switchyard_upstream_calls_total{upstream="good"'))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
  // 40 distinct balances at least; identical web3_clientVersion calls in flight at once share one.
  t.ok(toGood >= 40, `the good upstream took them (${toGood} upstream calls)`);

  // Still quarantined on later checks (it keeps answering chain id 1).
  t.equal((await status()).upstreams.find((u) => u.name === 'wrong-chain')!.state, 'quarantined', 'still quarantined');
  t.equal(
    (await get(`${sy.adminUrl}/ready?upstreams=1`)).status,
    200,
    'ready with upstreams: the good upstream serves',
  );
});

t.test("with only a wrong-chain upstream: not ready, calls get -32002, never the wrong chain's data", async (t) => {
  const wrong = await startAnvil({ chainId: 1 });
  t.teardown(() => wrong.stop());
  const sy = await startSwitchyard(
    t,
    { chainId: 186, upstreams: [{ name: 'wrong-chain', url: wrong.url }] },
    { waitReady: false },
  );
  await waitFor(
    'quarantined',
    async () =>
      ((await get(`${sy.adminUrl}/status`)).json() as { upstreams: UpstreamStatus[] }).upstreams[0]!.state ===
      'quarantined',
  );
  t.equal((await get(`${sy.adminUrl}/ready?upstreams=1`)).status, 503, '/ready?upstreams=1 is 503');
  t.equal(
    (await get(`${sy.adminUrl}/ready`)).status,
    200,
    '/ready stays 200: the replica serves, answering NO_UPSTREAM',
  );
  const r = (
    await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [DEV_ADDRESS, 'latest'] })
  ).json();
  t.equal(r.error?.code, -32002, `no upstream: ${JSON.stringify(r.error)}`);
  t.equal(
    (await post(sy.url, { jsonrpc: '2.0', id: 2, method: 'eth_chainId', params: [] })).json().result,
    '0xba',
    'eth_chainId is still the configured one',
  );
  const m = (await get(`${sy.adminUrl}/metrics`)).text;
  t.notMatch(m, /switchyard_upstream_calls_total\{upstream="wrong-chain"/, 'no routed call went to it');
});
