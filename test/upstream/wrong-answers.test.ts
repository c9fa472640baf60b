/**
 * Answers that are not answers to what was asked, from a fake node beside a real anvil (a real
 * node does not send them): a single call answered with another call's id, a block asked by number
 * answered with another block, a block by hash, a transaction and a receipt answered with another
 * hash. The fake node is weighted to get nearly every call; it forwards everything else to the
 * anvil. Asserted: every answer a client gets is the anvil's own; the fake node was asked (so the
 * test can fail) and its wrong answers counted as wrong answers; once the fake node answers right
 * again the same calls (cached by then) are still the anvil's answers.
 */
import t from 'tap';
import { DEV_ADDRESS, DEV_KEY, startAnvil } from '../helpers/anvil.js';
import { startFakeNode, type FakeAnswer } from '../helpers/fake-node.js';
import { call, get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { Wallet } from 'ethers';

const OTHER_HASH = `0x${'ab'.repeat(32)}`;

t.test('a node answering with another id, another block or another hash is never served nor cached', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  // One transaction, then enough blocks that its block is finalized (anvil: head - 64).
  const wallet = new Wallet(DEV_KEY);
  const raw = await wallet.signTransaction({
    to: `0x${'11'.repeat(20)}`,
    value: 1n,
    nonce: 0,
    gasLimit: 21_000n,
    maxFeePerGas: 10n ** 10n,
    maxPriorityFeePerGas: 1n,
    chainId: 186n,
    type: 2,
  });
  const txHash = (await call(anvil.url, 'eth_sendRawTransaction', [raw])).result as string;
  await call(anvil.url, 'anvil_mine', ['0x50']);
  const block5 = (await call(anvil.url, 'eth_getBlockByNumber', ['0x5', false])).result as {
    hash: string;
    number: string;
  };
  const block6 = (await call(anvil.url, 'eth_getBlockByNumber', ['0x6', false])).result as { hash: string };

  let wrong = true;
  const forward = (method: string, params: unknown[]): FakeAnswer => ({
    defer: async () => {
      const r = await call(anvil.url, method, params);
      return r.error ? { error: r.error } : { result: r.result };
    },
  });
  const fake = await startFakeNode(t, (method, params): FakeAnswer => {
    if (!wrong) return forward(method, params);
    switch (method) {
      case 'eth_getBalance':
        return { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: 987_654, result: '0xdead' }) };
      case 'eth_getBlockByNumber':
        // Head polls ask `latest`/`finalized`: those are answered right, so the node stays routable.
        return params[0] === '0x5' ? forward(method, ['0x6', params[1]]) : forward(method, params);
      case 'eth_getBlockByHash':
        return params[0] === block5.hash ? forward(method, [block6.hash, params[1]]) : forward(method, params);
      case 'eth_getTransactionByHash':
      case 'eth_getTransactionReceipt':
        return {
          defer: async () => {
            const r = (await call(anvil.url, method, params)).result as Record<string, unknown>;
            return { result: { ...r, hash: OTHER_HASH, transactionHash: OTHER_HASH } };
          },
        };
      default:
        return forward(method, params);
    }
  });
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'anvil', url: anvil.url },
      // Heavily weighted: power of two choices sends it nearly every call it may take.
      { name: 'fake', url: fake.url, weight: 1000 },
    ],
    // Quarantine after wrong answers is test/routing/verified.test.ts's: here the node must stay asked.
    routing: {
      headPollMs: 100,
      breaker: { failureThreshold: 1000, cooldownMs: 1000 },
      verify: { quarantineAfter: 1000 },
    },
  });
  await waitFor('both upstreams healthy', async () =>
    (await get(`${sy.adminUrl}/status`)).json().upstreams.every((u: { state: string }) => u.state === 'healthy'),
  );

  const CALLS: [string, unknown[]][] = [
    ['eth_getBalance', [DEV_ADDRESS, '0x5']],
    ['eth_getBlockByNumber', ['0x5', false]],
    ['eth_getBlockByHash', [block5.hash, false]],
    ['eth_getTransactionByHash', [txHash]],
    ['eth_getTransactionReceipt', [txHash]],
  ];
  const truth = await Promise.all(CALLS.map(async ([m, p]) => JSON.stringify((await call(anvil.url, m, p)).result)));
  const ask = async (): Promise<string[]> => {
    const problems: string[] = [];
    for (let i = 0; i < 20; i++) {
      for (const [k, [method, params]] of CALLS.entries()) {
        const id = 1000 * i + k;
        const r = await post(sy.url, { jsonrpc: '2.0', id, method, params });
        const body = r.json() as { id: number; result?: unknown };
        if (body.id !== id || JSON.stringify(body.result) !== truth[k])
          problems.push(`${method}: ${r.text.slice(0, 160)}`);
      }
    }
    return problems;
  };
  const wrongBefore = fake.calls.length;
  const problems = await ask();
  const asked = new Set(fake.calls.slice(wrongBefore).map((c) => c.method));
  t.same(
    CALLS.map(([m]) => m).filter((m) => !asked.has(m)),
    [],
    'the fake node was asked every kind of call at least once',
  );
  t.same(problems.slice(0, 5), [], `every answer is the anvil's (${problems.length} not)`);
  const metrics = (await get(`${sy.adminUrl}/metrics`)).text;
  t.match(metrics, /switchyard_failovers_total\{reason="wrong_answer"\} [1-9]/, 'wrong answers counted as such');

  wrong = false;
  t.same(
    (await ask()).slice(0, 5),
    [],
    'nothing wrong was cached: the same calls, answered from the cache or the nodes, are right',
  );
});
