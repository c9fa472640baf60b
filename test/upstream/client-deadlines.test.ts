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
  // A process's first request loads undici's HTTP parser (tens of ms, more on a loaded host):
  // made beforehand, to another node, so the batch below reaches its node well inside 150 ms.
  const warm = await startFakeNode(t);
  const warmClient = new HttpUpstreamClient(upstreamConfig('warm', { url: warm.url }));
  t.teardown(() => warmClient.close());
  await warmClient.call('eth_chainId', '[]', 5_000);
  const node = await startFakeNode(t, () => ({ hang: true }));
  const client = new HttpUpstreamClient(upstreamConfig('hung', { url: node.url, maxConnections: 2 }));
  t.teardown(() => client.close());
  let longSettled = false;
  const long = client.call('eth_getLogs', '[{}]', 4_000).then((r) => {
    longSettled = true;
    return r;
  });
  // Not a probe: the fleet's probes always go alone.
  const short = await client.call('eth_getBlockByNumber', '["latest",false]', 150);
  t.same(short.verdict, { kind: 'retry', reason: 'timeout', health: true }, 'the short call: timeout');
  t.notOk(longSettled, 'answered while the longer call of the same batch still waits');
  t.equal(node.calls.length, 1, 'both left as one exchange');
  t.equal(client.inFlight, 1);
  const l = await long;
  t.equal(l.verdict.kind === 'retry' && l.verdict.reason, 'timeout');
  t.equal(client.inFlight, 0);
});

t.test("a probe never shares an exchange: another call's hung answer does not hold it", async (t) => {
  const node = await startFakeNode(t, (method) => (method === 'eth_getLogs' ? { hang: true } : undefined), {
    batches: true,
  });
  const client = new HttpUpstreamClient(upstreamConfig('hung', { url: node.url, maxConnections: 2 }));
  t.teardown(() => client.close());
  const long = client.call('eth_getLogs', '[{}]', 2_000);
  const probe = await client.call('eth_blockNumber', '[]', 1_000, { probe: true });
  t.same(probe.verdict, { kind: 'result', result: '"0x1"' }, 'the probe is answered');
  await long;
  t.same(
    node.calls.map((c) => [c.method, c.batch]).sort(),
    [
      ['eth_blockNumber', undefined],
      ['eth_getLogs', undefined],
    ],
    'each in an exchange of its own',
  );
});
