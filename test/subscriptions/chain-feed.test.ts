/**
 * newHeads and logs through node failures and a reorg. A contract emits an event in (nearly) every
 * block while a raw socket watches heads and logs. Faults: one node killed, another SIGSTOPped,
 * then both back: the heads seen are consecutive with no gap or duplicate and parentHash-linked,
 * and the logs seen equal eth_getLogs over the same range. A reorg made on a single anvil node:
 * logs of the dropped blocks come again with removed: true before the new chain's logs, and what
 * remains equals eth_getLogs afterwards.
 */
import t from 'tap';
import { id } from 'ethers';
import { startStack } from '../helpers/stack.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { DEV_ADDRESS, startAnvil } from '../helpers/anvil.js';
import { call } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket, type TestSocket } from '../helpers/ws.js';
import { pingBytecode } from '../clients/fixtures/contract.js';

interface Log {
  blockNumber: string;
  blockHash: string;
  logIndex: string;
  transactionHash: string;
  removed?: boolean;
}

const PING = id('ping(uint256)').slice(0, 10);
const pingData = (v: number): string => PING + v.toString(16).padStart(64, '0');
const key = (l: Log): string => `${l.blockHash}:${l.logIndex}`;

/** Deploys the Ping contract from the node's unlocked dev account; mines on demand when asked. */
async function deploy(url: string, mine: () => Promise<unknown>): Promise<string> {
  const tx = (await call(url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, data: pingBytecode() }])).result as string;
  await mine();
  const receipt = await waitFor(
    'deployment receipt',
    async () => (await call(url, 'eth_getTransactionReceipt', [tx])).result ?? undefined,
  );
  return receipt.contractAddress as string;
}

async function subscribe(ws: TestSocket, params: unknown[]): Promise<string> {
  const r = await ws.ask(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params }));
  return r.result as string;
}

function collect(
  ws: TestSocket,
  headsId: string,
  logsId: string,
): { heads: { number: string; hash: string; parentHash: string }[]; logs: Log[] } {
  const out = { heads: [] as { number: string; hash: string; parentHash: string }[], logs: [] as Log[] };
  ws.socket.on('message', (data) => {
    const m = JSON.parse(data.toString());
    if (m.method !== 'eth_subscription') return;
    if (m.params.subscription === headsId) out.heads.push(m.params.result);
    if (m.params.subscription === logsId) out.logs.push(m.params.result);
  });
  return out;
}

t.test('heads and logs through a killed and a stopped node', async (t) => {
  const { sy, devnet } = await startStack(t, {
    blockTimeMs: 400,
    config: { routing: { upstreamTimeoutMs: 1_000, headPollMs: 100 } },
  });
  const node0 = devnet.nodes()[0]!.url;
  const address = await deploy(node0, () => Promise.resolve());
  const ws = await openSocket(t, sy.url.replace('http', 'ws'));
  const seen = collect(ws, await subscribe(ws, ['newHeads']), await subscribe(ws, ['logs', { address }]));
  // An event in every block: a ping sent to a live node each time a head arrives.
  let stop = false;
  const pinger = (async () => {
    let last = 0;
    let v = 0;
    while (!stop) {
      if (seen.heads.length > last) {
        last = seen.heads.length;
        const live =
          devnet.nodes().find((n) => n.state === 'running' && n.index === 0) ??
          devnet.nodes().find((n) => n.state === 'running');
        if (live)
          await call(live.url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: address, data: pingData(++v) }]).catch(
            () => undefined,
          );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const blocks = async (n: number): Promise<void> => {
    const want = seen.heads.length + n;
    await waitFor(`${n} more heads`, () => seen.heads.length >= want, { timeoutMs: 60_000 });
  };
  await blocks(4);
  await devnet.kill(1);
  await blocks(5);
  const stopped = devnet.nodes()[2]!.pid!;
  process.kill(stopped, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(stopped, 'SIGCONT');
    } catch {
      // already gone
    }
  });
  await blocks(5);
  process.kill(stopped, 'SIGCONT');
  await devnet.restart(1);
  await blocks(6);
  stop = true;
  await pinger;
  const heads = seen.heads;
  const numbers = heads.map((h) => Number(h.number));
  t.ok(
    numbers.every((n, i) => i === 0 || n === numbers[i - 1]! + 1),
    `consecutive heads ${numbers[0]}..${numbers.at(-1)} (${numbers.length})`,
  );
  t.ok(
    heads.every((h, i) => i === 0 || h.parentHash === heads[i - 1]!.hash),
    'each head links to the one before',
  );
  // Logs arrive after their block's head: wait for the last head's logs, then compare with the chain.
  const from = numbers[0]!;
  const to = numbers.at(-1)!;
  const expected = (
    await call(sy.url, 'eth_getLogs', [
      { address, fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}` },
    ])
  ).result as Log[];
  await waitFor(
    'logs up to the last head',
    () => seen.logs.filter((l) => Number(l.blockNumber) <= to).length >= expected.length,
  );
  const got = seen.logs.filter((l) => Number(l.blockNumber) <= to && !l.removed);
  t.ok(expected.length >= 10, `${expected.length} events in ${to - from + 1} blocks`);
  t.same(got.map(key), expected.map(key), 'logs sent equal eth_getLogs over the range: none missed, none twice');
  t.notOk(
    seen.logs.some((l) => l.removed),
    'no reorg, nothing removed',
  );
});

t.test('a reorg: removed logs first, then the new chain', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const sy = await startSwitchyard(t, { upstreams: [{ name: 'solo', url: node.url }] });
  const address = await deploy(node.url, () => Promise.resolve());
  const ws = await openSocket(t, sy.url.replace('http', 'ws'));
  const seen = collect(ws, await subscribe(ws, ['newHeads']), await subscribe(ws, ['logs', { address }]));
  // One block per ping: anvil answers eth_sendTransaction before it mines, so on a busy machine the
  // next ping could join the same block; each waits for its receipt.
  const ping = async (v: number): Promise<void> => {
    const tx = (await call(node.url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: address, data: pingData(v) }]))
      .result as string;
    await waitFor(
      `ping ${v} mined`,
      async () => (await call(node.url, 'eth_getTransactionReceipt', [tx])).result ?? undefined,
    );
  };
  for (const v of [1, 2, 3]) await ping(v);
  await waitFor('three logs', () => seen.logs.length === 3);
  const dropped = seen.logs.slice(1);
  const top = Number((await call(node.url, 'eth_blockNumber')).result);
  await call(node.url, 'anvil_rollback', [2]);
  for (const v of [11, 12, 13]) await ping(v);
  const newTop = top + 1;
  await waitFor('the new chain head', () => seen.heads.some((h) => Number(h.number) === newTop));
  const expected = (
    await call(sy.url, 'eth_getLogs', [{ address, fromBlock: '0x0', toBlock: `0x${newTop.toString(16)}` }])
  ).result as Log[];
  await waitFor('the new chain logs', () => seen.logs.filter((l) => !l.removed).length >= 1 + (expected.length - 1));
  const removed = seen.logs.filter((l) => l.removed);
  t.same(
    removed.map(key).sort(),
    dropped.map(key).sort(),
    'every log of the dropped blocks re-sent with removed: true',
  );
  const firstNew = seen.logs.findIndex((l, i) => i >= 3 && !l.removed);
  t.ok(
    seen.logs.slice(3, firstNew).every((l) => l.removed) && firstNew === 3 + removed.length,
    'removals come before the new chain logs',
  );
  const live = new Map<string, Log>();
  for (const l of seen.logs) {
    if (l.removed) live.delete(key(l));
    else live.set(key(l), l);
  }
  t.same([...live.keys()], expected.map(key), 'what remains equals eth_getLogs on the new chain');
  const numbers = seen.heads.map((h) => Number(h.number));
  t.ok(
    numbers.includes(top - 1) && numbers.lastIndexOf(top - 1) > numbers.indexOf(top),
    `new chain heads sent from the fork: ${numbers.join(',')}`,
  );
});
