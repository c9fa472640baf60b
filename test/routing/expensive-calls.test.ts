/**
 * An expensive call runs on one node at most, and its timeout costs only its sender. Three real
 * anvil nodes; a client sends a debug_traceCall of a gas-burning loop (anvil traces it for 0.1 to
 * 3 s, by the machine's load, and answers nothing else meanwhile, head polls included), then an
 * eth_call with 4.3 G gas (seconds of EVM work), both over their short per-method timeouts
 * (routing.methodTimeoutsMs), while another client reads: each heavy call is answered with
 * EXPENSIVE_CALL_FAILED after reaching exactly one node, no node is marked down, no breaker
 * opens, and the other client loses nothing.
 */
import t from 'tap';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { LOOP, bystander, p99, processFigures, startFleet, watchStatus } from './fixtures/hostile-calls.js';

const TRACE_GAS = `0x${(300_000).toString(16)}`;
const CALL_GAS = '0x100000000';

t.test('a trace and an eth_call over their timeouts: one node each, no node down, nobody else hurt', async (t) => {
  const { nodes } = await startFleet(t);
  const sy = await startSwitchyard(t, {
    upstreams: nodes.map((n, i) => ({ name: `node-${i}`, url: n.proxy.url, tags: ['debug'] })),
    // Polls every 2 s time out after 3 s: a node busy for seconds is late (skipped), and down only
    // after three timeouts in a row (~13 s, on a loaded machine too). A read sent to it just
    // before is failed over after 3 s.
    // The trace's timeout is well under its time: anvil traces 300,000 gas of the loop in about
    // 130 ms on an idle machine (a 5 MB answer), 0.5 to 3 s under the suite's load.
    routing: { headPollMs: 2_000, upstreamTimeoutMs: 3_000, methodTimeoutsMs: { debug_traceCall: 40, eth_call: 250 } },
  });
  const before = processFigures();
  const watcher = await watchStatus(sy.adminUrl);
  const other = bystander(sy.url);
  await waitFor('the other client under way', () => other.latenciesMs.length >= 10);

  const routable = async (): Promise<boolean> =>
    ((await get(`${sy.adminUrl}/status`)).json().upstreams as { routable: boolean }[]).every((u) => u.routable);
  const heavy = [
    { jsonrpc: '2.0', id: 1, method: 'debug_traceCall', params: [{ data: LOOP, gas: TRACE_GAS }, 'latest', {}] },
    { jsonrpc: '2.0', id: 2, method: 'eth_call', params: [{ data: LOOP, gas: CALL_GAS }, 'latest'] },
  ];
  for (const body of heavy) {
    const r = (await post(sy.url, body)).json();
    t.equal(r.error?.code, -32002, `${body.method}: -32002`);
    t.equal(r.error?.data?.reason, 'EXPENSIVE_CALL_FAILED', `${body.method}: EXPENSIVE_CALL_FAILED`);
    t.equal(r.error?.data?.last, 'timeout', `${body.method}: it timed out`);
    // The anvil finishes its work and answers its polls again; the other client keeps reading.
    const calls = other.latenciesMs.length;
    await waitFor('every node routable again', routable, { timeoutMs: 30_000 });
    await waitFor('the other client read on', () => other.latenciesMs.length >= calls + 20);
  }
  await other.stop();
  await watcher.stop();
  const after = processFigures();

  const ran = (method: string, gas: string): number =>
    nodes.reduce((n, node) => n + node.proxy.count(method, (p) => (p[0] as { gas?: string }).gas === gas), 0);
  t.equal(ran('debug_traceCall', TRACE_GAS), 1, 'the trace reached one node');
  t.equal(ran('eth_call', CALL_GAS), 1, 'the heavy eth_call reached one node');
  t.same([...watcher.seen], [], 'no node marked down, no breaker opened');
  t.same(
    other.failures.slice(0, 3),
    [],
    `the other client lost ${other.failures.length} of ${other.latenciesMs.length} calls`,
  );
  t.ok(
    p99(other.latenciesMs) < 6_000,
    `the other client's p99: ${Math.round(p99(other.latenciesMs))} ms, max ${Math.round(Math.max(...other.latenciesMs))} ms`,
  );
  t.ok(after.rssMb - before.rssMb < 150, `RSS ${Math.round(before.rssMb)} -> ${Math.round(after.rssMb)} MB`);
  t.ok(after.fds - before.fds < 64, `open descriptors ${before.fds} -> ${after.fds}`);
});
