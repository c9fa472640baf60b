/**
 * `npm run bench` (= tsc, then node --import tsx test/bench/run.ts): the SPEC section 11 figures,
 * measured in one run on one machine, against one anvil (no block time: the head stays put).
 *   cache miss   Switchyard vs HAProxy vs the node direct: eth_getBalance / eth_getTransactionCount
 *                of a new address every call at "latest" (nothing a cache or coalescing could answer)
 *   batch        a batch of 25 such calls vs one call (cost ratio)
 *   hit path     Switchyard answering eth_chainId itself vs a bare node:http server answering a constant
 *   RSS          Switchyard's VmRSS with 1,000 idle keep-alive client connections open
 * Pinning (taskset, 2+ CPUs): the process under test (Switchyard, HAProxy or the bare server) on
 * CPU 0, wrk and anvil on CPU 1, so each proxy gets one core. wrk: 1 thread, 50 connections,
 * 2 s warm-up then 10 s measured; non-2xx and socket errors from wrk, and for Switchyard every call
 * that did not end in a result (its switchyard_calls_total), are reported as bad answers.
 * Scenarios run in BENCH_ROUNDS interleaved rounds (default 3); the tables give the median round,
 * so a burst of other work on the machine moves one round, not the ratio. CPU% is the process
 * under test's CPU time over the measured window (100% = its one core is the limit); CPU us/req
 * is that time per request, a cost figure that other load on the machine disturbs far less than
 * req/s, and the second set of ratios is computed from it.
 * Needs haproxy and wrk (Debian packages; installed when run as root). Not part of `npm test`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAnvil, type AnvilNode } from '../helpers/anvil.js';
import {
  badAnswers, cpuSeconds, distBuilt, ensureTools, luaScript, pin, rssMb, startBareNode, startHaproxy, startSwitchyardProcess,
  wrk, writeScript, type Proc, type WrkResult,
} from './tools.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP_SECONDS = 2;
const IDLE_CONNECTIONS = 1000;
const PINNED = availableParallelism() >= 2;
const PROXY_CPU = 0;
const LOAD_CPU = 1;
const CHAIN_ID_CALL = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';

function switchyardConfig(anvilUrl: string): Record<string, unknown> {
  return {
    chainId: 186,
    // keep-alive long enough for the idle-connection figure; in-flight caps above what 50
    // connections x 25-call batches put in flight, so the limits never answer instead of the node.
    server: { keepAliveTimeoutMs: 120_000, maxInFlight: 100_000, maxInFlightPerIp: 100_000 },
    upstreams: [{ name: 'anvil', url: anvilUrl }],
    rateLimit: { perIp: null },
    log: { level: 'warn' },
  };
}

interface Scenario { label: string; target: string; url: string; script: string; callsPerRequest: number; pid: number; adminUrl?: string }
interface Run { r: WrkResult; cpu: number; bad: number }
interface Row extends Scenario { runs: Run[]; median: Run }

async function measure(s: Scenario): Promise<Run> {
  const cpu = PINNED ? LOAD_CPU : undefined;
  await wrk(s.url, s.script, { connections: CONNECTIONS, seconds: WARMUP_SECONDS, cpu });
  const badBefore = s.adminUrl ? await badAnswers(s.adminUrl) : 0;
  const cpuBefore = cpuSeconds(s.pid);
  const started = performance.now();
  const r = await wrk(s.url, s.script, { connections: CONNECTIONS, seconds: SECONDS, cpu });
  const busy = (cpuSeconds(s.pid) - cpuBefore) / ((performance.now() - started) / 1000);
  const badCalls = s.adminUrl ? (await badAnswers(s.adminUrl)) - badBefore : 0;
  const bad = badCalls + r.non2xx > 0 || r.socketErrors !== 'none' ? `  ERRORS: ${badCalls} bad answers, ${r.non2xx} non-2xx, socket ${r.socketErrors}` : '';
  process.stdout.write(`  ${s.label.padEnd(28)} ${s.target.padEnd(11)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50.padStart(8)}  p99 ${r.p99.padStart(8)}  cpu ${(busy * 100).toFixed(0).padStart(3)}%${bad}\n`);
  return { r, cpu: busy, bad: badCalls + r.non2xx };
}

function medianRun(runs: Run[]): Run {
  const sorted = [...runs].sort((a, b) => a.r.rps - b.r.rps);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** Opens `n` keep-alive connections, each having made one call, and leaves them idle. */
async function openIdleConnections(url: string, n: number): Promise<Socket[]> {
  const { hostname, port } = new URL(url);
  const request = `POST / HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${CHAIN_ID_CALL.length}\r\n\r\n${CHAIN_ID_CALL}`;
  const sockets: Socket[] = [];
  const one = () =>
    new Promise<Socket>((resolve, reject) => {
      const s = connect(Number(port), hostname);
      let got = '';
      s.setEncoding('utf8');
      s.once('error', reject);
      s.on('data', (d: string) => {
        got += d;
        if (got.includes('"result"')) resolve(s);
      });
      s.once('connect', () => s.write(request));
    });
  for (let i = 0; i < n; i += 100) sockets.push(...(await Promise.all(Array.from({ length: Math.min(100, n - i) }, one))));
  return sockets;
}

async function rssFigure(url: string, adminUrl: string, pid: number): Promise<{ before: number; with: number; open: number; cacheMb: number }> {
  const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
  const cacheMb = Number(/^switchyard_cache_bytes(?:\{[^}]*\})? (\S+)$/m.exec(metrics)?.[1] ?? 0) / 2 ** 20;
  const before = rssMb(pid);
  const sockets = await openIdleConnections(url, IDLE_CONNECTIONS);
  await new Promise((r) => setTimeout(r, 2_000));
  const open = sockets.filter((s) => !s.destroyed && s.readyState === 'open').length;
  const withConnections = rssMb(pid);
  for (const s of sockets) s.destroy();
  return { before, with: withConnections, open, cacheMb };
}

function ratio(a: number, b: number): string {
  return b === 0 ? 'n/a' : (a / b).toFixed(2);
}

async function main(): Promise<number> {
  ensureTools();
  if (!distBuilt(ROOT)) throw new Error('dist/main.js is missing: run `npm run bench` (it builds first)');
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
  const stops: (() => Promise<void>)[] = [];
  let rows: Row[] = [];
  let rss: { fresh: Awaited<ReturnType<typeof rssFigure>>; loaded: Awaited<ReturnType<typeof rssFigure>> } | undefined;
  try {
    process.stdout.write(`switchyard bench: wrk -t1 -c${CONNECTIONS}, ${WARMUP_SECONDS}s warm-up + ${SECONDS}s each, ${ROUNDS} round(s); ${PINNED ? `proxy on CPU ${PROXY_CPU}, wrk + anvil on CPU ${LOAD_CPU}` : 'one CPU: nothing pinned'}\n`);
    const anvil: AnvilNode = await startAnvil();
    stops.push(() => anvil.stop());
    const sy = await startSwitchyardProcess(ROOT, dir, 'switchyard', switchyardConfig(anvil.url));
    stops.push(() => sy.stop());
    const ha = await startHaproxy(dir, anvil.port);
    stops.push(() => ha.stop());
    const bare = await startBareNode();
    stops.push(() => bare.stop());
    if (PINNED) {
      pin(anvil.pid, LOAD_CPU);
      for (const p of [sy, ha, bare] as Proc[]) pin(p.pid, PROXY_CPU);
    }

    const miss = writeScript(dir, 'miss', luaScript({ batch: 1 }));
    const miss25 = writeScript(dir, 'miss25', luaScript({ batch: 25 }));
    const hit = writeScript(dir, 'hit', luaScript({ constant: CHAIN_ID_CALL }));
    const hit25 = writeScript(dir, 'hit25', luaScript({ constant: `[${Array.from({ length: 25 }, (_, i) => CHAIN_ID_CALL.replace('"id":1', `"id":${i + 1}`)).join(',')}]` }));
    const scenarios: Scenario[] = [
      { label: 'miss single', target: 'anvil', url: anvil.url, script: miss, callsPerRequest: 1, pid: anvil.pid },
      { label: 'miss single', target: 'haproxy', url: ha.url, script: miss, callsPerRequest: 1, pid: ha.pid },
      { label: 'miss single', target: 'switchyard', url: sy.url, script: miss, callsPerRequest: 1, pid: sy.pid, adminUrl: sy.adminUrl },
      { label: 'miss batch25', target: 'anvil', url: anvil.url, script: miss25, callsPerRequest: 25, pid: anvil.pid },
      { label: 'miss batch25', target: 'haproxy', url: ha.url, script: miss25, callsPerRequest: 25, pid: ha.pid },
      { label: 'miss batch25', target: 'switchyard', url: sy.url, script: miss25, callsPerRequest: 25, pid: sy.pid, adminUrl: sy.adminUrl },
      { label: 'constant', target: 'bare-node', url: bare.url, script: hit, callsPerRequest: 1, pid: bare.pid },
      { label: 'eth_chainId (local answer)', target: 'switchyard', url: sy.url, script: hit, callsPerRequest: 1, pid: sy.pid, adminUrl: sy.adminUrl },
      { label: 'eth_chainId batch25', target: 'switchyard', url: sy.url, script: hit25, callsPerRequest: 25, pid: sy.pid, adminUrl: sy.adminUrl },
    ];
    const runs = new Map<Scenario, Run[]>(scenarios.map((s) => [s, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      process.stdout.write(`round ${round}/${ROUNDS}\n`);
      for (const s of scenarios) runs.get(s)!.push(await measure(s));
    }
    rows = scenarios.map((s) => ({ ...s, runs: runs.get(s)!, median: medianRun(runs.get(s)!) }));

    process.stdout.write(`RSS with ${IDLE_CONNECTIONS} idle keep-alive connections\n`);
    const loaded = await rssFigure(sy.url, sy.adminUrl, sy.pid);
    const fresh = await startSwitchyardProcess(ROOT, dir, 'switchyard-rss', switchyardConfig(anvil.url));
    stops.push(() => fresh.stop());
    if (PINNED) pin(fresh.pid, PROXY_CPU);
    rss = { fresh: await rssFigure(fresh.url, fresh.adminUrl, fresh.pid), loaded };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }

  const rps = (label: string, target: string) => rows.find((r) => r.label === label && r.target === target)?.median.r.rps ?? 0;
  // CPU microseconds per request, median over rounds (each round's CPU time / requests).
  const usPerReq = (label: string, target: string): number => {
    const runs = rows.find((r) => r.label === label && r.target === target)?.runs ?? [];
    const each = runs.map((x) => (x.r.rps > 0 ? (x.cpu / x.r.rps) * 1e6 : 0)).sort((a, b) => a - b);
    return each[Math.floor((each.length - 1) / 2)] ?? 0;
  };
  const sMiss = rps('miss single', 'switchyard');
  const hMiss = rps('miss single', 'haproxy');
  const dMiss = rps('miss single', 'anvil');
  const s25 = rps('miss batch25', 'switchyard');
  const d25 = rps('miss batch25', 'anvil');
  const sHit = rps('eth_chainId (local answer)', 'switchyard');
  const sHit25 = rps('eth_chainId batch25', 'switchyard');
  const bare = rps('constant', 'bare-node');
  const failed = rows.filter((row) => row.runs.some(({ r, bad }) => bad > 0 || r.socketErrors !== 'none'));

  const lines = [
    '',
    `median of ${ROUNDS} round(s); req/s range in brackets`,
    '',
    '| scenario | target | req/s | calls/s | p50 | p99 | cpu | CPU us/req | bad answers |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(({ label, target, callsPerRequest, runs, median: { r, cpu } }) => {
      const all = runs.map((x) => x.r.rps);
      const range = runs.length > 1 ? ` [${Math.min(...all).toFixed(0)}-${Math.max(...all).toFixed(0)}]` : '';
      const bad = runs.reduce((n, x) => n + x.bad, 0);
      return `| ${label} | ${target} | ${r.rps.toFixed(0)}${range} | ${(r.rps * callsPerRequest).toFixed(0)} | ${r.p50} | ${r.p99} | ${(cpu * 100).toFixed(0)}% | ${usPerReq(label, target).toFixed(0)} | ${bad} |`;
    }),
    '',
    '| ratio | value | target |',
    '|---|---:|---|',
    `| cache miss: switchyard / haproxy | ${ratio(sMiss, hMiss)} | >= 0.5 |`,
    `| cache miss: switchyard / anvil direct | ${ratio(sMiss, dMiss)} | |`,
    `| batch of 25 / one call, cost (switchyard, misses) | ${ratio(sMiss, s25)} | < 5 |`,
    `| batch of 25 / one call, cost (anvil direct, misses) | ${ratio(dMiss, d25)} | (the node's own) |`,
    `| batch of 25 / one call, cost (switchyard, local answers) | ${ratio(sHit, sHit25)} | |`,
    `| hit path: switchyard eth_chainId / bare node:http | ${ratio(sHit, bare)} | >= 0.9 |`,
    `| CPU per request, cache miss: switchyard / haproxy | ${ratio(usPerReq('miss single', 'switchyard'), usPerReq('miss single', 'haproxy'))} | (<= 2 matches 0.5x throughput) |`,
    `| CPU per request, batch of 25 / one call (switchyard, misses) | ${ratio(usPerReq('miss batch25', 'switchyard'), usPerReq('miss single', 'switchyard'))} | |`,
    `| CPU per request, batch of 25 / one call (switchyard, local answers) | ${ratio(usPerReq('eth_chainId batch25', 'switchyard'), usPerReq('eth_chainId (local answer)', 'switchyard'))} | |`,
    `| CPU per request, hit path: switchyard eth_chainId / bare node:http | ${ratio(usPerReq('eth_chainId (local answer)', 'switchyard'), usPerReq('constant', 'bare-node'))} | (<= 1.11 matches 0.9x) |`,
    `| RSS, fresh process: idle -> ${rss!.fresh.open} connections open (MB) | ${rss!.fresh.before.toFixed(1)} -> ${rss!.fresh.with.toFixed(1)} | <= 150 |`,
    `| RSS, after the runs above: idle -> ${rss!.loaded.open} connections open (MB; cache holds ${rss!.loaded.cacheMb.toFixed(1)} MB) | ${rss!.loaded.before.toFixed(1)} -> ${rss!.loaded.with.toFixed(1)} | <= 150 excl. cache |`,
    '',
  ];
  process.stdout.write(lines.join('\n'));
  if (failed.length > 0) {
    process.stdout.write(`\nruns with bad answers (figures not comparable): ${failed.map((r) => `${r.label}/${r.target}`).join(', ')}\n`);
    return 1;
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
