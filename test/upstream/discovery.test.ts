// Discovery (SPEC 4.8 "What a node can serve"): a real pruned anvil beside archive anvils of the
// same chain, each behind a counting proxy, with discovery on.
//
// What anvil 1.7.1 answers, checked by hand: started with `--prune-history 5` and mined to block 20,
// `eth_getBalance` of the zero address answers a balance at blocks 15..20 and, below 15, the error
// -32602 "BlockOutOfRangeError: block height is 20 but requested was 14" (so it keeps the state of
// its last N + 1 blocks); `eth_getCode`/`eth_call` at such a block answer the same error, while
// `eth_getBlockByNumber` of any block still answers the block, with the same hash as an archive
// node's. An archive anvil answers a balance at every block. Both answer
// `debug_traceBlockByNumber` with a call tracer (a result: the list of traces), and -32601
// "Method not found" for a method they do not have.

import t, { type Test } from 'tap';
import { DEV_ADDRESS, startAnvil, type AnvilNode } from '../helpers/anvil.js';
import { startCountingProxy, type CountingProxy } from '../helpers/counting-proxy.js';
import { startFakeNode } from '../helpers/fake-node.js';
import { call, get, post } from '../helpers/rpc.js';
import { startSwitchyard, type RunningSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const HEAD = 30;
const PRUNE = 5;
/** anvil keeps the state of its last PRUNE + 1 blocks (header above). */
const EARLIEST = HEAD - PRUNE;
const ZERO = '0x0000000000000000000000000000000000000000';
/** The method the fake node refuses. */
const METHOD = 'web3_clientVersion';
const GENESIS_TIME = 1_700_000_000;
const ARGS = ['--timestamp', String(GENESIS_TIME)];

interface Node {
  anvil: AnvilNode;
  proxy: CountingProxy;
}

/** The same empty blocks on every node, with explicit timestamps: the same hashes everywhere. */
async function mine(url: string, from: number, to: number): Promise<void> {
  for (let n = from; n <= to; n++) await call(url, 'evm_mine', [GENESIS_TIME + 12 * n]);
}

async function node(t: Test, args: string[] = []): Promise<Node> {
  const anvil = await startAnvil({ args: [...ARGS, ...args] });
  t.teardown(() => anvil.stop());
  await mine(anvil.url, 1, HEAD);
  return { anvil, proxy: await startCountingProxy(t, anvil.url) };
}

type Status = {
  name: string;
  state: string;
  earliestBlock: number | null;
  earliestBlockFrom: string | null;
  capabilities: Record<string, string>;
  unsupportedMethods: string[];
  discoveredAt: string | null;
};

async function statusOf(sy: RunningSwitchyard, name: string): Promise<Status> {
  const s = (await get(`${sy.adminUrl}/status`)).json() as { upstreams: Status[] };
  return s.upstreams.find((u) => u.name === name)!;
}

async function discovered(sy: RunningSwitchyard, name: string): Promise<Status> {
  return waitFor(`${name} discovered`, async () => {
    const s = await statusOf(sy, name);
    return s.discoveredAt !== null && s;
  });
}

let reads = 0;
/** A balance read no earlier read shares (answers are cached by address and block). */
const balanceAt = (n: number): unknown[] => [`0x${(++reads).toString(16).padStart(40, '0')}`, `0x${n.toString(16)}`];
const isBalanceRead = (p: unknown[]): boolean => p[0] !== ZERO;
const isProbe = (p: unknown[]): boolean => p[0] === ZERO;

async function cordon(sy: RunningSwitchyard, name: string, on: boolean): Promise<void> {
  const r = await post(`${sy.adminUrl}/upstreams/${name}/${on ? 'cordon' : 'uncordon'}`, {});
  if (r.status !== 200) throw new Error(`${on ? 'cordon' : 'uncordon'} ${name}: ${r.status} ${r.text}`);
}

t.test('a pruned node beside archive nodes', async (t) => {
  const [a, b, pruned] = await Promise.all([node(t), node(t), node(t, ['--prune-history', String(PRUNE)])]);
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'archive-a', url: a.proxy.url, discover: true },
      { name: 'archive-b', url: b.proxy.url, discover: true },
      { name: 'pruned', url: pruned.proxy.url, discover: true },
    ],
  });

  t.test('discovery finds the earliest block with state on each', async (t) => {
    const p = await discovered(sy, 'pruned');
    t.equal(p.earliestBlock, EARLIEST, `the pruned node's earliest block is ${EARLIEST}`);
    t.equal(p.earliestBlockFrom, 'discovered');
    t.same(p.capabilities, { debug: 'discovered' }, 'not archive; debug methods found');
    for (const name of ['archive-a', 'archive-b']) {
      const s = await discovered(sy, name);
      t.equal(s.earliestBlock, 0, `${name}: state from block 0`);
      t.same(s.capabilities, { archive: 'discovered', debug: 'discovered' }, `${name}: archive and debug`);
      t.same(s.unsupportedMethods, []);
    }
    t.equal(a.proxy.count('eth_getBalance', isProbe), 1, 'an archive node costs one probe: an answer at block 0');
    const probes = pruned.proxy.count('eth_getBalance', isProbe);
    const bound = 2 + Math.ceil(Math.log2(HEAD + 1));
    t.ok(probes > 2 && probes <= bound, `the pruned node: ${probes} probes, at most ${bound}`);
    t.equal(pruned.proxy.count('debug_traceBlockByNumber'), 1, 'one trace of its head block');
  });

  t.test('reads of state below its earliest block never reach the pruned node', async (t) => {
    const [mark, markA, markB] = [pruned.proxy.mark(), a.proxy.mark(), b.proxy.mark()];
    const answers = [];
    for (let i = 0; i < 40; i++) answers.push(await call(sy.url, 'eth_getBalance', balanceAt(i % EARLIEST)));
    t.same(
      answers.filter((r) => r.result === undefined),
      [],
      'every one answered with a balance',
    );
    t.equal(pruned.proxy.count('eth_getBalance', isBalanceRead, mark), 0, 'none reached the pruned node');
    t.equal(
      a.proxy.count('eth_getBalance', isBalanceRead, markA) + b.proxy.count('eth_getBalance', isBalanceRead, markB),
      40,
      'the archive nodes answered all of them',
    );
  });

  t.test('with only the pruned node routable, an old state read gets NO_UPSTREAM "none has the block"', async (t) => {
    await cordon(sy, 'archive-a', true);
    await cordon(sy, 'archive-b', true);
    t.teardown(async () => {
      await cordon(sy, 'archive-a', false);
      await cordon(sy, 'archive-b', false);
    });
    const mark = pruned.proxy.mark();
    const r = await call(sy.url, 'eth_getBalance', balanceAt(3));
    t.equal(r.error?.code, -32002, 'NO_UPSTREAM');
    t.equal(r.error?.data?.why, 'none has the block');
    const code = await call(sy.url, 'eth_call', [{ to: ZERO }, '0x4']);
    t.equal(code.error?.data?.why, 'none has the block', 'eth_call at an old block alike');
    t.equal(pruned.proxy.count('eth_getBalance', isBalanceRead, mark), 0, 'the pruned node was not asked');
    const block = await call(sy.url, 'eth_getBlockByNumber', ['0x3', false]);
    t.equal(block.result?.number, '0x3', 'an old block is no state: the pruned node serves it');
    const at = pruned.proxy.mark();
    const recent = await call(sy.url, 'eth_getBalance', [DEV_ADDRESS, `0x${EARLIEST.toString(16)}`]);
    const expected = (await call(a.anvil.url, 'eth_getBalance', [DEV_ADDRESS, 'latest'])).result;
    t.equal(recent.result, expected, 'a read at its earliest block it serves');
    t.equal(pruned.proxy.count('eth_getBalance', isBalanceRead, at), 1);
  });

  t.test('configured tags win; discover: false probes nothing', async (t) => {
    const markPruned = pruned.proxy.mark();
    const markA = a.proxy.mark();
    const sy2 = await startSwitchyard(t, {
      upstreams: [
        { name: 'archive-a', url: a.proxy.url, discover: false },
        { name: 'pruned', url: pruned.proxy.url, tags: ['archive'], discover: true },
      ],
    });
    const p = await discovered(sy2, 'pruned');
    t.equal(p.earliestBlock, 0, 'tagged archive: earliest block 0');
    t.equal(p.earliestBlockFrom, 'configured');
    t.same(p.capabilities, { archive: 'configured', debug: 'discovered' });
    t.equal(pruned.proxy.count('eth_getBalance', isProbe, markPruned), 0, 'no search on a node tagged archive');
    const s = await statusOf(sy2, 'archive-a');
    t.same(
      [s.earliestBlock, s.earliestBlockFrom, s.capabilities, s.discoveredAt],
      [null, null, {}, null],
      'discover: false: nothing known but its tags',
    );
    t.equal(a.proxy.count('eth_getBalance', isProbe, markA), 0, 'and it was not probed');
    t.equal(a.proxy.count('debug_traceBlockByNumber', undefined, markA), 0);
    // The tag says it has every block: an old read may go to it (and it answers its own error).
    await cordon(sy2, 'archive-a', true);
    const mark = pruned.proxy.mark();
    const r = await call(sy2.url, 'eth_getBalance', balanceAt(3));
    t.equal(pruned.proxy.count('eth_getBalance', isBalanceRead, mark), 1, 'the tagged node was asked');
    t.match(r.error?.message ?? '', /BlockOutOfRange/, 'and its answer is returned');
  });

  t.test('rediscovered when it comes back from an outage', async (t) => {
    const before = await statusOf(sy, 'pruned');
    t.equal(before.earliestBlock, EARLIEST);
    const port = pruned.anvil.port;
    await pruned.anvil.stop();
    await waitFor('pruned seen down', async () => (await statusOf(sy, 'pruned')).state !== 'healthy');
    // Back on the same address as an archive node of the same chain.
    const back = await startAnvil({ port, args: ARGS });
    t.teardown(() => back.stop());
    await mine(back.url, 1, HEAD);
    const after = await waitFor('pruned rediscovered', async () => {
      const s = await statusOf(sy, 'pruned');
      return s.state === 'healthy' && s.discoveredAt !== before.discoveredAt && s.earliestBlock === 0 && s;
    });
    t.same(after.capabilities, { archive: 'discovered', debug: 'discovered' }, 'now an archive node');
    const mark = pruned.proxy.mark();
    await cordon(sy, 'archive-a', true);
    await cordon(sy, 'archive-b', true);
    t.teardown(async () => {
      await cordon(sy, 'archive-a', false);
      await cordon(sy, 'archive-b', false);
    });
    const r = await call(sy.url, 'eth_getBalance', balanceAt(3));
    t.ok(r.result !== undefined, 'an old read is answered by it now');
    t.equal(pruned.proxy.count('eth_getBalance', isBalanceRead, mark), 1);
  });
});

t.test('a node answering -32601 for a method of the table: marked unsupported, the call fails over', async (t) => {
  const anvil = await startAnvil({ args: ARGS });
  t.teardown(() => anvil.stop());
  await mine(anvil.url, 1, 3);
  const proxy = await startCountingProxy(t, anvil.url);
  // Fake only in what no real node gives on demand: the same node's answers, but no web3_clientVersion
  // (a method of the table whose answers are never cached: each call reaches a node).
  const refusing = await startFakeNode(t, (method, params) =>
    method === METHOD
      ? { error: { code: -32601, message: 'Method not found' } }
      : {
          defer: async () => {
            const r = await call(anvil.url, method, params);
            return 'result' in r ? { result: r.result } : { error: r.error };
          },
        },
  );
  const sy = await startSwitchyard(t, {
    upstreams: [
      { name: 'anvil', url: proxy.url, discover: true },
      // Far the cheaper (selection cost is divided by weight): the first call goes to it.
      { name: 'refusing', url: refusing.url, discover: true, weight: 1000 },
    ],
  });
  await discovered(sy, 'refusing');
  const refused = (): number => refusing.calls.filter((c) => c.method === METHOD).length;
  const answered = (r: { result?: unknown }): boolean => typeof r.result === 'string' && r.result.startsWith('anvil');
  const answers = [];
  for (let i = 0; i < 20 && refused() === 0; i++) answers.push(await call(sy.url, METHOD));
  t.equal(refused(), 1, 'the refusing node got one');
  t.same(
    answers.filter((r) => !answered(r)),
    [],
    `all ${answers.length} calls answered by anvil (the refused one failed over)`,
  );
  const s = await statusOf(sy, 'refusing');
  t.same(s.unsupportedMethods, [METHOD], 'marked unsupported in /status');
  const later = [];
  for (let i = 0; i < 30; i++) later.push(await call(sy.url, METHOD));
  // A batch whose calls go together to the node chosen for them: the refused one goes its own way.
  const batch = await post(
    sy.url,
    [METHOD, 'eth_syncing', 'eth_protocolVersion'].map((method, id) => ({ jsonrpc: '2.0', id, method, params: [] })),
  );
  t.same(
    later.filter((r) => !answered(r)),
    [],
    'later calls answered',
  );
  const [version, ...others] = batch.json() as { result?: unknown }[];
  t.ok(answered(version!) && others.every((r) => r.result !== undefined), 'a batch with one of them answered');
  t.equal(refused(), 1, 'and none reached the refusing node again');

  await cordon(sy, 'anvil', true);
  const alone = await call(sy.url, METHOD);
  t.equal(alone.error?.code, -32601, 'when only nodes that refused it are left, the node answer stands');
  t.equal(refused(), 2, 'one node was asked');
});
