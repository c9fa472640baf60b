/**
 * A head poll that times out makes the node late: skipped by routing at once, still `healthy`;
 * only POLL_TIMEOUTS_TO_DOWN timeouts in a row mark it down. A real anvil behind a counting proxy
 * that holds the polls (a node busy with one heavy call answers nothing else meanwhile).
 */
import t from 'tap';
import { startAnvil } from '../helpers/anvil.js';
import { startCountingProxy } from '../helpers/counting-proxy.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { POLL_TIMEOUTS_TO_DOWN } from '../../src/upstream/probe.js';

interface UpstreamStatus {
  state: string;
  routable: boolean;
  pollLate: boolean;
}

t.test('late first, down after repeated timeouts, back when it answers', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const proxy = await startCountingProxy(t, anvil.url);
  // Polls time out after 1 s (twice headPollMs, at least 1 s).
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'node', url: proxy.url }], routing: { headPollMs: 100 } });
  const status = async (): Promise<UpstreamStatus> =>
    ((await get(`${sy.adminUrl}/status`)).json().upstreams as UpstreamStatus[])[0]!;
  t.match(await status(), { state: 'healthy', routable: true, pollLate: false }, 'healthy and routable');

  const mark = proxy.mark();
  const hold = proxy.hold('eth_getBlockByNumber');
  const late = await waitFor('the node late', async () => {
    const s = await status();
    return s.pollLate ? s : undefined;
  });
  t.equal(late.routable, false, 'a late node gets no calls');
  t.equal(late.state, 'healthy', 'but is not marked down after one timeout');
  await waitFor('the node down', async () => (await status()).state === 'down', { timeoutMs: 20_000 });
  // Each timed-out poll was asked once: the node is down on the last of them.
  t.ok(
    proxy.count('eth_getBlockByNumber', undefined, mark) >= POLL_TIMEOUTS_TO_DOWN,
    `down after ${POLL_TIMEOUTS_TO_DOWN} poll timeouts in a row`,
  );

  hold.release();
  await waitFor('the node back', async () => {
    const s = await status();
    return s.state === 'healthy' && s.routable && !s.pollLate;
  });
  t.pass('healthy, routable and not late once it answers');
});

t.test(
  'poll timeouts while the node runs an expensive call leave it late, not down, until the call ends',
  async (t) => {
    const anvil = await startAnvil();
    t.teardown(() => anvil.stop());
    const proxy = await startCountingProxy(t, anvil.url);
    const sy = await startSwitchyard(t, {
      upstreams: [{ name: 'node', url: proxy.url }],
      routing: { headPollMs: 100, methodTimeoutsMs: { eth_call: 8000 } },
    });
    const status = async (): Promise<UpstreamStatus> =>
      ((await get(`${sy.adminUrl}/status`)).json().upstreams as UpstreamStatus[])[0]!;
    t.match(await status(), { state: 'healthy', routable: true }, 'healthy and routable');

    // The node is busy with one expensive call: it answers nothing, its polls included.
    const holdCall = proxy.hold('eth_call');
    const holdPolls = proxy.hold('eth_getBlockByNumber');
    const call = post(sy.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_call',
      params: [{ to: '0x0000000000000000000000000000000000000001', data: '0x' }, 'latest'],
    });
    await waitFor('the eth_call at the node', async () => proxy.count('eth_call') === 1);
    const mark = proxy.mark();
    // Polls time out after 1 s each: wait for more than POLL_TIMEOUTS_TO_DOWN of them to have timed out.
    await waitFor(
      'polls timed out while the call runs',
      async () => proxy.count('eth_getBlockByNumber', undefined, mark) > POLL_TIMEOUTS_TO_DOWN + 1,
      { timeoutMs: 20_000 },
    );
    const during = await status();
    t.equal(during.pollLate, true, 'late while its polls time out');
    t.equal(
      during.state,
      'healthy',
      `not down after more than ${POLL_TIMEOUTS_TO_DOWN} poll timeouts while it runs an expensive call`,
    );

    const answer = (await call).json() as { error?: { code: number; data?: { reason?: string } } };
    t.equal(answer.error?.data?.reason, 'EXPENSIVE_CALL_FAILED', 'the call itself times out and is run nowhere else');
    await waitFor(
      'the node down once the call is over and polls still time out',
      async () => (await status()).state === 'down',
      { timeoutMs: 20_000 },
    );
    holdCall.release();
    holdPolls.release();
    await waitFor('the node back', async () => {
      const s = await status();
      return s.state === 'healthy' && s.routable && !s.pollLate;
    });
    t.pass('healthy and routable once it answers');
  },
);
