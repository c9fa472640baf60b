// Discovery's reading of a node's answers (upstream/discovery.ts) where a real node cannot be made
// to give them: a node that contradicts itself, answers garbage or stops answering gets no bound
// ("unknown": it is sent every read), never a wrong one; the search is bounded in probes.

import t, { type Test } from 'tap';
import { fakeFleet, TEST_FLEET_OPTIONS, upstreamConfig, type SentCall } from '../helpers/fake-client.js';
import { Serving } from '../../src/upstream/serving.js';
import type { Verdict } from '../../src/upstream/classify.js';
import type { Upstream } from '../../src/upstream/node.js';
import { earliestWithState, servesDebug } from '../../src/upstream/discovery.js';

const HEAD = 1_000_000;
const BOUND = 2 + Math.ceil(Math.log2(HEAD + 1));

const balance: Verdict = { kind: 'result', result: '"0x1bc16d674ec80000"' };
const noState: Verdict = { kind: 'node-error', error: '{}', code: -32000, message: 'missing trie node' };
const timeout: Verdict = { kind: 'retry', reason: 'timeout', health: true };

/** A node at HEAD answering each eth_getBalance probe with `answer(block, probes so far)`. */
function node(t: Test, answer: (block: number, asked: number) => Verdict): { u: Upstream; probes: () => number } {
  let asked = 0;
  const script = (c: SentCall): Verdict => {
    if (c.method !== 'eth_getBalance') return { kind: 'node-error', error: '{}', code: -32601, message: 'no' };
    return answer(Number.parseInt((JSON.parse(c.paramsJson) as string[])[1]!, 16), ++asked);
  };
  const { fleet } = fakeFleet(
    t,
    { n: { answers: [script], latencyMs: 5, head: HEAD } },
    { options: TEST_FLEET_OPTIONS, now: Date.now() },
  );
  return { u: fleet.upstreams[0]!, probes: () => asked };
}

t.test('a pruned node: its first block with state, within the bound of probes', async (t) => {
  for (const first of [1, 2, 500_000, 987_654, HEAD - 1, HEAD]) {
    const { u, probes } = node(t, (n) => (n >= first ? balance : noState));
    t.same(await earliestWithState(u, 1000), { block: first, atHead: HEAD }, `state from ${first}`);
    t.ok(probes() <= BOUND, `${probes()} probes, at most ${BOUND}`);
  }
});

t.test('an archive node: one probe', async (t) => {
  const { u, probes } = node(t, () => balance);
  t.same(await earliestWithState(u, 1000), { block: 0, atHead: HEAD });
  t.equal(probes(), 1);
});

t.test('answers that cannot be read give no bound', async (t) => {
  const rows: [string, (n: number, asked: number) => Verdict][] = [
    ['no state even at its own head', () => noState],
    ['a result that is not a balance', () => ({ kind: 'result', result: '{"balance":1}' })],
    ['a timeout at block 0', (n) => (n === 0 ? timeout : balance)],
    ['a timeout in the middle of the search', (n, asked) => (asked === 5 ? timeout : n >= 700 ? balance : noState)],
    [
      'too many requests',
      (n) => (n === 0 ? noState : { kind: 'retry', reason: 'http_429', health: false, holdOff: true }),
    ],
  ];
  for (const [name, answer] of rows) {
    const { u, probes } = node(t, answer);
    t.equal(await earliestWithState(u, 1000), null, name);
    t.ok(probes() <= BOUND, `${name}: ${probes()} probes`);
  }
});

t.test('a node contradicting itself narrows only its own window, within the bound', async (t) => {
  // State at odd blocks only: every answer is possible, none consistent.
  const { u, probes } = node(t, (n) => (n === HEAD || n % 2 === 1 ? balance : noState));
  const found = await earliestWithState(u, 1000);
  t.ok(found !== null && found.block > 0 && found.block <= HEAD, `a bound in (0, head]: ${found?.block}`);
  t.ok(probes() <= BOUND, `${probes()} probes`);
});

t.test('debug: only a result that is a list of traces', async (t) => {
  const rows: [string, Verdict, boolean][] = [
    ['traces', { kind: 'result', result: '[{"txHash":"0x1","result":{}}]' }, true],
    ['an empty block', { kind: 'result', result: '[]' }, true],
    ['method not found', { kind: 'retry', reason: 'node_method_missing', health: false, error: '{}' }, false],
    ['another error', { kind: 'node-error', error: '{}', code: -32000, message: 'tracing off' }, false],
    ['a timeout', timeout, false],
    ['not a list', { kind: 'result', result: 'null' }, false],
  ];
  for (const [name, verdict, yes] of rows) {
    const { fleet } = fakeFleet(
      t,
      { n: { answers: [verdict], latencyMs: 5, head: 10 } },
      { options: TEST_FLEET_OPTIONS, now: Date.now() },
    );
    t.equal(await servesDebug(fleet.upstreams[0]!, 1000), yes, name);
  }
});

t.test('what a node serves: tags win, a pruned window moves up with its head, refusals learned', async (t) => {
  const at = Date.now();
  const pruned = new Serving(upstreamConfig('p'));
  t.equal(pruned.earliestBlock(30), null, 'unknown before its first run');
  pruned.discovered({ earliest: { block: 25, atHead: 30 }, debug: false }, at);
  t.same([pruned.earliestBlock(30), pruned.earliestBlock(40), pruned.earliestSource()], [25, 35, 'discovered']);
  t.same([pruned.source('archive'), pruned.source('debug')], [null, null]);

  const tagged = new Serving(upstreamConfig('t', { tags: ['archive', 'debug'] }));
  tagged.discovered({ earliest: { block: 25, atHead: 30 }, debug: false }, at);
  t.same(
    [tagged.earliestBlock(40), tagged.earliestSource(), tagged.source('archive'), tagged.source('debug')],
    [0, 'configured', 'configured', 'configured'],
    'configured tags win over what was found',
  );

  const off = new Serving(upstreamConfig('o', { discover: false }));
  off.discovered({ earliest: { block: 25, atHead: 30 }, debug: true }, at);
  t.same(
    [off.earliestBlock(30), off.source('debug'), off.refuse('eth_getProof')],
    [null, null, false],
    'discover: false',
  );

  t.equal(pruned.refuse('eth_getProof'), true, 'a method of the table is learned');
  t.equal(pruned.refuse('eth_getProof'), false, 'once');
  t.equal(pruned.refuse('acme_privateMethod'), false, 'a name outside the table is not kept');
  t.same(pruned.unsupported(), ['eth_getProof']);
  pruned.discovered({ earliest: null, debug: true }, at);
  t.same(
    [pruned.unsupported(), pruned.earliestBlock(40), pruned.source('debug')],
    [[], null, 'discovered'],
    'a new run starts afresh',
  );
});
