/**
 * Table tests for three pure deciders: the reorg detector (Canon), what a node's error means for
 * routing (classifyNodeError), and how a call's block parameter becomes a routing requirement
 * (resolveBlocks). No network.
 */
import t from 'tap';
import { Canon, type Header } from '../../src/upstream/heads.js';
import { classifyNodeError, expensiveVerdict, type Verdict } from '../../src/upstream/classify.js';
import { resolveBlocks, type BlockContext } from '../../src/pipeline/blocks.js';
import { METHODS } from '../../src/methods/table.js';

const h = (number: number, hash: string, parentHash: string): Header => ({ number, hash, parentHash });

t.test('Canon: the first changed height, or null', async (t) => {
  const rows: { name: string; feed: Header[]; forks: (number | null)[] }[] = [
    {
      name: 'a straight chain',
      feed: [h(1, 'a1', 'a0'), h(2, 'a2', 'a1'), h(3, 'a3', 'a2')],
      forks: [null, null, null],
    },
    { name: 'the same header twice', feed: [h(1, 'a1', 'a0'), h(1, 'a1', 'a0')], forks: [null, null] },
    {
      name: 'another hash at a known height',
      feed: [h(1, 'a1', 'a0'), h(2, 'a2', 'a1'), h(2, 'b2', 'a1')],
      forks: [null, null, 2],
    },
    {
      name: 'a parent that is not the block we knew',
      feed: [h(1, 'a1', 'a0'), h(2, 'a2', 'a1'), h(3, 'b3', 'b2')],
      forks: [null, null, 2],
    },
    {
      name: 'a lower head than the top we knew',
      feed: [h(5, 'a5', 'a4'), h(6, 'a6', 'a5'), h(3, 'c3', 'c2')],
      forks: [null, null, 3],
    },
    { name: 'a gap forward is no reorg', feed: [h(1, 'a1', 'a0'), h(9, 'a9', 'a8')], forks: [null, null] },
    {
      name: 'after a reorg the new branch is the chain',
      feed: [h(1, 'a1', 'a0'), h(2, 'a2', 'a1'), h(2, 'b2', 'a1'), h(3, 'b3', 'b2')],
      forks: [null, null, 2, null],
    },
  ];
  for (const row of rows) {
    const canon = new Canon();
    t.same(
      row.feed.map((x) => canon.observe(x)),
      row.forks,
      row.name,
    );
  }
});

t.test('classifyNodeError: answer, or retry elsewhere and why', async (t) => {
  const rows: [code: number, message: string, expected: string][] = [
    [3, 'execution reverted', 'node-error'],
    [-32000, 'nonce too low', 'node-error'],
    [-32602, 'invalid argument 0: hex string without 0x prefix', 'node-error'],
    // A node's limit holds it off (upstream/holdoff.ts): no health failure.
    [-32005, 'limit exceeded', 'retry node_limit hold-off'],
    [-32000, 'Too Many Requests', 'retry node_limit hold-off'],
    [-32016, 'rate limit reached', 'retry node_limit hold-off'],
    // A limit on what the call asked for: tried elsewhere, but the node is not held off for it.
    [-32005, 'query returned more than 10000 results', 'retry node_limit'],
    [-32601, 'the method eth_foo does not exist', 'retry node_method_missing'],
    [-32000, 'header not found', 'retry node_missing_block'],
    [-32000, 'unknown block', 'retry node_missing_block'],
    [-32001, 'BlockOutOfRange: block 9 is beyond 8', 'retry node_missing_block'],
    [-32000, 'missing trie node abc (path )', 'retry node_missing_block'],
    // A revert's reason is the contract's text, chosen by whoever wrote it: never read for routing.
    [3, 'execution reverted: rate limit', 'node-error'],
    [3, 'execution reverted: too many requests', 'node-error'],
    [3, 'execution reverted: header not found', 'node-error'],
    [3, 'execution reverted: missing trie node', 'node-error'],
    [-32000, 'execution reverted: rate limit', 'node-error'],
    [-32000, 'Execution reverted: header not found', 'node-error'],
    [-32015, 'VM execution error.', 'node-error'],
    [-32015, 'Reverted: rate limit', 'node-error'],
    [
      -32603,
      "Error: VM Exception while processing transaction: reverted with reason string 'rate limit'",
      'node-error',
    ],
    // Only the start of a message says it is a revert: a node's own limit message is still one.
    [-32000, 'rate limit: execution reverted too often', 'retry node_limit hold-off'],
    [-32000, 'header not found (execution reverted)', 'retry node_missing_block'],
  ];
  for (const [code, message, expected] of rows) {
    const error = JSON.stringify({ code, message });
    const v = classifyNodeError(error, code, message);
    const got =
      v.kind === 'retry' ? `retry ${v.reason}${v.health ? ' health' : ''}${v.holdOff ? ' hold-off' : ''}` : v.kind;
    t.equal(got, expected, `${code} ${message}`);
    t.equal(v.kind === 'result' ? undefined : v.error, error, 'the node error text travels with the verdict');
  }
});

t.test('expensiveVerdict: a timeout or a connection lost once sent is final and no health signal', async (t) => {
  const rows: [name: string, verdict: Verdict, final: boolean][] = [
    ['timeout', { kind: 'retry', reason: 'timeout', health: true }, true],
    ['connection lost after sending', { kind: 'retry', reason: 'transport', health: true }, true],
    ['connection refused: never sent', { kind: 'retry', reason: 'transport', health: true, unsent: true }, false],
    [
      'the node says it is limited',
      { kind: 'retry', reason: 'node_limit', health: false, error: '{}', holdOff: true },
      false,
    ],
    ['HTTP 5xx', { kind: 'retry', reason: 'http_5xx', health: true }, false],
    ['a result', { kind: 'result', result: '"0x"' }, false],
  ];
  for (const [name, verdict, final] of rows) {
    const v = expensiveVerdict(verdict);
    if (final)
      t.same(v, { kind: 'retry', reason: (verdict as { reason: string }).reason, health: false, final: true }, name);
    else t.equal(v, verdict, `${name}: as for any call`);
  }
});

t.test('resolveBlocks: block parameter to requirement', async (t) => {
  const ctx: BlockContext = { head: 1000, maxLagBlocks: 5, clientKey: '10.0.0.1', recentBlocks: 128 };
  const HASH = `0x${'ab'.repeat(32)}`;
  const rows: { method: string; params: unknown[]; requirement?: object; params2?: unknown[]; error?: RegExp }[] = [
    { method: 'eth_getBalance', params: ['0x0', 'latest'], requirement: { minHead: 1000 }, params2: ['0x0', '0x3e8'] },
    { method: 'eth_getBalance', params: ['0x0'], requirement: { minHead: 1000 }, params2: ['0x0', '0x3e8'] },
    { method: 'eth_getBalance', params: ['0x0', null], requirement: { minHead: 1000 }, params2: ['0x0', '0x3e8'] },
    { method: 'eth_call', params: [{ to: '0x0' }], requirement: { minHead: 1000 }, params2: [{ to: '0x0' }, '0x3e8'] },
    { method: 'eth_getBalance', params: [], requirement: { minHead: 1000 } },
    { method: 'eth_getBlockByNumber', params: [], requirement: { minHead: 1000 } },
    { method: 'eth_getBalance', params: ['0x0', '0x3e0'], requirement: { minHead: 992, stateAt: 992 } },
    {
      method: 'eth_getBalance',
      params: ['0x0', '0x10'],
      requirement: { minHead: 16, capability: 'archive', stateAt: 16 },
    },
    { method: 'eth_getBlockByNumber', params: ['0x10', false], requirement: { minHead: 16, capability: 'archive' } },
    { method: 'eth_getBalance', params: ['0x0', '0x7d0'], requirement: { minHead: 1000, stateAt: 1000 } },
    { method: 'eth_getBalance', params: ['0x0', 'pending'], requirement: { maxLag: 5, stickyKey: '10.0.0.1' } },
    { method: 'eth_getBalance', params: ['0x0', 'earliest'], requirement: { capability: 'archive', stateAt: 0 } },
    { method: 'eth_getBlockByNumber', params: ['earliest', false], requirement: { capability: 'archive' } },
    { method: 'eth_getBalance', params: ['0x0', 'safe'], requirement: { minHead: 1000 } },
    { method: 'eth_getBalance', params: ['0x0', 'finalized'], requirement: { minHead: 1000 } },
    { method: 'eth_getBlockByNumber', params: ['finalized', false], requirement: { minHead: 1000 } },
    { method: 'eth_getBalance', params: ['0x0', HASH], requirement: { maxLag: 5 } },
    { method: 'eth_getBalance', params: ['0x0', { blockHash: HASH }], requirement: { maxLag: 5 } },
    {
      method: 'eth_getBalance',
      params: ['0x0', { blockNumber: '0x3e0' }],
      requirement: { minHead: 992, stateAt: 992 },
    },
    { method: 'eth_getBlockReceipts', params: [HASH], requirement: { maxLag: 5 } },
    { method: 'eth_getBalance', params: ['0x0', '0x01'], error: /expected a block number, tag or hash/ },
    { method: 'eth_getBalance', params: ['0x0', 'newest'], error: /expected a block number/ },
    {
      method: 'eth_getBalance',
      params: ['0x0', { blockHash: '0x12' }],
      error: /expected a block number, tag, hash or \{blockHash\}/,
    },
    { method: 'eth_feeHistory', params: ['0x0', 'latest', []], error: /block count from 1 to 1024/ },
    { method: 'eth_feeHistory', params: ['0x401', 'latest', []], error: /block count/ },
    {
      method: 'eth_getLogs',
      params: [{ fromBlock: '0x3e0', toBlock: 'latest' }],
      requirement: { minHead: 1000 },
      params2: [{ fromBlock: '0x3e0', toBlock: '0x3e8' }],
    },
    { method: 'eth_getLogs', params: [{ blockHash: HASH }], requirement: { maxLag: 5 } },
    {
      method: 'eth_getLogs',
      params: [{ fromBlock: '0x3e0' }],
      requirement: { minHead: 1000 },
      params2: [{ fromBlock: '0x3e0', toBlock: '0x3e8' }],
    },
    {
      method: 'eth_getLogs',
      params: [{}],
      requirement: { minHead: 1000 },
      params2: [{ fromBlock: '0x3e8', toBlock: '0x3e8' }],
    },
    {
      method: 'eth_getLogs',
      params: [{ fromBlock: '0x3e0', toBlock: 'finalized' }],
      requirement: { minHead: 992, maxLag: 5 },
    },
    { method: 'eth_getLogs', params: ['x'], error: /expected a filter object/ },
    { method: 'eth_sendRawTransaction', params: ['0x02'], requirement: { maxLag: 5, stickyKey: '10.0.0.1' } },
    { method: 'eth_gasPrice', params: [], requirement: { maxLag: 5 } },
  ];
  for (const row of rows) {
    const r = resolveBlocks(METHODS[row.method]!, row.params, ctx);
    const name = `${row.method} ${JSON.stringify(row.params)}`;
    if (row.error) {
      t.ok(
        'code' in r && r.code === -32602 && row.error.test(r.message),
        `${name}: -32602 ${'code' in r ? r.message : 'no error'}`,
      );
      continue;
    }
    if ('code' in r) {
      t.fail(`${name}: ${r.message}`);
      continue;
    }
    t.same(r.requirement, row.requirement, name);
    t.same(r.params, row.params2 ?? row.params, `${name}: params`);
    t.equal(r.rewritten, row.params2 !== undefined, `${name}: rewritten`);
  }
});

t.test('resolveBlocks for a quorum read: tags pinned to one number, pending reported', async (t) => {
  // pinTags: the fleet's finalized height (990), which safe and finalized are pinned to.
  const ctx: BlockContext = { head: 1000, maxLagBlocks: 5, clientKey: '10.0.0.1', recentBlocks: 128, pinTags: 990 };
  const rows: { method: string; params: unknown[]; requirement: object; params2: unknown[]; pending?: true }[] = [
    {
      method: 'eth_getBalance',
      params: ['0x0', 'finalized'],
      requirement: { minHead: 990, stateAt: 990 },
      params2: ['0x0', '0x3de'],
    },
    {
      method: 'eth_getBalance',
      params: ['0x0', 'safe'],
      requirement: { minHead: 990, stateAt: 990 },
      params2: ['0x0', '0x3de'],
    },
    {
      method: 'eth_getBalance',
      params: ['0x0', { blockNumber: 'finalized' }],
      requirement: { minHead: 990, stateAt: 990 },
      params2: ['0x0', '0x3de'],
    },
    {
      method: 'eth_getBalance',
      params: ['0x0', 'earliest'],
      requirement: { minHead: 0, capability: 'archive', stateAt: 0 },
      params2: ['0x0', '0x0'],
    },
    {
      method: 'eth_getBlockByNumber',
      params: ['finalized', false],
      requirement: { minHead: 990 },
      params2: ['0x3de', false],
    },
    {
      method: 'eth_getBalance',
      params: ['0x0', 'pending'],
      requirement: { maxLag: 5, stickyKey: '10.0.0.1' },
      params2: ['0x0', 'pending'],
      pending: true,
    },
    {
      method: 'eth_getLogs',
      params: [{ fromBlock: 'safe', toBlock: 'latest' }],
      requirement: { minHead: 1000 },
      params2: [{ fromBlock: '0x3de', toBlock: '0x3e8' }],
    },
    {
      method: 'eth_getLogs',
      params: [{ fromBlock: '0x3e0', toBlock: 'pending' }],
      requirement: { minHead: 992, maxLag: 5 },
      params2: [{ fromBlock: '0x3e0', toBlock: 'pending' }],
      pending: true,
    },
  ];
  for (const row of rows) {
    const r = resolveBlocks(METHODS[row.method]!, row.params, ctx);
    const name = `${row.method} ${JSON.stringify(row.params)}`;
    if ('code' in r) {
      t.fail(`${name}: ${r.message}`);
      continue;
    }
    t.same(r.requirement, row.requirement, name);
    t.same(r.params, row.params2, `${name}: params`);
    t.equal(r.pending, row.pending, `${name}: pending`);
  }
});
