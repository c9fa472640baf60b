/**
 * Coalescing: 1,000 identical eth_getBlockByNumber calls for a block just mined, fired at once over
 * 100 connections, reach each node at most once (counted at the nodes by counting proxies, by the
 * exact params so Switchyard's own head polls of `latest`/`finalized` do not count). Every caller
 * gets its own id back, byte for byte, and the right block.
 */
import t, { type Test } from 'tap';
import { Pool } from 'undici';
import { hex, metric, rawMember, result, startProxiedStack, status } from './fixtures/tools.js';
import { waitFor } from '../helpers/wait.js';

const CALLERS = 1_000;
const CONNECTIONS = 100;

t.test('1,000 concurrent identical calls for a new block reach each node at most once', async (t) => {
  const { devnet, proxies, sy, node } = await startProxiedStack(t, { nodes: 3 });
  const pool = new Pool(sy.url, { connections: CONNECTIONS, pipelining: 1 });
  t.teardown(() => pool.destroy());
  await devnet.mine(3);

  // Ids of every kind a client may send, each to come back exactly as sent.
  const idOf = (i: number): string =>
    i % 3 === 0 ? String(i) : i % 3 === 1 ? `"caller-${i}"` : `1844674407370955${String(i).padStart(4, '0')}`;
  const fire = (params: unknown[]) =>
    Promise.all(
      Array.from({ length: CALLERS }, async (_, i) => {
        const res = await pool.request({
          path: '/',
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: `{"jsonrpc":"2.0","id":${idOf(i)},"method":"eth_getBlockByNumber","params":${JSON.stringify(params)}}`,
        });
        return { status: res.statusCode, text: await res.body.text() };
      }),
    );
  const counters = async () => ({
    hits: await metric(sy, 'switchyard_cache_lookups_total', { result: 'hit' }),
    coalesced: await metric(sy, 'switchyard_coalesced_calls_total'),
  });

  /**
   * Mines a block, fires the callers at it, checks it all. With `during`, the nodes hold that call
   * (a slow node) until `during` is done.
   */
  const round = async (
    t: Test,
    during?: (params: unknown[], before: { hits: number; coalesced: number }) => Promise<void>,
  ) => {
    const n = await devnet.mine();
    await waitFor(`switchyard at head ${n}`, async () => (await status(sy)).fleetHead === n);
    const want = await result<{ hash: string; number: string }>(node, 'eth_getBlockByNumber', [hex(n), false]);
    const params = [hex(n), false];
    const before = await counters();
    const marks = proxies.map((p) => p.mark());
    const holds = during ? proxies.map((p) => p.hold('eth_getBlockByNumber', params)) : [];
    const started = performance.now();
    const fired = fire(params);
    if (during) {
      await during(params, before);
      for (const h of holds) h.release();
    }
    const answers = await fired;
    const ms = performance.now() - started;

    const perNode = proxies.map((p, i) => p.count('eth_getBlockByNumber', params, marks[i]));
    const total = perNode.reduce((a, b) => a + b, 0);
    t.ok(
      perNode.every((c) => c <= 1),
      `each node saw the call at most once (per node: ${perNode.join(', ')})`,
    );
    t.ok(total >= 1, 'and some node did answer it');
    let idsOk = 0;
    let blocksOk = 0;
    for (const [i, a] of answers.entries()) {
      if (a.status === 200 && rawMember(a.text, 'id') === idOf(i)) idsOk++;
      const r = JSON.parse(a.text) as { result?: { hash?: string; number?: string } };
      if (r.result?.hash === want.hash && r.result.number === want.number) blocksOk++;
    }
    t.equal(idsOk, CALLERS, 'every caller got its own id back, as sent');
    t.equal(blocksOk, CALLERS, 'every caller got the block');
    const after = await counters();
    const hits = after.hits - before.hits;
    const coalesced = after.coalesced - before.coalesced;
    t.ok(coalesced > 0 || hits > 0, `shared in flight (${coalesced}) or served from the cache (${hits})`);
    t.ok(
      hits + coalesced >= CALLERS - total,
      `every caller but the node-reaching ones shared or hit (${hits} hits + ${coalesced} coalesced + ${total} node calls)`,
    );
    t.comment(
      `${CALLERS} callers in ${Math.round(ms)} ms; node calls per node ${perNode.join('/')}; ${hits} hits, ${coalesced} coalesced`,
    );
    return { coalesced, hits };
  };

  await t.test('fired at once', async (t) => {
    await round(t);
  });

  await t.test('fired at once while the node is slow to answer: the calls in flight share one', async (t) => {
    const { coalesced } = await round(t, async (params, before) => {
      const reached = () => proxies.reduce((n, p) => n + p.count('eth_getBlockByNumber', params), 0);
      // Every connection's call is in flight behind the one held node call before the node answers.
      await waitFor(
        `${CONNECTIONS - 1} calls joined the one in flight`,
        async () =>
          reached() >= 1 &&
          (await metric(sy, 'switchyard_coalesced_calls_total')) - before.coalesced >= CONNECTIONS - 1,
        { timeoutMs: 30_000 },
      );
      t.equal(reached(), 1, 'one node call while they wait');
    });
    t.ok(coalesced >= CONNECTIONS - 1, `${coalesced} calls shared the in-flight one`);
  });
});
