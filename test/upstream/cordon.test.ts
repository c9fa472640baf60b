/**
 * Cordons (SPEC 4.8) on one Switchyard in front of a replicated three-node anvil devnet: a
 * cordoned node gets no new calls (counted per node in switchyard_upstream_calls_total), a
 * client's sticky node moves away from it, it shows as cordoned in /upstreams, /status and the
 * gauge; uncordoned it takes calls again. Bad input: an unknown name is 404 with a JSON error, a
 * reason too long is 400, a write without a JSON content type 415. With every node cordoned a call
 * gets -32002 `all cordoned`.
 */
import t from 'tap';
import { DEV_ADDRESS } from '../helpers/anvil.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { call, get, post } from '../helpers/rpc.js';
import { startStack } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

interface UpstreamLine {
  name: string;
  state: string;
  probeState: string;
  cordon: { reason: string | null; since: string } | null;
}

t.test('a cordoned node gets no new calls until uncordoned', async (t) => {
  const { sy, devnet } = await startStack(t, { nodes: 3 });
  const names = devnet.nodes().map((n) => n.name);
  const admin = (path: string, body?: object): ReturnType<typeof post> => post(`${sy.adminUrl}${path}`, body ?? '');
  const metrics = async (): Promise<string> => (await get(`${sy.adminUrl}/metrics`)).text;
  const callsTo = async (name: string): Promise<number> =>
    metricSamples(await metrics(), 'switchyard_upstream_calls_total', { upstream: name }).reduce((a, b) => a + b, 0);
  const counts = async (): Promise<number[]> => Promise.all(names.map(callsTo));
  // Each read asks for another address: none is answered from the cache or joins another in flight.
  let nextAddress = 1;
  const failed: string[] = [];
  const reads = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const address = `0x${(nextAddress++).toString(16).padStart(40, '0')}`;
      const r = await call(sy.url, 'eth_getBalance', [address, 'latest']);
      if (typeof r.result !== 'string') failed.push(JSON.stringify(r).slice(0, 200));
    }
  };
  const upstreams = async (): Promise<UpstreamLine[]> => (await get(`${sy.adminUrl}/upstreams`)).json().upstreams;
  await waitFor('every node healthy', async () => (await upstreams()).every((u) => u.state === 'healthy'));

  const target = names[1]!;
  const res = await admin(`/upstreams/${target}/cordon`, { reason: 'geth upgrade' });
  t.equal(res.status, 200, 'cordon answered 200');
  t.match(
    res.json(),
    { name: target, cordoned: true, cordon: { reason: 'geth upgrade', since: String } },
    'with the cordon',
  );

  const listed = await upstreams();
  t.same(
    listed.map((u) => u.state),
    ['healthy', 'cordoned', 'healthy'],
    'GET /upstreams: the cordoned node reads cordoned',
  );
  t.equal(listed[1]!.cordon?.reason, 'geth upgrade', 'with its reason');
  t.equal(listed[1]!.probeState, 'healthy', 'and still probed healthy');
  const status = (await get(`${sy.adminUrl}/status`)).json();
  t.match(status.upstreams[1], {
    name: target,
    state: 'cordoned',
    routable: false,
    cordon: { reason: 'geth upgrade' },
  });
  const text = await metrics();
  t.same(
    names.map((n) => metricSamples(text, 'switchyard_upstream_cordoned', { upstream: n })[0]),
    [0, 1, 0],
    'switchyard_upstream_cordoned is 1 on the cordoned node only',
  );

  const before = await counts();
  await reads(60);
  const after = await counts();
  t.equal(after[1], before[1], `the cordoned node got no call (${after[1]! - before[1]!})`);
  const others = after[0]! - before[0]! + (after[2]! - before[2]!);
  t.ok(others >= 60, `the other two took the 60 reads: ${after[0]! - before[0]!} and ${after[2]! - before[2]!}`);

  // Pending state is sticky to one node per client: cordoning that node moves the client.
  await admin(`/upstreams/${target}/uncordon`);
  const pending = (): Promise<unknown> => call(sy.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'pending']);
  const s0 = await counts();
  for (let i = 0; i < 5; i++) await pending();
  const s1 = await counts();
  const sticky = s1.findIndex((c, i) => c - s0[i]! === 5);
  t.ok(sticky >= 0, `the client's pending reads all went to one node (${names[sticky]})`);
  t.equal((await admin(`/upstreams/${names[sticky]}/cordon`)).status, 200, 'its sticky node cordoned (no body)');
  for (let i = 0; i < 5; i++) await pending();
  const s2 = await counts();
  t.equal(s2[sticky], s1[sticky], 'the sticky node gets none of its pending reads any more');
  t.equal(s2.reduce((a, b) => a + b, 0) - s1.reduce((a, b) => a + b, 0), 5, 'they went to another node');
  await admin(`/upstreams/${names[sticky]}/uncordon`);

  // Uncordoned: it takes calls again.
  await admin(`/upstreams/${target}/cordon`);
  const un = await admin(`/upstreams/${target}/uncordon`);
  t.equal(un.status, 200, 'uncordon answered 200');
  t.match(un.json(), { name: target, cordoned: false, wasCordoned: true }, 'and says it was cordoned');
  t.equal((await upstreams())[1]!.state, 'healthy', 'it reads healthy again');
  const back = await callsTo(target);
  await waitFor('the uncordoned node takes calls again', async () => {
    await reads(10);
    return (await callsTo(target)) > back;
  });
  t.equal(
    metricSamples(await metrics(), 'switchyard_upstream_cordoned', { upstream: target })[0],
    0,
    'gauge back to 0',
  );
  t.same(failed, [], 'every read answered');
});

t.test('bad input: unknown names, long reasons, no JSON content type; all cordoned', async (t) => {
  const { sy, devnet } = await startStack(t, { nodes: 2 });
  const names = devnet.nodes().map((n) => n.name);
  for (const op of ['cordon', 'uncordon']) {
    const r = await post(`${sy.adminUrl}/upstreams/no-such-node/${op}`, '');
    t.equal(r.status, 404, `${op} of an unknown name: 404`);
    t.match(r.json(), { error: /no upstream named "no-such-node"/ }, 'with a JSON error');
  }
  const long = await post(`${sy.adminUrl}/upstreams/${names[0]}/cordon`, { reason: 'x'.repeat(201) });
  t.equal(long.status, 400, 'a reason of 201 characters: 400');
  const extra = await post(`${sy.adminUrl}/upstreams/${names[0]}/cordon`, { reason: 'a', until: 1 });
  t.equal(extra.status, 400, 'an unknown key: 400');
  const plain = await post(`${sy.adminUrl}/upstreams/${names[0]}/cordon`, '', { 'content-type': 'text/plain' });
  t.equal(plain.status, 415, 'without a JSON content type: 415');
  const viaGet = await get(`${sy.adminUrl}/upstreams/${names[0]}/cordon`);
  t.equal(viaGet.status, 405, 'GET on a write: 405');
  const listed = (await get(`${sy.adminUrl}/upstreams`)).json();
  t.ok(
    listed.upstreams.every((u: UpstreamLine) => u.cordon === null),
    'no refused write cordoned anything',
  );
  t.equal(listed.keptIn, 'memory', 'kept in memory: no Redis, uptime store in memory');

  for (const n of names) t.equal((await post(`${sy.adminUrl}/upstreams/${n}/cordon`, '')).status, 200, `${n} cordoned`);
  const r = await call(sy.url, 'eth_getBalance', [DEV_ADDRESS, 'latest']);
  t.match(r.error, { code: -32002, data: { why: 'all cordoned' } }, 'every node cordoned: -32002 all cordoned');
  t.equal(
    (await get(`${sy.adminUrl}/ready?upstreams=1`)).status,
    200,
    '/ready?upstreams=1 unchanged: a cordon is no outage',
  );
});
