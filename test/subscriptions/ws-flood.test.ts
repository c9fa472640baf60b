/**
 * One WebSocket client floods frames at the built CLI in front of three real anvil nodes (issue 22,
 * item 2), while another client on another address sends one call every 50 ms over HTTP:
 *   - a slow frame (eth_sendRawTransactionSync of a nonce-gap transaction, which anvil holds)
 *     followed by a flood of small frames: answers wait for the slow one's;
 *   - a slow frame followed by frames with 4 MiB string ids, and by 1 MiB frames with short ids;
 *   - a flood of small frames alone.
 * Measured throughout: the Switchyard process's RSS (/proc), that it lives, the other client's
 * failures and latency, and that every answer the flooder got carries its own id, in order.
 * The flood stops early when RSS passes a ceiling, so a regression fails without taking the
 * machine down with it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { startAnvil } from '../helpers/anvil.js';
import { signTransfer } from '../helpers/transfer.js';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { get } from '../helpers/rpc.js';
import { waitFor } from '../helpers/wait.js';

const rssMb = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
/** RSS growth the assertions allow, and the ceiling past which a flood is stopped early. */
const RSS_MARGIN_MB = 150;
const RSS_CEILING_MB = 450;
const FLOODER = '127.0.0.2';
const OTHER = '127.0.0.3';

/** A transaction nonces ahead of the account (a gap): anvil holds eth_sendRawTransactionSync of it. */
const nonceGap = signTransfer;

/**
 * The other client's loop, in a worker thread of its own, so the floods this test sends do not
 * delay its event loop: the latencies it measures are Switchyard's. One call every 50 ms over HTTP
 * from its own address; each call asks for a new address's balance, so none is a cache hit.
 */
const OTHER_CLIENT = `
const { request, Agent } = require('node:http');
const { workerData, parentPort } = require('node:worker_threads');
const { port, localAddress, count } = workerData;
const calls = new Int32Array(count);
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const latencies = [];
const failures = [];
let running = true;
let n = 0;
parentPort.on('message', () => (running = false));
const one = () => new Promise((resolve) => {
  n++;
  const body = JSON.stringify({ jsonrpc: '2.0', id: n, method: 'eth_getBalance', params: ['0x' + n.toString(16).padStart(40, '0'), 'latest'] });
  const start = performance.now();
  const req = request({ host: '127.0.0.1', port, localAddress, agent, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
    let text = '';
    res.on('data', (d) => (text += d.toString()));
    res.on('end', () => {
      latencies.push(performance.now() - start);
      if (res.statusCode !== 200 || !/"result":"0x/.test(text)) failures.push(res.statusCode + ' ' + text.slice(0, 200));
      Atomics.add(calls, 0, 1);
      resolve();
    });
  });
  req.setTimeout(15000, () => req.destroy(new Error('no answer in 15 s')));
  req.on('error', (err) => { failures.push(err.message); Atomics.add(calls, 0, 1); resolve(); });
  req.end(body);
});
(async () => {
  while (running) {
    const next = performance.now() + 50;
    await one();
    await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
  }
  agent.destroy();
  parentPort.postMessage({ latencies, failures });
})();
`;

function otherClient(port: number): { calls(): number; stop(): Promise<{ latencies: number[]; failures: string[] }> } {
  const count = new SharedArrayBuffer(4);
  const calls = new Int32Array(count);
  const worker = new Worker(OTHER_CLIENT, { eval: true, workerData: { port, localAddress: OTHER, count } });
  const done = new Promise<{ latencies: number[]; failures: string[] }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    calls: () => Atomics.load(calls, 0),
    stop: async () => {
      worker.postMessage('stop');
      const seen = await done;
      await worker.terminate();
      return seen;
    },
  };
}

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};

/** An answer's id text, cut at 32 characters (a 4 MiB id is known by its start). */
const idOf = (head: string): string => /^\{"jsonrpc":"2\.0","id":([^,]{1,32})/.exec(head)?.[1] ?? '?';

/** The flooding socket: ids of the answers it got, in arrival order. */
async function flooder(t: Test, url: string): Promise<{ ws: WebSocket; ids: string[]; closed: Promise<number> }> {
  const ws = new WebSocket(url, { perMessageDeflate: false, localAddress: FLOODER, maxPayload: 64 * 1024 * 1024 });
  t.teardown(() => ws.terminate());
  const ids: string[] = [];
  ws.on('message', (data: Buffer) => ids.push(idOf(data.subarray(0, 64).toString())));
  ws.on('error', () => undefined);
  const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return { ws, ids, closed };
}

/**
 * Sends frames as fast as the socket takes them (never more than 1 MiB waiting in the client),
 * until `count` are sent, `ms` passed, the socket closed or the process RSS passed the ceiling.
 */
async function flood(
  ws: WebSocket,
  frame: (i: number) => string | Buffer,
  count: number,
  ms: number,
  pid: number,
): Promise<number> {
  const end = Date.now() + ms;
  let i = 0;
  while (i < count && Date.now() < end && ws.readyState === WebSocket.OPEN && rssMb(pid) < RSS_CEILING_MB) {
    if (ws.bufferedAmount > 1 << 20) {
      await new Promise((r) => setTimeout(r, 5));
      continue;
    }
    for (const stop = Math.min(count, i + 200); i < stop && ws.bufferedAmount <= 1 << 20; i++)
      ws.send(frame(i), { binary: false });
    await new Promise((r) => setImmediate(r));
  }
  return i;
}

/** Highest RSS seen while `work` runs, sampled every 50 ms. */
async function peakRss<T>(pid: number, work: () => Promise<T>): Promise<{ value: T; peak: number }> {
  let peak = rssMb(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMb(pid));
    } catch {
      // the process is gone: the liveness check says so
    }
  }, 50);
  try {
    return { value: await work(), peak: Math.max(peak, rssMb(pid)) };
  } finally {
    clearInterval(timer);
  }
}

/** The ids a flooder must have got: its own, in the order sent, with no gap (a prefix of `sent`). */
function inOrder(ids: string[], sent: string[]): boolean {
  return ids.length <= sent.length && ids.every((id, k) => id === sent[k]!.slice(0, 32));
}

t.test('a WebSocket flood costs only its sender', async (t) => {
  // Three plain anvil nodes (same genesis, nothing mined): the devnet's fronts would run in this
  // process, whose event loop the floods keep busy, and the other client's calls pass through them.
  const nodes = await Promise.all([0, 1, 2].map(() => startAnvil()));
  t.teardown(() => Promise.all(nodes.map((n) => n.stop())));
  const file = join(t.testdir(), 'config.yaml');
  // The shipped defaults (rate limits included), except ports and a short wait for the
  // held transaction, so the slow frames are answered soon after the floods.
  writeFileSync(
    file,
    `
server: { host: 127.0.0.1, port: 0, wsPort: null }
admin: { host: 127.0.0.1, port: 0 }
upstreams: [ ${nodes.map((n, k) => `{ name: node-${k}, url: "${n.url}" }`).join(', ')} ]
routing: { sendRawTransactionSyncTimeoutMs: 10000 }
log: { level: info }
uptime: { store: null }
`,
  );
  const cli = runCli(t, ['--config', file]);
  const pid = cli.proc.pid!;
  const ports = await waitFor('listening line', () => listeningPorts(cli.stdout()));
  const url = `ws://127.0.0.1:${ports.http}`;
  await waitFor('ready', async () => (await get(`http://127.0.0.1:${ports.admin}/ready?upstreams=1`)).status === 200);
  const alive = (): boolean => cli.proc.exitCode === null && cli.proc.signalCode === null;

  // The other client alone, for reference.
  const alone = otherClient(ports.http);
  await waitFor('40 reference calls', () => alone.calls() >= 40);
  const reference = await alone.stop();
  t.same(reference.failures, [], 'the other client alone: no failure');
  const start = rssMb(pid);
  t.comment(
    `alone: ${reference.latencies.length} calls, p50 ${quantile(reference.latencies, 0.5).toFixed(1)} ms, p99 ${quantile(reference.latencies, 0.99).toFixed(1)} ms; RSS ${start.toFixed(0)} MB`,
  );

  await t.test('slow frames, then floods of small frames, of 4 MiB ids, of 1 MiB frames with short ids', async (t) => {
    // Three sockets from the flooder's address, each behind its own held transaction (10 s).
    const smallIds = (i: number): string => String(i);
    const pad = (i: number): string => String(i).padStart(8, '0');
    const bigIds = (i: number): string => `"big-${pad(i)}-${'x'.repeat(64)}`;
    // One 4 MiB frame whose id's number is written in place for each send (ws copies it to mask it).
    const bigFrame = Buffer.from(
      `{"jsonrpc":"2.0","id":"big-${pad(0)}-${'x'.repeat(4 * 1024 * 1024)}","method":"eth_chainId"}`,
    );
    const bigAt = bigFrame.indexOf('big-') + 4;
    const shortIds = (i: number): string => `"short-id-${pad(i)}"`;
    const floods = [
      {
        name: 'small frames',
        id: smallIds,
        frame: (i: number) => `{"jsonrpc":"2.0","id":${smallIds(i)},"method":"eth_chainId"}`,
        count: 300_000,
      },
      { name: '4 MiB ids', id: bigIds, frame: (i: number) => (bigFrame.write(pad(i), bigAt), bigFrame), count: 200 },
      {
        name: '1 MiB frames, short ids',
        id: shortIds,
        frame: (i: number) =>
          `{"jsonrpc":"2.0","id":${shortIds(i)},"method":"eth_chainId","params":["${'x'.repeat(1024 * 1024)}"]}`,
        count: 1_000,
      },
    ];
    const sockets = await Promise.all(floods.map(() => flooder(t, url)));
    const held = await Promise.all(floods.map((_, k) => nonceGap(5 + k)));
    const other = otherClient(ports.http);
    const { value: sent, peak } = await peakRss(pid, () =>
      Promise.all(
        floods.map((f, k) => {
          sockets[k]!.ws.send(
            `{"jsonrpc":"2.0","id":"slow","method":"eth_sendRawTransactionSync","params":["${held[k]}"]}`,
          );
          return flood(sockets[k]!.ws, f.frame, f.count, 8_000, pid);
        }),
      ),
    );
    const seen = await other.stop();
    t.ok(alive(), 'the process lives');
    t.ok(
      peak - start < RSS_MARGIN_MB,
      `RSS peak ${peak.toFixed(0)} MB (start ${start.toFixed(0)} MB); frames sent: ${floods.map((f, k) => `${sent[k]} ${f.name}`).join(', ')}`,
    );
    t.same(seen.failures, [], 'the other client: no failure');
    t.ok(
      quantile(seen.latencies, 0.99) < 2_000,
      `the other client: p50 ${quantile(seen.latencies, 0.5).toFixed(1)} ms, p99 ${quantile(seen.latencies, 0.99).toFixed(1)} ms`,
    );
    // The held transactions are answered (their wait ends after 10 s), then the answers behind them.
    await Promise.all(
      floods.map((f, k) => {
        const s = sockets[k]!;
        return waitFor(
          `${f.name}: the slow answer and one behind it`,
          () => s.ids.length > 1 || s.ws.readyState === WebSocket.CLOSED,
          { timeoutMs: 30_000 },
        );
      }),
    );
    for (const [k, f] of floods.entries()) {
      const s = sockets[k]!;
      const expected = ['"slow"', ...Array.from({ length: sent[k]! }, (_, i) => f.id(i))];
      const state = s.ws.readyState === WebSocket.CLOSED ? `closed ${await s.closed}` : 'open';
      t.ok(
        inOrder(s.ids, expected),
        `${f.name}: every answer has its own id, in order (${s.ids.length} answers, first ${s.ids.slice(0, 2).join(' ')}; ${state})`,
      );
      s.ws.terminate();
    }
  });

  await t.test('a flood of small frames without a slow one', async (t) => {
    const f = await flooder(t, url);
    const other = otherClient(ports.http);
    const small = (i: number): string => `{"jsonrpc":"2.0","id":${i},"method":"eth_chainId"}`;
    const { value: sent, peak } = await peakRss(pid, () => flood(f.ws, small, 100_000, 5_000, pid));
    const seen = await other.stop();
    t.ok(alive(), 'the process lives');
    t.ok(
      peak - start < RSS_MARGIN_MB,
      `RSS peak ${peak.toFixed(0)} MB (start ${start.toFixed(0)} MB), ${sent} frames sent`,
    );
    t.same(seen.failures, [], 'the other client: no failure');
    const p50 = quantile(seen.latencies, 0.5);
    const p99 = quantile(seen.latencies, 0.99);
    t.ok(
      p50 < 150 && p99 < 1_500,
      `the other client: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (alone: p50 ${quantile(reference.latencies, 0.5).toFixed(1)} ms)`,
    );
    await waitFor('answers', () => f.ids.length > 0, { timeoutMs: 20_000 });
    t.ok(
      inOrder(
        f.ids,
        Array.from({ length: sent }, (_, i) => String(i)),
      ),
      `every answer has its own id, in order (${f.ids.length} of ${sent})`,
    );
  });

  t.ok(alive(), 'the process lives at the end');
  t.equal((await get(`http://127.0.0.1:${ports.admin}/health`)).status, 200, 'and answers /health');
});
