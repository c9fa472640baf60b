/**
 * A flood of `logs` notifications costs only the client that asked for it. One IP opens many
 * sockets, each with many `logs` subscriptions (some filters identical, some not), and one
 * transaction emits LOGS logs, which makes SOCKETS x PER_SOCKET x LOGS notifications for one block.
 * Meanwhile another client (its own thread, so the flood's reading does not delay its clock) calls
 * eth_blockNumber every 20 ms. Switchyard runs as its own process so its RSS is its own.
 * Pinned: the other client's worst wait stays far under the seconds the flood used to stall the
 * event loop; the per-IP subscription cap refuses the next subscription with -32005; every
 * subscription gets every log exactly once, in order; RSS stays bounded.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import t, { type Test } from 'tap';
import { startDevnet } from '../../src/devnet/index.js';
import { DEV_ADDRESS } from '../helpers/anvil.js';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { call, get } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket } from '../helpers/ws.js';
import { emitData, emitterInitCode, TOPIC } from './fixtures/emitter.js';

const SOCKETS = 20;
const PER_SOCKET = 20;
const LOGS = 1_000;
const MAX_PER_IP = SOCKETS * PER_SOCKET;

const rssMb = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** The other client: one eth_blockNumber every 20 ms until told to stop; reports each wait in ms. */
const OTHER_CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const waits = [];
const failures = [];
let stop = false;
parentPort.on('message', () => (stop = true));
const once = () => new Promise((resolve) => {
  const started = performance.now();
  const req = http.request(workerData.url, { method: 'POST', agent, headers: { 'content-type': 'application/json' }, timeout: 60000 }, (res) => {
    let body = '';
    res.on('data', (d) => (body += d));
    res.on('end', () => {
      waits.push(performance.now() - started);
      if (res.statusCode !== 200 || !body.includes('"result"')) failures.push(res.statusCode + ' ' + body.slice(0, 200));
      resolve();
    });
  });
  req.on('error', (err) => {
    waits.push(performance.now() - started);
    failures.push(String(err));
    resolve();
  });
  req.end('{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}');
});
(async () => {
  while (!stop) {
    await once();
    await new Promise((r) => setTimeout(r, 20));
  }
  parentPort.postMessage({ waits, failures });
})();
`;

interface OtherClient {
  stop(): Promise<{ waits: number[]; failures: string[] }>;
}

function otherClient(url: string): OtherClient {
  const worker = new Worker(OTHER_CLIENT, { eval: true, workerData: { url } });
  const done = new Promise<{ waits: number[]; failures: string[] }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    stop: async () => {
      worker.postMessage('stop');
      const r = await done;
      await worker.terminate();
      return r;
    },
  };
}

/**
 * The flooding client, in its own thread too (the devnet's node fronts answer on this test's event
 * loop, which reading the flood would otherwise starve): opens the sockets, subscribes, then checks
 * that every subscription gets the logs' loop counters 0, 1, 2, ... each once, as log indices too.
 */
const FLOODER = `
const { parentPort, workerData } = require('node:worker_threads');
const WebSocket = require('ws');
const { url, sockets, perSocket, filters } = workerData;
const next = new Map();
const bad = [];
let received = 0;
const open = (s) => new Promise((resolve, reject) => {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  ws.once('error', reject);
  ws.once('open', () => {
    ws.once('message', (data) => {
      for (const a of JSON.parse(data.toString())) if (typeof a.result === 'string') next.set(a.result, 0);
      ws.on('message', (data) => {
        received++;
        const m = JSON.parse(data.toString());
        const log = m.params && m.params.result;
        const want = m.params && next.get(m.params.subscription);
        if (m.method !== 'eth_subscription' || want === undefined || log.removed === true || Number.parseInt(log.data, 16) !== want || Number(log.logIndex) !== want) {
          if (bad.length < 5) bad.push(data.toString().slice(0, 300));
        } else next.set(m.params.subscription, want + 1);
      });
      resolve(ws);
    });
    ws.send(JSON.stringify(Array.from({ length: perSocket }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_subscribe', params: ['logs', filters[(s + i) % filters.length]] }))));
  });
});
(async () => {
  const all = await Promise.all(Array.from({ length: sockets }, (_, s) => open(s)));
  parentPort.postMessage({ subscriptions: next.size });
  parentPort.on('message', () => {
    parentPort.postMessage({ received, open: all.filter((ws) => ws.readyState === WebSocket.OPEN).length, counts: [...next.values()], bad });
  });
})().catch((err) => parentPort.postMessage({ error: String(err) }));
`;

interface FloodReport {
  received: number;
  open: number;
  counts: number[];
  bad: string[];
}

/** Starts the flooding client; resolves with the number of subscriptions it holds. */
async function flooder(
  t: Test,
  url: string,
  filters: object[],
): Promise<{ subscriptions: number; report(): Promise<FloodReport> }> {
  const worker = new Worker(FLOODER, {
    eval: true,
    workerData: { url, sockets: SOCKETS, perSocket: PER_SOCKET, filters },
  });
  t.teardown(() => worker.terminate());
  const ask = <T>(): Promise<T> =>
    new Promise((resolve, reject) => {
      worker.once('message', (m: T & { error?: string }) => (m.error ? reject(new Error(m.error)) : resolve(m)));
      worker.once('error', reject);
    });
  const { subscriptions } = await ask<{ subscriptions: number }>();
  return {
    subscriptions,
    report: () => {
      const r = ask<FloodReport>();
      worker.postMessage('report');
      return r;
    },
  };
}

t.test(
  '20 sockets x 20 logs subscriptions and 1,000 logs in one transaction: the other client is served',
  async (t) => {
    const devnet = await startDevnet({ nodes: 3, chainId: 186, blockTimeMs: 0, basePort: 0 });
    t.teardown(() => devnet.stop());
    const node0 = devnet.nodes()[0]!.url;
    const deployTx = (await call(node0, 'eth_sendTransaction', [{ from: DEV_ADDRESS, data: emitterInitCode() }]))
      .result as string;
    await devnet.mine();
    const address = (
      await waitFor(
        'deployment',
        async () => (await call(node0, 'eth_getTransactionReceipt', [deployTx])).result ?? undefined,
      )
    ).contractAddress as string;

    const file = join(t.testdir(), 'config.yaml');
    writeFileSync(
      file,
      `
server: { host: 127.0.0.1, port: 0, wsPort: null, shutdownDelayMs: 0 }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [${devnet
        .nodes()
        .map((n) => `{ name: ${n.name}, url: "${n.url}" }`)
        .join(', ')}]
routing: { headPollMs: 100 }
rateLimit: { perIp: null }
subscriptions: { maxPerConnection: 100, maxConnectionsPerIp: ${SOCKETS + 1}, maxPerIp: ${MAX_PER_IP} }
log: { level: info, requests: off }
`,
    );
    const cli = runCli(t, ['--config', file]);
    const pid = cli.proc.pid!;
    const ports = await waitFor('listening line', () => listeningPorts(cli.stdout()));
    const url = `http://127.0.0.1:${ports.http}`;
    await waitFor('ready', async () => (await get(`http://127.0.0.1:${ports.admin}/ready?upstreams=1`)).status === 200);

    // Four filters that all match every log, each used by many subscriptions.
    const filters = [
      {},
      { address },
      { address, topics: [TOPIC] },
      { topics: [[TOPIC, `0x${'bb'.padStart(64, '0')}`]] },
    ];
    const flood = await flooder(t, url.replace('http', 'ws'), filters);
    t.equal(flood.subscriptions, MAX_PER_IP, `${MAX_PER_IP} subscriptions made from one IP`);

    // The per-IP cap: a socket holding none is refused too, and stays open.
    const extra = await openSocket(t, url.replace('http', 'ws'));
    const refused = await extra.ask('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["logs"]}');
    t.equal(refused.error?.code, -32005, `over subscriptions.maxPerIp: -32005 (${refused.error?.message})`);
    t.equal(
      (await extra.ask('{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}')).result,
      '0xba',
      'the refused socket stays open',
    );

    const startRss = rssMb(pid);
    let peakRss = startRss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(pid))), 100);
    t.teardown(() => clearInterval(sampler));
    const other = otherClient(url);
    await new Promise((r) => setTimeout(r, 200)); // a few calls before the flood, for a baseline
    const started = Date.now();
    const tx = (
      await call(node0, 'eth_sendTransaction', [
        { from: DEV_ADDRESS, to: address, data: emitData(LOGS), gas: '0x1c9c380' },
      ])
    ).result as string;
    await devnet.mine();
    const receipt = await waitFor(
      'the flood receipt',
      async () => (await call(node0, 'eth_getTransactionReceipt', [tx])).result ?? undefined,
    );
    t.equal(receipt.logs.length, LOGS, `one transaction emitted ${LOGS} logs`);
    let report = await flood.report();
    const want = MAX_PER_IP * LOGS;
    while (report.received < want && report.open === SOCKETS && Date.now() - started < 30_000) {
      await new Promise((r) => setTimeout(r, 100));
      report = await flood.report();
    }
    const deliveredMs = Date.now() - started;
    const { waits, failures } = await other.stop();
    clearInterval(sampler);

    const sorted = [...waits].sort((a, b) => a - b);
    const p99 = sorted[Math.floor(sorted.length * 0.99)] ?? NaN;
    const max = sorted.at(-1) ?? NaN;
    t.comment(
      `${report.received} notifications in ${deliveredMs} ms; other client: ${waits.length} calls, p99 ${p99.toFixed(0)} ms, max ${max.toFixed(0)} ms, ${failures.length} failed; RSS ${startRss.toFixed(0)} -> peak ${peakRss.toFixed(0)} MB`,
    );
    t.same(failures, [], 'the other client: no call failed');
    t.ok(max < 2_000, `the other client's worst wait: ${max.toFixed(0)} ms (under 2 s)`);
    t.same(report.bad, [], 'nothing but well-formed notifications, in order, for known subscriptions');
    t.equal(report.open, SOCKETS, 'every flooding socket is still open');
    t.equal(
      report.counts.filter((n) => n === LOGS).length,
      MAX_PER_IP,
      'every subscription got every log exactly once, in order',
    );
    t.ok(peakRss - startRss < 200, `RSS ${startRss.toFixed(0)} -> peak ${peakRss.toFixed(0)} MB (under +200 MB)`);
  },
);
