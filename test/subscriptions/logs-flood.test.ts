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
import t from 'tap';
import { startDevnet } from '../../src/devnet/index.js';
import { DEV_ADDRESS } from '../helpers/anvil.js';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { call, get } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';
import { openSocket, type TestSocket } from '../helpers/ws.js';

const SOCKETS = 20;
const PER_SOCKET = 20;
const LOGS = 1_000;
const MAX_PER_IP = SOCKETS * PER_SOCKET;

/** The topic every log carries (PUSH1 0xaa as a 32-byte word). */
const TOPIC = `0x${'aa'.padStart(64, '0')}`;

/**
 * A contract whose call emits N logs (N = the first calldata word), each LOG1(TOPIC) with the
 * loop counter as data: i = 0; while (i < N) { mstore(0, i); log1(0, 32, TOPIC); i++ }.
 */
function emitterInitCode(): string {
  const runtime =
    '600035' + '6000' + // N = calldataload(0); i = 0
    '5b' + '8181' + '10' + '15' + '601e' + '57' + // 0x05: loop: if !(i < N) jump end
    '80' + '600052' + // mstore(0, i)
    '60aa' + '6020' + '6000' + 'a1' + // log1(0, 32, TOPIC)
    '600101' + '600556' + // i++; jump loop
    '5b00'; // 0x1e: end: stop
  const len = runtime.length / 2;
  return `0x60${len.toString(16).padStart(2, '0')}80600b6000396000f3${runtime}`;
}

const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

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

/** Per subscription: the loop counters of the logs received, in arrival order. */
function receive(ws: TestSocket, got: Map<string, number[]>, bad: string[]): void {
  ws.socket.removeAllListeners('message');
  ws.socket.on('message', (data) => {
    const m = JSON.parse(data.toString());
    if (m.method !== 'eth_subscription') return void bad.push(`not a notification: ${data.toString().slice(0, 200)}`);
    const seen = got.get(m.params.subscription);
    const log = m.params.result;
    if (seen === undefined || log.removed === true || Number(log.logIndex) !== Number.parseInt(log.data, 16)) bad.push(data.toString().slice(0, 300));
    else seen.push(Number.parseInt(log.data, 16));
  });
}

t.test('20 sockets x 20 logs subscriptions and 1,000 logs in one transaction: the other client is served', async (t) => {
  const devnet = await startDevnet({ nodes: 3, chainId: 186, blockTimeMs: 0, basePort: 0 });
  t.teardown(() => devnet.stop());
  const node0 = devnet.nodes()[0]!.url;
  const deployTx = (await call(node0, 'eth_sendTransaction', [{ from: DEV_ADDRESS, data: emitterInitCode() }])).result as string;
  await devnet.mine();
  const address = (await waitFor('deployment', async () => (await call(node0, 'eth_getTransactionReceipt', [deployTx])).result ?? undefined)).contractAddress as string;

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
  await waitFor('ready', async () => (await get(`http://127.0.0.1:${ports.admin}/ready`)).status === 200);

  // Four filters that all match every log, each used by many subscriptions.
  const filters = [{}, { address }, { address, topics: [TOPIC] }, { topics: [[TOPIC, `0x${'bb'.padStart(64, '0')}`]] }];
  const got = new Map<string, number[]>();
  const bad: string[] = [];
  const sockets = await Promise.all(Array.from({ length: SOCKETS }, () => openSocket(t, url.replace('http', 'ws'))));
  await Promise.all(
    sockets.map(async (ws, s) => {
      const batch = Array.from({ length: PER_SOCKET }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_subscribe', params: ['logs', filters[(s + i) % filters.length]] }));
      const answers = (await ws.ask(JSON.stringify(batch))) as { result?: string }[];
      for (const a of answers) if (typeof a.result === 'string') got.set(a.result, []);
      receive(ws, got, bad);
    }),
  );
  t.equal(got.size, MAX_PER_IP, `${MAX_PER_IP} subscriptions made from one IP`);

  // The per-IP cap: a socket holding none is refused too, and stays open.
  const extra = await openSocket(t, url.replace('http', 'ws'));
  const refused = await extra.ask('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["logs"]}');
  t.equal(refused.error?.code, -32005, `over subscriptions.maxPerIp: -32005 (${refused.error?.message})`);
  t.equal((await extra.ask('{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}')).result, '0xba', 'the refused socket stays open');

  const startRss = rssMb(pid);
  let peakRss = startRss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(pid))), 100);
  t.teardown(() => clearInterval(sampler));
  const other = otherClient(url);
  await new Promise((r) => setTimeout(r, 200)); // a few calls before the flood, for a baseline
  const started = Date.now();
  const tx = (await call(node0, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: address, data: `0x${LOGS.toString(16).padStart(64, '0')}`, gas: '0x1c9c380' }])).result as string;
  await devnet.mine();
  const receipt = await waitFor('the flood receipt', async () => (await call(node0, 'eth_getTransactionReceipt', [tx])).result ?? undefined);
  t.equal(receipt.logs.length, LOGS, `one transaction emitted ${LOGS} logs`);
  const total = (): number => [...got.values()].reduce((n, l) => n + l.length, 0);
  await waitFor(`${MAX_PER_IP * LOGS} notifications`, () => total() >= MAX_PER_IP * LOGS || sockets.every((s) => s.socket.readyState !== s.socket.OPEN), {
    timeoutMs: 30_000,
  }).catch(() => undefined);
  const deliveredMs = Date.now() - started;
  const { waits, failures } = await other.stop();
  clearInterval(sampler);

  const sorted = [...waits].sort((a, b) => a - b);
  const p99 = sorted[Math.floor(sorted.length * 0.99)] ?? NaN;
  const max = sorted.at(-1) ?? NaN;
  t.comment(
    `${total()} notifications in ${deliveredMs} ms; other client: ${waits.length} calls, p99 ${p99.toFixed(0)} ms, max ${max.toFixed(0)} ms, ${failures.length} failed; RSS ${startRss.toFixed(0)} -> peak ${peakRss.toFixed(0)} MB`,
  );
  t.same(failures, [], 'the other client: no call failed');
  t.ok(max < 2_000, `the other client's worst wait: ${max.toFixed(0)} ms (under 2 s)`);
  t.same(bad, [], 'nothing but well-formed notifications for known subscriptions');
  const want = Array.from({ length: LOGS }, (_, i) => i);
  const complete = [...got.values()].filter((l) => l.length === LOGS && l.every((v, i) => v === want[i])).length;
  t.equal(complete, MAX_PER_IP, 'every subscription got every log exactly once, in order');
  t.ok(peakRss - startRss < 200, `RSS ${startRss.toFixed(0)} -> peak ${peakRss.toFixed(0)} MB (under +200 MB)`);
});
