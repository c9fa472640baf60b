/**
 * The micro-batcher keeps each call's own deadline: calls made in the same turn travel as one
 * batch to a node that never answers, and the one with the short deadline is answered `timeout`
 * while the long one still waits (before, both waited for the longest member's timeout).
 */
import t from 'tap';
import { HttpUpstreamClient } from '../../src/upstream/client.js';
import { upstreamConfig } from '../helpers/fake-client.js';
import { startFakeNode } from '../helpers/fake-node.js';

t.test('a call batched with a longer one times out on its own deadline', async (t) => {
  const node = await startFakeNode(t, () => ({ hang: true }));
  const client = new HttpUpstreamClient(upstreamConfig('hung', { url: node.url, maxConnections: 2 }));
  t.teardown(() => client.close());
  let longSettled = false;
  const long = client.call('eth_getLogs', '[{}]', 4_000).then((r) => {
    longSettled = true;
    return r;
  });
  const short = await client.call('eth_getBlockByNumber', '["latest",false]', 150, { probe: true });
  t.same(short.verdict, { kind: 'retry', reason: 'timeout', health: true }, 'the short call: timeout');
  t.notOk(longSettled, 'answered while the longer call of the same batch still waits');
  t.equal(node.calls.length, 1, 'both left as one exchange');
  t.equal(client.inFlight, 1);
  const l = await long;
  t.equal(l.verdict.kind === 'retry' && l.verdict.reason, 'timeout');
  t.equal(client.inFlight, 0);
});
