/**
 * A held event loop is not the node's fault (issue 42, item 4): a real anvil answers within
 * milliseconds while Switchyard's loop is held past the call's time limit (as checking large
 * answers or writing them once held it). The answer waiting in the socket is read before the call
 * is called timed out: a probe so answered keeps its node up, a routed call keeps its breaker shut.
 */
import t from 'tap';
import { upstreamSchema } from '../../src/config/schema.js';
import { HttpUpstreamClient } from '../../src/upstream/client.js';
import { startAnvil } from '../helpers/anvil.js';

/** Holds the event loop for `ms` (a busy wait: nothing else runs meanwhile). */
function hold(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // held
  }
}

t.test('an answer that came while the loop was held past the time limit is the answer', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const client = new HttpUpstreamClient(upstreamSchema.parse({ name: 'anvil', url: anvil.url }));
  t.teardown(() => client.close());
  // The connection is made first, so the next calls are written at once.
  const first = (await client.call('eth_chainId', '[]', 5_000, { probe: true })).verdict;
  t.equal(first.kind, 'result');
  for (const opts of [{ probe: true }, {}]) {
    const answered = client.call('eth_chainId', '[]', 100, opts);
    // A probe leaves at once; a routed call with the micro-batch, on the next turn.
    if (opts.probe !== true) await new Promise((r) => setImmediate(r));
    hold(500);
    const { verdict } = await answered;
    t.same(verdict, first, opts.probe ? 'a probe' : 'a routed call');
  }
  t.equal(client.failures, 0, 'no failure counted against the node');
  t.equal(client.breaker.state, 'closed');
});
