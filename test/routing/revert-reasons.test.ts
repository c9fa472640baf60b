/**
 * A revert is an answer, whatever its reason says. Three real anvil nodes hold contracts that
 * revert with the reasons "rate limit" and "header not found" (words a node's own limit and
 * missing-block errors use). A client sends batches of 5 eth_calls to them, 5 batches a second,
 * while another client reads: every revert comes back verbatim (code 3, message and data as
 * anvil gave them), each call reached exactly one node, no breaker opened, no node went down or
 * was held off (a revert's "rate limit" is the contract's text, not the node's), and the other
 * client lost nothing.
 */
import t from 'tap';
import { call, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { bystander, p99, processFigures, startFleet, watchStatus } from './fixtures/hostile-calls.js';

const REASONS = ['rate limit', 'header not found'];
/** The contract the n-th call goes to: batches of 5, every third one to the second contract. */
const which = (n: number): number => (Math.floor(n / 5) % 3 === 2 ? 1 : 0);

t.test('reverts with limit and missing-block words: verbatim, one node each, no breaker opens', async (t) => {
  const { nodes, contracts } = await startFleet(t, REASONS);
  // What anvil itself answers: the contracts ignore their calldata.
  const expected = await Promise.all(
    contracts.map(async (to) => (await call(nodes[0]!.url, 'eth_call', [{ to, data: '0x' }, 'latest'])).error),
  );
  t.equal(expected[0].code, 3, 'anvil says a revert with code 3');
  t.equal(expected[0].message, 'execution reverted: rate limit');
  t.equal(expected[1].message, 'execution reverted: header not found');

  const sy = await startSwitchyard(t, { upstreams: nodes.map((n, i) => ({ name: `node-${i}`, url: n.proxy.url })) });
  const marks = nodes.map((n) => n.proxy.mark());
  const before = processFigures();
  const watcher = await watchStatus(sy.adminUrl);
  const other = bystander(sy.url);

  // 15 batches of 5, one every 200 ms, each to one contract (two "rate limit" batches, then one
  // "header not found"); each call's calldata is its own, so none is coalesced with another.
  const sent: string[] = [];
  const wrong: string[] = [];
  for (let b = 0; b < 15; b++) {
    const batch = Array.from({ length: 5 }, (_, k) => {
      const n = b * 5 + k;
      const data = `0x${n.toString(16).padStart(8, '0')}`;
      sent.push(data);
      return { jsonrpc: '2.0', id: n, method: 'eth_call', params: [{ to: contracts[which(n)], data }, 'latest'] };
    });
    const answers = (await post(sy.url, batch)).json() as { id: number; error?: unknown }[];
    for (const a of answers)
      if (JSON.stringify(a.error) !== JSON.stringify(expected[which(a.id)]))
        wrong.push(`${a.id}: ${JSON.stringify(a)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  // At least 20 of its calls fall while the batches go and after them, however fast they went.
  await waitFor('the other client made 20 calls', () => other.latenciesMs.length >= 20);
  await other.stop();
  await watcher.stop();
  const after = processFigures();

  t.same(wrong, [], 'every revert came back as anvil gave it: code 3, message and data');
  const reached = nodes.flatMap((n, i) =>
    n.proxy.calls
      .slice(marks[i])
      .filter((c) => c.method === 'eth_call')
      .map((c) => (c.params[0] as { data: string }).data),
  );
  t.equal(reached.length, sent.length, `${sent.length} calls, ${reached.length} reached a node`);
  t.same([...reached].sort(), [...sent].sort(), 'each call reached exactly one node, once');
  t.same([...watcher.seen], [], 'no breaker opened, no node went down, none was held off');
  t.same(
    other.failures.slice(0, 3),
    [],
    `the other client lost ${other.failures.length} of ${other.latenciesMs.length} calls`,
  );
  t.ok(p99(other.latenciesMs) < 2_000, `the other client's p99: ${Math.round(p99(other.latenciesMs))} ms`);
  t.ok(after.rssMb - before.rssMb < 150, `RSS ${Math.round(before.rssMb)} -> ${Math.round(after.rssMb)} MB`);
  t.ok(after.fds - before.fds < 64, `open descriptors ${before.fds} -> ${after.fds}`);
});
