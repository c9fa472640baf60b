/**
 * `npm run bench`, second part: hit rate and upstream calls saved on a replay of a realistic mix.
 * A 3-node devnet (1 s blocks) with Switchyard in front; 200 simulated dapp clients each poll every
 * 500 ms with one batch: eth_blockNumber, eth_gasPrice, eth_getBalance(latest) of one of 20 popular
 * addresses, eth_getLogs over the last 10 blocks of a popular contract address, and the receipt of
 * a recent transaction; a sender submits a transfer every 500 ms meanwhile. Prints the calls
 * clients made, the calls that reached a node, and the cache hit rate from Switchyard's metrics.
 */
import { Wallet } from 'ethers';
import { Pool } from 'undici';
import { App } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log/logger.js';
import { startDevnet } from '../../src/devnet/index.js';
import { DEV_KEY } from '../helpers/anvil.js';

const CLIENTS = Number(process.env.BENCH_MIX_CLIENTS ?? 200);
const SECONDS = Number(process.env.BENCH_MIX_SECONDS ?? 20);
const POLL_MS = 500;
const ADDRESSES = Array.from({ length: 20 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}`);

function metric(text: string, re: RegExp): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = re.exec(line);
    if (m) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

async function main(): Promise<void> {
  const devnet = await startDevnet({ nodes: 3, chainId: 186, blockTimeMs: 1000, basePort: 0 });
  const config = validateConfig({
    upstreams: devnet.nodes().map((n) => ({ name: n.name, url: n.url })),
    server: { host: '127.0.0.1', port: 0, wsPort: null, maxInFlightPerIp: 100_000 },
    admin: { host: '127.0.0.1', port: 0 },
    rateLimit: { perIp: null },
    routing: { headPollMs: 250 },
    log: { level: 'warn' },
  });
  const app = await App.start(config, { logger: createLogger('warn'), processMetrics: false });
  const url = `http://127.0.0.1:${app.ports.http}`;
  const admin = `http://127.0.0.1:${app.ports.admin}`;
  const pool = new Pool(url, { connections: 100 });
  const post = async (body: unknown): Promise<any> => {
    const r = await pool.request({
      path: '/',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return r.body.json();
  };
  const wallet = new Wallet(DEV_KEY);
  let nonce = 0;
  const recent: string[] = [];
  let stop = false;
  let clientCalls = 0;
  const sender = (async () => {
    while (!stop) {
      const raw = await wallet.signTransaction({
        to: ADDRESSES[nonce % ADDRESSES.length],
        value: 1n,
        nonce,
        gasLimit: 21000,
        maxFeePerGas: 10n ** 10n,
        maxPriorityFeePerGas: 1n,
        chainId: 186,
        type: 2,
      });
      nonce++;
      const r = await post({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [raw] });
      if (typeof r.result === 'string') recent.unshift(r.result);
      recent.length = Math.min(recent.length, 10);
      await new Promise((res) => setTimeout(res, POLL_MS));
    }
  })();
  const before = await (await fetch(`${admin}/metrics`)).text();
  const client = async (i: number): Promise<void> => {
    await new Promise((res) => setTimeout(res, Math.random() * POLL_MS));
    while (!stop) {
      const head = Number((await post({ jsonrpc: '2.0', id: 0, method: 'eth_blockNumber' })).result);
      const batch = [
        { jsonrpc: '2.0', id: 1, method: 'eth_gasPrice' },
        { jsonrpc: '2.0', id: 2, method: 'eth_getBalance', params: [ADDRESSES[i % ADDRESSES.length], 'latest'] },
        {
          jsonrpc: '2.0',
          id: 3,
          method: 'eth_getLogs',
          params: [
            { fromBlock: `0x${Math.max(0, head - 10).toString(16)}`, toBlock: 'latest', address: ADDRESSES[i % 5] },
          ],
        },
        {
          jsonrpc: '2.0',
          id: 4,
          method: 'eth_getTransactionReceipt',
          params: [recent[i % Math.max(1, recent.length)] ?? `0x${'00'.repeat(32)}`],
        },
      ];
      await post(batch);
      clientCalls += 1 + batch.length;
      await new Promise((res) => setTimeout(res, POLL_MS));
    }
  };
  const started = Date.now();
  const clients = Array.from({ length: CLIENTS }, (_, i) => client(i));
  await new Promise((res) => setTimeout(res, SECONDS * 1000));
  stop = true;
  await Promise.all([...clients, sender]);
  const after = await (await fetch(`${admin}/metrics`)).text();
  const seconds = (Date.now() - started) / 1000;
  const delta = (re: RegExp): number => metric(after, re) - metric(before, re);
  const upstream = delta(/^switchyard_upstream_calls_total\{/);
  const hits = delta(/^switchyard_cache_lookups_total\{.*result="hit"/);
  const misses = delta(/^switchyard_cache_lookups_total\{.*result="miss"/);
  const coalesced = delta(/^switchyard_coalesced_calls_total/);
  const local = delta(/^switchyard_calls_total\{method="(eth_blockNumber|eth_chainId)"/);
  process.stdout.write(
    [
      `realistic mix: ${CLIENTS} dapp clients polling every ${POLL_MS} ms for ${seconds.toFixed(0)} s on a 3-node devnet (1 s blocks)`,
      `  client calls            ${clientCalls}`,
      `  answered locally        ${local} (eth_blockNumber)`,
      `  cache hits / lookups    ${hits} / ${hits + misses} = ${((hits / Math.max(1, hits + misses)) * 100).toFixed(1)}% hit rate`,
      `  coalesced               ${coalesced}`,
      `  calls reaching a node   ${upstream} (head polls included)`,
      `  upstream calls saved    ${(100 * (1 - upstream / Math.max(1, clientCalls))).toFixed(1)}%`,
      '',
    ].join('\n'),
  );
  await pool.close();
  await app.close();
  await devnet.stop();
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
