/**
 * `npm run bench` (= tsc, then node --import tsx test/bench/run.ts): the SPEC section 11 figures,
 * measured in one run on one machine, against one anvil past finality making a block every 2 s.
 *   miss        eth_getBalance of a new address every call at "latest" (nothing a cache or
 *               coalescing could answer): Switchyard vs HAProxy (1 thread) vs a Node pass-through
 *               (node:http + one undici Pool, bytes passed through) vs a Node TCP pipe (bytes
 *               passed unread) vs the node direct
 *   batch       a batch of 25 such calls: Switchyard vs HAProxy in front of the same node with the
 *               same batch (anvil's own batch cost bounds every proxy), vs the pass-through and
 *               the pipe, and vs one call
 *   hit         eth_getBlockByHash(genesis), answered from the cache, vs a bare node:http server
 *               answering the same bytes as a constant, vs the least a JSON-RPC server does
 *               (node:http, JSON.parse of the body, the constant result with the request's id),
 *               and vs the bare server doing BUSY_US of busy work per request: what a few
 *               microseconds of a proxy's own work cost in throughput on this machine
 *   local       eth_chainId, answered by Switchyard itself, vs a bare node:http server answering it
 *   latency     misses at 4 connections (unpaced), and misses paced at half of Switchyard's measured
 *               miss peak (wrk's delay(): connections x 1000 / (PACE_MS + latency) a second), each
 *               through HAProxy and through Switchyard in turn: the difference of their p99 is the
 *               latency Switchyard adds (SPEC 11: < 1 ms at both)
 *   RSS         the main process's VmRSS after each round (its scenarios are minutes of sustained
 *               load with the default cache); and with 1,000 idle keep-alive connections: fresh; after sustained
 *               misses with the cache off (`cache.maxBytes: 0`: the process without its cache), read
 *               after each of three sustained runs too, to show whether it keeps growing; and
 *               the main process after all the runs with the default cache (128 MiB), filled
 *               first with immutable answers (misses at a finalized block), whose difference to
 *               the cache-off process is what the cache costs in RSS
 * Nothing is pinned (but the two Switchyards tracing's side-by-side rounds compare): anvil needs
 * both cores to stay clearly faster than any proxy in front of it,
 * which is what makes the proxy the bottleneck. A run counts only when the node direct answers at
 * least NODE_MARGIN x HAProxy's rate (else the proxies are measuring the node, and the run says so)
 * and every answer of every scenario was HTTP 200 with the expected results and no error (wrk's Lua
 * script checks each one). wrk: 1 thread, BENCH_CONNECTIONS (32) connections, 1 s warm-up then
 * BENCH_SECONDS (5) measured; BENCH_ROUNDS (3) alternating rounds, medians.
 * CPU us/req: CPU time (user + system, all threads, /proc/PID/stat) of the process under test over
 * the measured window, per request: a cost figure that other load on the machine disturbs far less
 * than req/s. BENCH_CPU_PROF=DIR starts Switchyard with --cpu-prof into DIR; BENCH_ONLY=REGEX runs
 * only the scenarios whose "label target" matches; BENCH_BASELINE=DIR (another checkout, built, with
 * its node_modules) adds its Switchyard as target `baseline` beside every Switchyard row, so a
 * before/after comparison shares one run's conditions. BENCH_TRACING=1 adds tracing's cost: three
 * Switchyards with tracing on at the default sample rate (exporting to a collector stand-in in this
 * process that answers every export 200), three untraced twins and an untraced reference, started
 * together, the miss and the hit measured side by side (side-by-side.ts): the traced ones and the
 * twins in turn, each beside the reference (against BENCH_BASELINE, the `switchyard` rows show
 * what tracing off costs). Several of each, because one process's figure carries its own luck
 * (docs/benchmarks.md#method, `BENCH_TRACING`).
 * BENCH_QUICK=1: every duration and count cut to the least that still runs each scenario end to
 * end (1 s runs, one round, 100 idle connections): a check of the plumbing, whose figures mean
 * nothing; it never writes docs/benchmarks.md. A full run that counts (no BENCH_QUICK, no
 * BENCH_ONLY, every answer correct, the node clearly faster than HAProxy) rewrites the section of
 * docs/benchmarks.md between its markers with its tables; BENCH_WRITE=0 keeps the file as it is.
 * Needs haproxy and wrk (Debian packages; installed when run as root). Not part of `npm test`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hedgeBad, hedgeBench, hedgeRows } from './hedge.js';
import { geomean, sideBySide, type Loaded, type SideBySide } from './side-by-side.js';
import {
  answersWrong,
  cachedRead,
  CHAIN_ID_CALL,
  distBuilt,
  ensureTools,
  luaScript,
  measuredWrk,
  median,
  rpc,
  rssMb,
  startBareNode,
  startCollectorSink,
  startHaproxy,
  startMinimalJsonRpc,
  startNodePipe,
  startPassthrough,
  startQuietAnvil,
  startSwitchyardBuild,
  startSwitchyardProcess,
  switchyardConfig,
  writeScript,
  wrk,
  type WrkResult,
} from './tools.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const QUICK = process.env.BENCH_QUICK === '1';
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 1 : 5));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : null;
const CPU_PROF = process.env.BENCH_CPU_PROF;
const BASELINE = process.env.BENCH_BASELINE;
const TRACING = process.env.BENCH_TRACING === '1';
const WARMUP_SECONDS = 1;
const IDLE_CONNECTIONS = QUICK ? 100 : 1000;
/** How long immutable misses fill the default cache before its RSS is read. */
const FILL_SECONDS = QUICK ? 1 : 8;
/** The page whose marked section a full run that counts rewrites. */
const DOC = join(ROOT, 'docs/benchmarks.md');
const DOC_START = '<!-- bench:latest-run:start (written by test/bench/run.ts) -->';
const DOC_END = '<!-- bench:latest-run:end -->';
/** The busy work per request of the `bare+busy` hit reference. */
const BUSY_US = 10;
/** The node direct must answer at least this many times HAProxy's rate for the run to count. */
const NODE_MARGIN = 1.25;

interface Scenario {
  label: string;
  target: string;
  url: string;
  script: string;
  callsPerRequest: number;
  pid: number;
}
interface Run {
  r: WrkResult;
  cpu: number;
  usPerReq: number;
}
interface Row extends Scenario {
  runs: Run[];
  median: Run;
}

async function measure(s: Scenario): Promise<Run> {
  await wrk(s.url, s.script, { connections: CONNECTIONS, seconds: WARMUP_SECONDS });
  const { r, busy, usPerReq } = await measuredWrk(s.url, s.pid, s.script, {
    connections: CONNECTIONS,
    seconds: SECONDS,
  });
  const bad = answersWrong(r)
    ? `  BAD: ${r.bad} bad answers of ${r.checked}, ${r.non2xx} non-2xx, socket ${r.socketErrors}`
    : '';
  process.stdout.write(
    `  ${s.label.padEnd(12)} ${s.target.padEnd(11)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50.padStart(8)}  p99 ${r.p99.padStart(8)}  cpu ${(busy * 100).toFixed(0).padStart(3)}%  ${usPerReq.toFixed(1).padStart(6)} us/req${bad}\n`,
  );
  return { r, cpu: busy, usPerReq };
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
  for (let i = 0; i < n; i += 100)
    sockets.push(...(await Promise.all(Array.from({ length: Math.min(100, n - i) }, one))));
  return sockets;
}

interface RssFigure {
  before: number;
  with: number;
  open: number;
  cacheMb: number;
}

async function rssFigure(url: string, adminUrl: string, pid: number): Promise<RssFigure> {
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

const range = (xs: readonly number[]): string => `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`;

function ratio(a: number, b: number): string {
  return b === 0 || a === 0 ? 'n/a' : (a / b).toFixed(2);
}

async function main(): Promise<number> {
  ensureTools();
  if (!distBuilt(ROOT)) throw new Error('dist/main.js is missing: run `npm run bench` (it builds first)');
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
  const stops: (() => Promise<void>)[] = [];
  let rows: Row[] = [];
  /** The main process's RSS after each round: minutes of sustained load with the default cache. */
  const roundRss: number[] = [];
  let rss: { fresh: RssFigure; noCache: RssFigure; loaded: RssFigure; noCacheRuns: number[] } | undefined;
  let latency: Latency | undefined;
  let fewConnections: Latency | undefined;
  const startLoad = loadavg()[0]!;
  let tracingCost: Record<'miss' | 'hit', TracingRounds> | undefined;
  try {
    process.stdout.write(
      `switchyard bench: wrk -t1 -c${CONNECTIONS}, ${WARMUP_SECONDS}s warm-up + ${SECONDS}s each, ${ROUNDS} alternating round(s), nothing pinned but in tracing's rounds\n`,
    );
    const anvil = await startQuietAnvil();
    stops.push(() => anvil.stop());
    const sy = await startSwitchyardProcess(
      ROOT,
      dir,
      'switchyard',
      switchyardConfig(anvil.url),
      CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : [],
    );
    stops.push(() => sy.stop());
    const ha = await startHaproxy(dir, anvil.port);
    stops.push(() => ha.stop());
    const pass = await startPassthrough(ROOT, anvil.url);
    stops.push(() => pass.stop());
    const pipe = await startNodePipe(anvil.port);
    stops.push(() => pipe.stop());

    // The hit call's answer, fetched from the node: the bare server answers exactly these bytes.
    const { call: hitCall, genesis } = await cachedRead(anvil.url);
    const hitAnswer = await rpc(anvil.url, hitCall);
    const bareHit = await startBareNode('bare-hit', hitAnswer);
    stops.push(() => bareHit.stop());
    const busyHit = await startBareNode('bare-busy', hitAnswer, BUSY_US);
    stops.push(() => busyHit.stop());
    const minHit = await startMinimalJsonRpc(
      'min-jsonrpc',
      JSON.stringify((JSON.parse(hitAnswer) as { result: unknown }).result),
    );
    stops.push(() => minHit.stop());
    const bareLocal = await startBareNode('bare-local', '{"jsonrpc":"2.0","id":1,"result":"0xba"}');
    stops.push(() => bareLocal.stop());
    // Fill the cache entry before any measuring.
    if (!(await rpc(sy.url, hitCall)).includes(genesis)) throw new Error('switchyard does not answer the hit call');

    const miss = writeScript(dir, 'miss', luaScript({ batch: 1 }));
    const miss25 = writeScript(dir, 'miss25', luaScript({ batch: 25 }));
    const hit = writeScript(dir, 'hit', luaScript({ constant: hitCall, expect: 1 }));
    const local = writeScript(dir, 'local', luaScript({ constant: CHAIN_ID_CALL, expect: 1 }));
    const all: Scenario[] = [
      { label: 'miss', target: 'anvil', url: anvil.url, script: miss, callsPerRequest: 1, pid: anvil.pid },
      { label: 'miss', target: 'haproxy', url: ha.url, script: miss, callsPerRequest: 1, pid: ha.pid },
      { label: 'miss', target: 'passthrough', url: pass.url, script: miss, callsPerRequest: 1, pid: pass.pid },
      { label: 'miss', target: 'node-pipe', url: pipe.url, script: miss, callsPerRequest: 1, pid: pipe.pid },
      { label: 'miss', target: 'switchyard', url: sy.url, script: miss, callsPerRequest: 1, pid: sy.pid },
      { label: 'miss batch25', target: 'anvil', url: anvil.url, script: miss25, callsPerRequest: 25, pid: anvil.pid },
      { label: 'miss batch25', target: 'haproxy', url: ha.url, script: miss25, callsPerRequest: 25, pid: ha.pid },
      {
        label: 'miss batch25',
        target: 'passthrough',
        url: pass.url,
        script: miss25,
        callsPerRequest: 25,
        pid: pass.pid,
      },
      { label: 'miss batch25', target: 'node-pipe', url: pipe.url, script: miss25, callsPerRequest: 25, pid: pipe.pid },
      { label: 'miss batch25', target: 'switchyard', url: sy.url, script: miss25, callsPerRequest: 25, pid: sy.pid },
      { label: 'hit', target: 'bare-node', url: bareHit.url, script: hit, callsPerRequest: 1, pid: bareHit.pid },
      { label: 'hit', target: 'min-jsonrpc', url: minHit.url, script: hit, callsPerRequest: 1, pid: minHit.pid },
      { label: 'hit', target: 'bare+busy', url: busyHit.url, script: hit, callsPerRequest: 1, pid: busyHit.pid },
      { label: 'hit', target: 'switchyard', url: sy.url, script: hit, callsPerRequest: 1, pid: sy.pid },
      {
        label: 'local',
        target: 'bare-node',
        url: bareLocal.url,
        script: local,
        callsPerRequest: 1,
        pid: bareLocal.pid,
      },
      { label: 'local', target: 'switchyard', url: sy.url, script: local, callsPerRequest: 1, pid: sy.pid },
    ];
    if (BASELINE) {
      const base = await startSwitchyardBuild(BASELINE, dir, 'baseline', switchyardConfig(anvil.url));
      stops.push(() => base.stop());
      if (!(await rpc(base.url, hitCall)).includes(genesis))
        throw new Error('the baseline does not answer the hit call');
      for (const s of all.filter((x) => x.target === 'switchyard'))
        all.splice(all.indexOf(s) + 1, 0, { ...s, target: 'baseline', url: base.url, pid: base.pid });
    }
    const scenarios = ONLY ? all.filter((s) => ONLY.test(`${s.label} ${s.target}`)) : all;
    const runs = new Map<Scenario, Run[]>(scenarios.map((s) => [s, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      process.stdout.write(`round ${round}/${ROUNDS}\n`);
      for (const s of roundOrder(scenarios, round)) runs.get(s)!.push(await measure(s));
      roundRss.push(rssMb(sy.pid));
    }
    rows = scenarios.map((s) => {
      const rs = runs.get(s)!;
      const mid = median(rs.map((x) => x.r.rps));
      return { ...s, runs: rs, median: rs.find((x) => x.r.rps === mid)! };
    });

    if (TRACING) {
      // Started only now: seven idle Switchyards beside the rounds above slowed every row of them
      // (the bare hit server by a fifth).
      const traced = await startTracingProcesses(dir, anvil.url, stops);
      tracingCost = await measureTracing(traced, { miss, hit });
      await traced.stop();
    }
    latency = await addedLatency(dir, sy, ha, rps1(rows, 'miss', 'switchyard'));
    fewConnections = await addedLatencyAt(dir, sy, ha, FEW_CONNECTIONS);

    // Misses at a finalized block fill the immutable LRU (the bench's `latest` reads are head-scoped
    // and dropped with each block): the cache then holds what it counts, for the sizing figure.
    process.stdout.write(`filling the cache with immutable answers for ${FILL_SECONDS} s\n`);
    countedOnly(
      'the cache fill',
      await wrk(sy.url, writeScript(dir, 'fill', luaScript({ batch: 25, block: '0x1' })), {
        connections: CONNECTIONS,
        seconds: FILL_SECONDS,
      }),
    );
    process.stdout.write(`RSS with ${IDLE_CONNECTIONS} idle keep-alive connections\n`);
    const loaded = await rssFigure(sy.url, sy.adminUrl, sy.pid);
    const fresh = await startSwitchyardProcess(ROOT, dir, 'switchyard-rss', switchyardConfig(anvil.url));
    stops.push(() => fresh.stop());
    const freshFigure = await rssFigure(fresh.url, fresh.adminUrl, fresh.pid);
    await fresh.stop();
    // The same sustained misses (single and batched) through a process without a cache.
    const noCache = await startSwitchyardProcess(
      ROOT,
      dir,
      'switchyard-nocache',
      switchyardConfig(anvil.url, { cache: { maxBytes: 0 } }),
    );
    stops.push(() => noCache.stop());
    const noCacheRuns: number[] = [];
    for (const script of [miss, miss25, miss]) {
      countedOnly('the cache-off run', await wrk(noCache.url, script, { connections: CONNECTIONS, seconds: SECONDS }));
      noCacheRuns.push(rssMb(noCache.pid));
    }
    rss = {
      fresh: freshFigure,
      noCache: await rssFigure(noCache.url, noCache.adminUrl, noCache.pid),
      loaded,
      noCacheRuns,
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  // Hedged reads (hedge.ts): three anvils of their own behind delaying proxies, once the rest has stopped.
  const hedging = !ONLY || ONLY.test('hedge') ? await hedgeBench(ROOT, QUICK) : undefined;

  const row = (label: string, target: string) => rows.find((r) => r.label === label && r.target === target);
  const rps = (label: string, target: string) => row(label, target)?.median.r.rps ?? 0;
  // CPU microseconds per request: median over rounds of each round's CPU time / requests.
  const us = (label: string, target: string): number => median(row(label, target)?.runs.map((x) => x.usPerReq) ?? []);
  const lines = [
    '',
    `median of ${ROUNDS} round(s); req/s range in brackets`,
    '',
    '| scenario | target | req/s | calls/s | p50 | p99 | CPU | CPU us/req | bad answers |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(({ label, target, callsPerRequest, runs, median: { r, cpu } }) => {
      const all = runs.map((x) => x.r.rps);
      const range = runs.length > 1 ? ` [${Math.min(...all).toFixed(0)}-${Math.max(...all).toFixed(0)}]` : '';
      const bad = runs.reduce((n, x) => n + x.r.bad + x.r.non2xx, 0);
      return `| ${label} | ${target} | ${r.rps.toFixed(0)}${range} | ${(r.rps * callsPerRequest).toFixed(0)} | ${r.p50} | ${r.p99} | ${(cpu * 100).toFixed(0)}% | ${us(label, target).toFixed(1)} | ${bad} |`;
    }),
    '',
    '| ratio | req/s | CPU us/req | target |',
    '|---|---:|---:|---|',
    `| node direct / haproxy (validity: the proxies are the bottleneck) | ${ratio(rps('miss', 'anvil'), rps('miss', 'haproxy'))} | | >= ${NODE_MARGIN} |`,
    `| batch of 25 misses: switchyard / haproxy (same anvil, same batch) | ${ratio(rps('miss batch25', 'switchyard'), rps('miss batch25', 'haproxy'))} | ${ratio(us('miss batch25', 'switchyard'), us('miss batch25', 'haproxy'))} | >= 0.7 |`,
    `| miss: switchyard / haproxy | ${ratio(rps('miss', 'switchyard'), rps('miss', 'haproxy'))} | ${ratio(us('miss', 'switchyard'), us('miss', 'haproxy'))} | >= 0.75 |`,
    `| miss: passthrough / haproxy | ${ratio(rps('miss', 'passthrough'), rps('miss', 'haproxy'))} | ${ratio(us('miss', 'passthrough'), us('miss', 'haproxy'))} | |`,
    `| miss: switchyard / passthrough | ${ratio(rps('miss', 'switchyard'), rps('miss', 'passthrough'))} | ${ratio(us('miss', 'switchyard'), us('miss', 'passthrough'))} | |`,
    `| miss: node-pipe / haproxy (Node's event loop and system calls alone) | ${ratio(rps('miss', 'node-pipe'), rps('miss', 'haproxy'))} | ${ratio(us('miss', 'node-pipe'), us('miss', 'haproxy'))} | |`,
    `| batch of 25: passthrough / haproxy (node:http and undici, nothing parsed) | ${ratio(rps('miss batch25', 'passthrough'), rps('miss batch25', 'haproxy'))} | ${ratio(us('miss batch25', 'passthrough'), us('miss batch25', 'haproxy'))} | |`,
    `| batch of 25: node-pipe / haproxy | ${ratio(rps('miss batch25', 'node-pipe'), rps('miss batch25', 'haproxy'))} | ${ratio(us('miss batch25', 'node-pipe'), us('miss batch25', 'haproxy'))} | |`,
    `| hit: switchyard / bare node:http | ${ratio(rps('hit', 'switchyard'), rps('hit', 'bare-node'))} | ${ratio(us('hit', 'switchyard'), us('hit', 'bare-node'))} | >= 0.8 (aim 0.9) |`,
    `| hit: minimal JSON-RPC server / bare node:http (parsing and the id alone) | ${ratio(rps('hit', 'min-jsonrpc'), rps('hit', 'bare-node'))} | ${ratio(us('hit', 'min-jsonrpc'), us('hit', 'bare-node'))} | |`,
    `| hit: switchyard / minimal JSON-RPC server | ${ratio(rps('hit', 'switchyard'), rps('hit', 'min-jsonrpc'))} | ${ratio(us('hit', 'switchyard'), us('hit', 'min-jsonrpc'))} | |`,
    `| hit: bare node:http + ${BUSY_US} us busy work per request / bare node:http (what ${BUSY_US} us of own work costs) | ${ratio(rps('hit', 'bare+busy'), rps('hit', 'bare-node'))} | ${ratio(us('hit', 'bare+busy'), us('hit', 'bare-node'))} | |`,
    `| local eth_chainId: switchyard / bare node:http | ${ratio(rps('local', 'switchyard'), rps('local', 'bare-node'))} | ${ratio(us('local', 'switchyard'), us('local', 'bare-node'))} | |`,
    `| batch of 25 / one call, switchyard (cost: one-call req/s / batch req/s) | ${ratio(rps('miss', 'switchyard'), rps('miss batch25', 'switchyard'))} | ${ratio(us('miss batch25', 'switchyard'), us('miss', 'switchyard'))} | |`,
    `| batch of 25 / one call, haproxy | ${ratio(rps('miss', 'haproxy'), rps('miss batch25', 'haproxy'))} | ${ratio(us('miss batch25', 'haproxy'), us('miss', 'haproxy'))} | |`,
    `| batch of 25 / one call, anvil direct (the node's own) | ${ratio(rps('miss', 'anvil'), rps('miss batch25', 'anvil'))} | ${ratio(us('miss batch25', 'anvil'), us('miss', 'anvil'))} | |`,
  ];
  if (BASELINE) {
    lines.push(
      `| baseline miss / haproxy | ${ratio(rps('miss', 'baseline'), rps('miss', 'haproxy'))} | ${ratio(us('miss', 'baseline'), us('miss', 'haproxy'))} | (before) |`,
      `| baseline hit / bare node:http | ${ratio(rps('hit', 'baseline'), rps('hit', 'bare-node'))} | ${ratio(us('hit', 'baseline'), us('hit', 'bare-node'))} | (before) |`,
      `| baseline local / bare node:http | ${ratio(rps('local', 'baseline'), rps('local', 'bare-node'))} | ${ratio(us('local', 'baseline'), us('local', 'bare-node'))} | (before) |`,
      `| baseline batch of 25 / one call | ${ratio(rps('miss', 'baseline'), rps('miss batch25', 'baseline'))} | ${ratio(us('miss batch25', 'baseline'), us('miss', 'baseline'))} | (before) |`,
    );
  }
  if (tracingCost) {
    for (const label of ['miss', 'hit'] as const) {
      const { on, control } = tracingCost[label];
      // Round by round, each traced process over the untraced twins that ran on the same cores,
      // beside the same reference, in the same round (their geometric mean).
      const off = (key: 'rps' | 'us', i: number): number => geomean(control.map((c) => c[key][i]!));
      const each = on.map((p) => ({
        rps: p.rps.map((r, i) => r / off('rps', i)),
        cpu: p.us.map((r, i) => r / off('us', i)),
      }));
      const rps = each.flatMap((p) => p.rps);
      const cpu = each.flatMap((p) => p.cpu);
      const parts = (xs: SideBySide[]): string =>
        xs.map((p) => `${geomean(p.rps).toFixed(2)} (${range(p.rps)})`).join(', ');
      lines.push(
        `| tracing on (default sampleRate) / off, ${label}: on / off, each beside the same reference on the same core (geometric mean of ${rps.length} rounds of ${on.length} traced processes over ${control.length} untraced ones, range ${range(rps)}) | ${geomean(rps).toFixed(2)} | ${geomean(cpu).toFixed(2)} | >= 0.9 |`,
        `| the parts: each traced process / reference ${parts(on)}; each untraced one / reference ${parts(control)}; each traced process on / off ${each.map((p) => geomean(p.rps).toFixed(2)).join(', ')} | | | |`,
      );
    }
  }
  if (fewConnections) {
    const { haproxy, switchyard } = fewConnections;
    lines.push(
      `| added latency at ${FEW_CONNECTIONS} connections (got: switchyard ${switchyard.rps.toFixed(0)}, haproxy ${haproxy.rps.toFixed(0)} req/s): miss p99 switchyard ${switchyard.p99} - haproxy ${haproxy.p99} (ms, median of ${LATENCY_ROUNDS}) | ${(msOf(switchyard.p99) - msOf(haproxy.p99)).toFixed(2)} | | < 1 |`,
    );
  }
  if (latency) {
    const { rate, haproxy, switchyard } = latency;
    lines.push(
      `| added latency at half of Switchyard's peak (${rate.toFixed(0)} req/s asked; got: switchyard ${switchyard.rps.toFixed(0)}, haproxy ${haproxy.rps.toFixed(0)}): miss p99 switchyard ${switchyard.p99} - haproxy ${haproxy.p99} (ms, median of ${LATENCY_ROUNDS}) | ${(msOf(switchyard.p99) - msOf(haproxy.p99)).toFixed(2)} | | < 1 |`,
    );
  }
  if (rss) {
    const cacheRss = rss.loaded.with - rss.noCache.with;
    lines.push(
      `| RSS, fresh process: idle -> ${rss.fresh.open} idle connections (MB) | ${rss.fresh.before.toFixed(1)} -> ${rss.fresh.with.toFixed(1)} | | <= 150 (cache excluded) |`,
      `| RSS of the main process (default cache) after each round of all the scenarios (MB) | ${roundRss.map((x) => x.toFixed(1)).join(' / ')} | | bounded |`,
      `| RSS during sustained misses, cache off: after each of 3 runs (MB) | ${rss.noCacheRuns.map((x) => x.toFixed(1)).join(' / ')} | | bounded |`,
      `| RSS after sustained misses, cache off: idle -> ${rss.noCache.open} connections (MB) | ${rss.noCache.before.toFixed(1)} -> ${rss.noCache.with.toFixed(1)} | | |`,
      `| RSS after all the runs, default cache holding ${rss.loaded.cacheMb.toFixed(1)} MB (counted): idle -> ${rss.loaded.open} connections (MB) | ${rss.loaded.before.toFixed(1)} -> ${rss.loaded.with.toFixed(1)} | | |`,
      `| what the cache costs in RSS: MB, and per counted MB | ${cacheRss.toFixed(1)} | ${rss.loaded.cacheMb > 1 ? (cacheRss / rss.loaded.cacheMb).toFixed(2) : 'n/a'} | sizing: RSS ~ cache-off RSS + this x cache.maxBytes |`,
    );
  }
  if (hedging) lines.push(...hedgeRows(hedging));
  lines.push('');
  process.stdout.write(lines.join('\n'));
  const endLoad = loadavg()[0]!;

  const problems: string[] = [];
  const failed = rows.filter((r) => r.runs.some((x) => answersWrong(x.r)));
  if (failed.length > 0)
    problems.push(`bad answers or socket errors in: ${failed.map((r) => `${r.label}/${r.target}`).join(', ')}`);
  for (const [label, pair] of Object.entries(tracingCost ?? {}))
    if ([...pair.on, ...pair.control].some((p) => p.bad > 0))
      problems.push(`bad answers or socket errors in tracing's ${label} rounds`);
  if (hedging && hedgeBad(hedging) > 0) problems.push('bad answers in the hedged reads runs');
  const node = rps('miss', 'anvil');
  const haproxy = rps('miss', 'haproxy');
  if (node > 0 && haproxy > 0 && node < NODE_MARGIN * haproxy) {
    problems.push(
      `the node direct (${node.toFixed(0)} req/s) is not clearly faster than HAProxy in front of it (${haproxy.toFixed(0)} req/s, needs ${NODE_MARGIN}x): the proxies are not the bottleneck (a busy machine?)`,
    );
  }
  if (problems.length > 0) {
    process.stdout.write(`\nTHIS RUN DOES NOT COUNT:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`);
    return 1;
  }
  // BENCH_ONLY may leave out the node direct or HAProxy: then the bottleneck was not checked.
  const checked =
    node > 0 && haproxy > 0
      ? 'the node direct is clearly faster than HAProxy'
      : 'the node direct against HAProxy not measured (BENCH_ONLY), so not checked';
  process.stdout.write(`\nrun valid: every answer checked and correct; ${checked}\n`);
  if (QUICK || ONLY || process.env.BENCH_WRITE === '0') {
    process.stdout.write(
      `${DOC} left as it is (${QUICK ? 'BENCH_QUICK: a plumbing check' : ONLY ? 'BENCH_ONLY' : 'BENCH_WRITE=0'})\n`,
    );
  } else {
    writeLatestRun(lines.join('\n'), startLoad, endLoad);
    process.stdout.write(`wrote the latest run into ${DOC}\n`);
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

/** Rounds of the latency scenarios (alternating HAProxy and Switchyard), medians of p99. */
const LATENCY_ROUNDS = QUICK ? 1 : 3;
/** SPEC 11's few connections, unpaced, at which the latency Switchyard adds is measured too. */
const FEW_CONNECTIONS = 4;

/** A wrk run outside the rounds still counts only with every answer correct (SPEC 11). */
function countedOnly(what: string, r: WrkResult): WrkResult {
  if (answersWrong(r))
    throw new Error(`${what}: ${r.bad} bad answers of ${r.checked}, ${r.non2xx} non-2xx, socket ${r.socketErrors}`);
  return r;
}

/** The commit the run measured, with `+dirty` when the checkout differs from it. */
function commitOf(): string {
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  try {
    return `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? '+dirty' : ''}`;
  } catch {
    return 'unknown';
  }
}

/**
 * Rewrites the marked section of docs/benchmarks.md with this run's tables, the commit, the
 * machine and its load average at the start and the end (a loaded machine moves req/s far more than
 * ratios and CPU microseconds).
 */
function writeLatestRun(tables: string, startLoad: number, endLoad: number): void {
  const page = readFileSync(DOC, 'utf8');
  const from = page.indexOf(DOC_START);
  const to = page.indexOf(DOC_END);
  if (from < 0 || to < from) throw new Error(`${DOC} has no ${DOC_START} ... ${DOC_END} section`);
  const env = ['BENCH_ROUNDS', 'BENCH_SECONDS', 'BENCH_CONNECTIONS', 'BENCH_TRACING', 'BENCH_BASELINE']
    .filter((k) => process.env[k] !== undefined)
    .map((k) => `${k}=${process.env[k]}`);
  const head = [
    `Run of ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on commit \`${commitOf()}\`,`,
    `${cpus().length} CPU(s) (${cpus()[0]?.model.trim() ?? 'unknown'}), load average ${startLoad.toFixed(1)} at the start and`,
    `${endLoad.toFixed(1)} at the end; \`${[...env, 'npm run bench'].join(' ')}\`. Every answer was checked and`,
    'correct, and the node direct was clearly faster than HAProxy in front of it.',
  ].join('\n');
  writeFileSync(DOC, `${page.slice(0, from + DOC_START.length)}\n\n${head}\n${tables}\n${page.slice(to)}`);
}

/**
 * The latency Switchyard adds at `connections` unpaced connections (SPEC 11: 4): misses through
 * HAProxy and through Switchyard in turn, LATENCY_ROUNDS each, the median p99s.
 */
async function addedLatencyAt(
  dir: string,
  sy: { url: string },
  ha: { url: string },
  connections: number,
): Promise<Latency> {
  const script = writeScript(dir, 'few', luaScript({ batch: 1 }));
  process.stdout.write(`added latency: misses at ${connections} connections\n`);
  const runs: Record<'haproxy' | 'switchyard', { rps: number; p99: string }[]> = { haproxy: [], switchyard: [] };
  for (const url of [ha.url, sy.url]) await wrk(url, script, { connections, seconds: WARMUP_SECONDS });
  for (let round = 0; round < LATENCY_ROUNDS; round++) {
    for (const [name, url] of [
      ['haproxy', ha.url],
      ['switchyard', sy.url],
    ] as const) {
      const r = countedOnly(
        `the ${name} run at ${connections} connections`,
        await wrk(url, script, { connections, seconds: SECONDS }),
      );
      process.stdout.write(
        `  ${connections} conns ${name.padEnd(11)} ${r.rps.toFixed(0).padStart(7)} req/s  p99 ${r.p99}\n`,
      );
      runs[name].push({ rps: r.rps, p99: r.p99 });
    }
  }
  const mid = (xs: { rps: number; p99: string }[]) =>
    [...xs].sort((a, b) => msOf(a.p99) - msOf(b.p99))[Math.floor(xs.length / 2)]!;
  return { rate: 0, haproxy: mid(runs.haproxy), switchyard: mid(runs.switchyard) };
}
/** Each paced connection waits this long after an answer: the rate is set by the number of connections. */
const PACE_MS = 10;

interface Latency {
  rate: number;
  haproxy: { rps: number; p99: string };
  switchyard: { rps: number; p99: string };
}

function rps1(rows: Row[], label: string, target: string): number {
  return rows.find((r) => r.label === label && r.target === target)?.median.r.rps ?? 0;
}

/** wrk's latency text (`850.00us`, `3.59ms`, `1.20s`) in milliseconds. */
function msOf(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text);
  if (m === null) return Number.NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

/**
 * SPEC 11's latency figure: misses paced at half of Switchyard's measured peak, through HAProxy and
 * through Switchyard in turn (same node, same rate), and the difference of their p99. Below peak
 * neither queues, so the difference is what Switchyard adds to a call, not its queueing.
 */
async function addedLatency(
  dir: string,
  sy: { url: string },
  ha: { url: string },
  peak: number,
): Promise<Latency | undefined> {
  if (peak <= 0) return undefined;
  const rate = peak / 2;
  const script = writeScript(dir, 'paced', luaScript({ batch: 1, delayMs: PACE_MS }));
  // A first guess ignores the latency itself; one short run through HAProxy corrects it.
  let connections = Math.max(1, Math.round((rate * PACE_MS) / 1000));
  const trial = await wrk(ha.url, script, { connections, seconds: 2 });
  if (trial.rps > 0) connections = Math.max(1, Math.round((connections * rate) / trial.rps));
  // Switchyard's warm-up, as the trial is HAProxy's: it has stood idle through the scenarios
  // before (tracing's among them), and its first paced run read a p99 3-4x the rounds after.
  await wrk(sy.url, script, { connections, seconds: 2 });
  process.stdout.write(`added latency: misses paced at ${rate.toFixed(0)} req/s (${connections} connections)\n`);
  const runs: Record<'haproxy' | 'switchyard', { rps: number; p99: string }[]> = { haproxy: [], switchyard: [] };
  for (let round = 0; round < LATENCY_ROUNDS; round++) {
    for (const [name, url] of [
      ['haproxy', ha.url],
      ['switchyard', sy.url],
    ] as const) {
      const r = countedOnly(`the paced ${name} run`, await wrk(url, script, { connections, seconds: SECONDS }));
      process.stdout.write(`  paced ${name.padEnd(11)} ${r.rps.toFixed(0).padStart(7)} req/s  p99 ${r.p99}\n`);
      runs[name].push({ rps: r.rps, p99: r.p99 });
    }
  }
  const mid = (xs: { rps: number; p99: string }[]) =>
    [...xs].sort((a, b) => msOf(a.p99) - msOf(b.p99))[Math.floor(xs.length / 2)]!;
  return { rate, haproxy: mid(runs.haproxy), switchyard: mid(runs.switchyard) };
}

/**
 * The order of one round: every other round, each Switchyard row and the rows measured beside it
 * (`baseline`) run in reverse, so neither side of a before/after ratio always runs
 * first (the node's state and the machine's drift within a round would favour one side).
 */
function roundOrder(scenarios: readonly Scenario[], round: number): Scenario[] {
  if (round % 2 === 1) return [...scenarios];
  const out: Scenario[] = [];
  for (let i = 0; i < scenarios.length; ) {
    let j = i + 1;
    while (j < scenarios.length && scenarios[j]!.label === scenarios[i]!.label && COMPANIONS.has(scenarios[j]!.target))
      j++;
    out.push(...scenarios.slice(i, j).reverse());
    i = j;
  }
  return out;
}

const COMPANIONS = new Set(['baseline']);

/** Rounds of tracing's side-by-side measurement (each 1 s warm-up + SECONDS, per pair and scenario): even. */
const TRACING_ROUNDS = 6;

/**
 * Traced processes of one build, and untraced twins, measured in turn: the figure is of them all.
 * One process of a build reads up to 12% faster or slower than another for its whole life
 * (`ab.ts`, six untraced processes of one build: 40.2-45.7 us per hit), so one twin's luck would
 * be the figure's.
 */
const TRACED_PROCESSES = 3;
const UNTRACED_TWINS = 3;

interface TracingProcesses {
  on: Loaded[];
  /** Untraced, as the traced ones but for tracing. */
  twins: Loaded[];
  /** Untraced: the one every other runs beside. */
  reference: Loaded;
  /** Stops them all (pinned to cores while measured) and the collector stand-in. */
  stop(): Promise<void>;
}

/**
 * For BENCH_TRACING: TRACED_PROCESSES Switchyards with tracing on (default sample rate, exporting
 * to a collector stand-in in this process), UNTRACED_TWINS with it off, and an untraced reference,
 * all started now (traced and untraced in turn), so that they are alike but for tracing. Started
 * after the rounds and stopped once measured, so every other scenario runs as without BENCH_TRACING.
 */
async function startTracingProcesses(
  dir: string,
  anvilUrl: string,
  stops: (() => Promise<void>)[],
): Promise<TracingProcesses> {
  const sink = await startCollectorSink();
  stops.push(sink.stop);
  const own: (() => Promise<void>)[] = [];
  const start = async (name: string, extra: Record<string, unknown>): Promise<Loaded> => {
    const p = await startSwitchyardProcess(ROOT, dir, name, switchyardConfig(anvilUrl, extra));
    stops.push(() => p.stop());
    own.push(() => p.stop());
    return p;
  };
  const reference = await start('reference', {});
  const on: Loaded[] = [];
  const twins: Loaded[] = [];
  for (let k = 1; k <= Math.max(TRACED_PROCESSES, UNTRACED_TWINS); k++) {
    if (k <= TRACED_PROCESSES) on.push(await start(`tracing-${k}`, { tracing: { enabled: true, endpoint: sink.url } }));
    if (k <= UNTRACED_TWINS) twins.push(await start(`untraced-${k}`, {}));
  }
  return {
    on,
    twins,
    reference,
    stop: async () => {
      for (const stop of own) await stop();
      await sink.stop();
    },
  };
}

/** Each traced process's rounds, and each untraced twin's, all beside the same reference. */
interface TracingRounds {
  on: SideBySide[];
  control: SideBySide[];
}

/** Tracing on / off side by side, and off / off by the same method, for the miss and the hit. */
async function measureTracing(
  procs: TracingProcesses,
  scripts: { miss: string; hit: string },
): Promise<Record<'miss' | 'hit', TracingRounds>> {
  process.stdout.write(`tracing cost, side by side (${TRACING_ROUNDS} rounds; reference / B)\n`);
  const opts = { connections: CONNECTIONS, warmup: WARMUP_SECONDS, seconds: SECONDS };
  const out = {} as Record<'miss' | 'hit', TracingRounds>;
  const fresh = (): SideBySide => ({ rps: [], us: [], bad: 0 });
  for (const label of ['miss', 'hit'] as const) {
    const on = procs.on.map(fresh);
    const control = procs.twins.map(fresh);
    // Each round measures every traced process and every twin in turn (traced and untraced
    // alternating), each beside the reference on the same cores (side-by-side.ts); the order
    // flips every two rounds.
    const pairs: [SideBySide, Loaded, string][] = [];
    for (let k = 0; k < Math.max(on.length, control.length); k++) {
      if (k < on.length) pairs.push([on[k]!, procs.on[k]!, `${label} ref / on ${k + 1}`]);
      if (k < control.length) pairs.push([control[k]!, procs.twins[k]!, `${label} ref / off ${k + 1}`]);
    }
    for (let round = 0; round < TRACING_ROUNDS; round++)
      for (const [into, b, name] of Math.floor(round / 2) % 2 === 0 ? pairs : [...pairs].reverse())
        await sideBySide(into, procs.reference, b, scripts[label], { ...opts, round, label: name });
    out[label] = { on, control };
  }
  return out;
}
