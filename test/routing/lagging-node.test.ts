/**
 * A node lagging 10 blocks behind a devnet of 3 producing a block every 200 ms. 500 reads from
 * several clients, alternating eth_getBlockByNumber("latest") and eth_getBlockByNumber(N) where N
 * is Switchyard's own eth_blockNumber just read: none is null and none is older than N. The lagging
 * node gets no block read at all while it lags more than maxLagBlocks (upstream call metrics).
 */
import t from 'tap';
import { startStack } from '../helpers/stack.js';
import { get, post } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

interface UpstreamStatus {
  name: string;
  state: string;
  head: number;
  lag: number | null;
}

/** Sum of switchyard_upstream_calls_total for one upstream and method, over every outcome. */
function upstreamCalls(metrics: string, upstream: string, method: string): number {
  let sum = 0;
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('switchyard_upstream_calls_total{')) continue;
    if (!line.includes(`upstream="${upstream}"`) || !line.includes(`method="${method}"`)) continue;
    sum += Number(line.split(' ').pop());
  }
  return sum;
}

t.test('reads never see the lagging node', async (t) => {
  const MAX_LAG = 5;
  const { sy, devnet } = await startStack(t, {
    nodes: 3,
    blockTimeMs: 200,
    config: {
      routing: { headPollMs: 100, maxLagBlocks: MAX_LAG },
      // Routing is under test: with the response cache off, every read is routed to a node.
      cache: { maxBytes: 0 },
    },
  });
  await waitFor('a few blocks', async () => devnet.nodes()[0]!.head >= 3, { timeoutMs: 30_000 });
  await devnet.lag(1, 10);
  const status = async (): Promise<UpstreamStatus[]> =>
    ((await get(`${sy.adminUrl}/status`)).json() as { upstreams: UpstreamStatus[] }).upstreams;
  await waitFor(
    'node-1 seen lagging 10 blocks while healthy',
    async () => {
      const n1 = (await status()).find((u) => u.name === 'node-1')!;
      return n1.state === 'healthy' && n1.lag !== null && n1.lag >= 10;
    },
    { timeoutMs: 30_000 },
  );
  t.equal(devnet.nodes()[1]!.state, 'lagging', 'the devnet says node-1 lags');

  const before = (await get(`${sy.adminUrl}/metrics`)).text;
  const toLaggingBefore = upstreamCalls(before, 'node-1', 'eth_getBlockByNumber');
  const toOthersBefore =
    upstreamCalls(before, 'node-0', 'eth_getBlockByNumber') + upstreamCalls(before, 'node-2', 'eth_getBlockByNumber');

  const problems: string[] = [];
  let reads = 0;
  let lagSamples = 0;
  let lagOk = true;
  let id = 1;
  const startHead = Number((await post(sy.url, { jsonrpc: '2.0', id: 0, method: 'eth_blockNumber' })).json().result);
  // 5 clients x 100 reads; each read is preceded by the client's own eth_blockNumber.
  const client = async (c: number): Promise<void> => {
    for (let i = 0; i < 100; i++) {
      const bn = (await post(sy.url, { jsonrpc: '2.0', id: id++, method: 'eth_blockNumber' })).json();
      const n = Number(bn.result);
      if (!Number.isInteger(n)) {
        problems.push(`eth_blockNumber: ${JSON.stringify(bn)}`);
        continue;
      }
      const tag = (c + i) % 2 === 0 ? 'latest' : `0x${n.toString(16)}`;
      const r = (
        await post(sy.url, { jsonrpc: '2.0', id: id++, method: 'eth_getBlockByNumber', params: [tag, false] })
      ).json();
      reads++;
      const got = r.result === null || r.result === undefined ? null : Number(r.result.number);
      if (got === null) problems.push(`${tag} after blockNumber ${n}: ${JSON.stringify(r.error ?? null)}`);
      else if (got < n) problems.push(`${tag} after blockNumber ${n}: block ${got}`);
      else if (tag !== 'latest' && got !== n) problems.push(`${tag}: block ${got}`);
      // Paced so the 500 reads span a dozen blocks or so (load shaping, not waiting on anything).
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const sampler = (async () => {
    // The lagging node must keep lagging for the whole run, or the no-call check proves nothing.
    while (reads < 500) {
      const n1 = (await status()).find((u) => u.name === 'node-1')!;
      lagSamples++;
      if (n1.lag === null || n1.lag <= MAX_LAG) lagOk = false;
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  await Promise.all([0, 1, 2, 3, 4].map(client));
  await sampler;
  const endHead = Number((await post(sy.url, { jsonrpc: '2.0', id: 0, method: 'eth_blockNumber' })).json().result);

  t.equal(reads, 500, '500 reads');
  t.same(
    problems.slice(0, 5),
    [],
    `none null, none older than the block number read before (${problems.length} problems)`,
  );
  t.ok(endHead >= startHead + 5, `the chain moved during the reads (${startHead} -> ${endHead})`);
  t.ok(lagOk, `node-1 lagged more than ${MAX_LAG} blocks in every one of ${lagSamples} samples`);

  const after = (await get(`${sy.adminUrl}/metrics`)).text;
  t.equal(
    upstreamCalls(after, 'node-1', 'eth_getBlockByNumber') - toLaggingBefore,
    0,
    'no block read went to the lagging node',
  );
  const toOthers =
    upstreamCalls(after, 'node-0', 'eth_getBlockByNumber') +
    upstreamCalls(after, 'node-2', 'eth_getBlockByNumber') -
    toOthersBefore;
  t.ok(
    toOthers >= 100,
    `the nodes at the head served them (${toOthers} upstream calls; identical reads in flight at once share one)`,
  );

  // And back in sync, it is used again: the check above is about lag, not about node-1 itself.
  await devnet.resume(1);
  await waitFor(
    'node-1 back in sync',
    async () => {
      const n1 = (await status()).find((u) => u.name === 'node-1')!;
      return n1.lag !== null && n1.lag <= 1;
    },
    { timeoutMs: 30_000 },
  );
  await waitFor(
    'node-1 serves a read again',
    async () => {
      for (let i = 0; i < 20; i++) {
        await post(sy.url, {
          jsonrpc: '2.0',
          id: 1,
          method: 'eth_getBalance',
          params: [`0x${(0xfeed00 + i + Math.floor(Math.random() * 1e6)).toString(16).padStart(40, '0')}`, 'latest'],
        });
      }
      return upstreamCalls((await get(`${sy.adminUrl}/metrics`)).text, 'node-1', 'eth_getBalance') > 0;
    },
    { timeoutMs: 30_000 },
  );
  t.pass('node-1 takes calls once in sync');
});
