/**
 * A slow expensive call holds only itself. Reads of many clients that reach a node in the same
 * moment leave in one upstream batch, which is answered as a whole; an expensive call never joins
 * one. A real anvil behind a counting proxy that holds every eth_call to one address (a node busy
 * with it): the reads sent with it, by other clients in the same moment or in the same turn of
 * the upstream client, are answered at once.
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startCountingProxy } from '../helpers/counting-proxy.js';
import { post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { HttpUpstreamClient } from '../../src/upstream/client.js';
import { upstreamSchema } from '../../src/config/schema.js';
import { processFigures } from './fixtures/hostile-calls.js';

const SLOW = '0x00000000000000000000000000000000000051e0';
const isSlow = (params: unknown[]): boolean => (params[0] as { to?: string } | undefined)?.to === SLOW;
const address = (n: number): string => `0x${(0xa000000 + n).toString(16).padStart(40, '0')}`;

t.test('other clients sending with a held eth_call are answered at once', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const proxy = await startCountingProxy(t, anvil.url);
  const hold = proxy.hold('eth_call', isSlow);
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'node', url: proxy.url }],
    routing: { methodTimeoutsMs: { eth_call: 20_000 } },
  });

  const before = processFigures();
  const slow: Promise<unknown>[] = [];
  const latencies: number[] = [];
  const wrong: string[] = [];
  // Five rounds, each one held eth_call and eight reads of other clients sent at once.
  for (let round = 0; round < 5; round++) {
    slow.push(
      post(sy.url, {
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_call',
        params: [{ to: SLOW, data: `0x0${round}` }, 'latest'],
      }),
    );
    await Promise.all(
      Array.from({ length: 8 }, async (_, k) => {
        const started = performance.now();
        const r = (
          await post(sy.url, {
            jsonrpc: '2.0',
            id: 2,
            method: 'eth_getBalance',
            params: [address(round * 8 + k), 'latest'],
          })
        ).json();
        latencies.push(performance.now() - started);
        if (r.result !== '0x0') wrong.push(JSON.stringify(r));
      }),
    );
  }
  t.equal(hold.held, 5, 'every eth_call is held at the node meanwhile');
  t.same(wrong, [], 'every read answered with its result');
  t.ok(
    Math.max(...latencies) < 3_000,
    `40 reads sent with held calls: slowest ${Math.round(Math.max(...latencies))} ms`,
  );
  const after = processFigures();
  t.ok(after.rssMb - before.rssMb < 100, `RSS ${Math.round(before.rssMb)} -> ${Math.round(after.rssMb)} MB`);
  // The test's clients, Switchyard and the proxy share this process: each of the 9 concurrent
  // requests holds up to 4 sockets here (client, server, upstream, proxy), kept alive after.
  t.ok(after.fds - before.fds < 150, `open descriptors ${before.fds} -> ${after.fds}`);
  hold.release();
  await Promise.all(slow);
});

t.test(
  'in the upstream client: an expensive call leaves alone, the reads of the same turn go on without it',
  async (t) => {
    const anvil = await startAnvil();
    t.teardown(() => anvil.stop());
    const proxy = await startCountingProxy(t, anvil.url);
    const hold = proxy.hold('eth_call', isSlow);
    const client = new HttpUpstreamClient(upstreamSchema.parse({ name: 'node', url: proxy.url }));
    t.teardown(() => client.close());

    // All in one turn: the micro-batcher would put them in one exchange.
    const slow = client.call('eth_call', JSON.stringify([{ to: SLOW, data: '0x' }, 'latest']), 20_000, {
      expensive: true,
    });
    const reads = Array.from({ length: 8 }, (_, k) =>
      client.call('eth_getBalance', JSON.stringify([address(k), 'latest']), 20_000),
    );
    const started = performance.now();
    const answers = await Promise.all(reads);
    const ms = performance.now() - started;
    t.same(
      answers.map((a) => a.verdict),
      answers.map(() => ({ kind: 'result', result: '"0x0"' })),
      'every read answered',
    );
    t.ok(ms < 3_000, `the reads took ${Math.round(ms)} ms while the eth_call is held`);
    await waitFor('the eth_call held at the node', () => hold.held === 1);
    hold.release();
    t.same(
      (await slow).verdict,
      { kind: 'result', result: '"0x"' },
      'the eth_call answered once released (no code there: empty result)',
    );
  },
);
