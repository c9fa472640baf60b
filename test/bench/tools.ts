/**
 * What the benchmark scenarios share: the load generator (wrk with a Lua script that checks every
 * answer), the processes under test (Switchyard from dist/, HAProxy, a bare node:http server, a
 * Node pass-through, a Node TCP pipe) started on free ports and killed by pid, CPU time and RSS
 * from /proc.
 * Nothing is pinned to a CPU: the node must never be starved by the proxy or the load generator,
 * or every proxy looks alike. Not a test file: tap never runs it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ANVIL_BIN } from '../helpers/anvil.js';
import { freePort } from '../helpers/ports.js';
import { stopProcess } from '../helpers/process.js';
export { freePort };

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

export function commandExists(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/** haproxy and wrk from Debian; installed here only when running as root. */
export function ensureTools(): void {
  const missing = ['haproxy', 'wrk'].filter((c) => !commandExists(c));
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0) {
    throw new Error(
      `missing ${missing.join(', ')}: install them first, e.g. sudo apt-get install -y ${missing.join(' ')}`,
    );
  }
  process.stdout.write(`installing ${missing.join(', ')} with apt-get\n`);
  const install = () =>
    spawnSync('apt-get', ['install', '-y', '-qq', ...missing], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    }).status === 0;
  if (!install()) {
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    if (!install()) throw new Error(`apt-get install ${missing.join(' ')} failed`);
  }
}

export interface Proc {
  name: string;
  pid: number;
  proc: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

export function startProcess(name: string, command: string, args: string[], opts: { cwd?: string } = {}): Proc {
  const proc = spawn(command, args, { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(proc);
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-4000);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  proc.once('exit', () => live.delete(proc));
  if (proc.pid === undefined) throw new Error(`${name}: could not start ${command}`);
  return {
    name,
    pid: proc.pid,
    proc,
    output: () => out,
    stop: () => stopProcess(proc),
  };
}

/** A process that ended while it was waited for. */
export class Exited extends Error {}

/** Waits for `probe` to say true; a probe that throws means "not yet", but an `Exited` error ends the wait. */
export async function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await probe()) return;
    } catch (err) {
      if (err instanceof Exited) throw err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function rpc(url: string, body: string): Promise<string> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return res.text();
}

/**
 * The node flags the `switchyard` command runs with: those of dist/main.js's first line
 * (`#!/usr/bin/env -S node ...`), so the bench measures the process as it ships.
 */
export function shippedNodeFlags(root: string): string[] {
  const first = readFileSync(join(root, 'dist/main.js'), 'utf8').split('\n', 1)[0]!;
  const m = /^#!\/usr\/bin\/env -S node((?: --[\w-]+(?:=\S+)?)*)$/.exec(first);
  if (!m) throw new Error(`dist/main.js does not start with an env -S node line: ${first}`);
  return m[1]!.trim().split(' ').filter(Boolean);
}

/**
 * Switchyard from dist/ with a temp config, run with the flags it ships with (shippedNodeFlags);
 * ready when its admin /ready says so. `nodeArgs` go to node before the script (e.g. --cpu-prof).
 */
export async function startSwitchyardProcess(
  root: string,
  dir: string,
  name: string,
  config: Record<string, unknown>,
  nodeArgs: string[] = [],
): Promise<Proc & { url: string; adminUrl: string }> {
  const port = await freePort();
  const admin = await freePort();
  const full = {
    ...config,
    server: { host: '127.0.0.1', port, wsPort: null, shutdownDelayMs: 0, ...(config.server as object) },
    admin: { host: '127.0.0.1', port: admin },
  };
  const file = join(dir, `${name}.json`);
  // JSON is YAML: the config loader reads it as is.
  writeFileSync(file, JSON.stringify(full, null, 2));
  const args = [...shippedNodeFlags(root), ...nodeArgs, join(root, 'dist/main.js'), '--config', file];
  const p = startProcess(name, process.execPath, args, {
    cwd: root,
  });
  const adminUrl = `http://127.0.0.1:${admin}`;
  try {
    await waitUntil(`${name} ready`, async () => {
      // A process that exited (a config it refuses) is not waited for to the timeout.
      if (p.proc.exitCode !== null) throw new Exited(`${name} exited with code ${p.proc.exitCode}`);
      return (await fetch(`${adminUrl}/ready?upstreams=1`)).status === 200;
    });
  } catch (err) {
    await p.stop();
    throw new Error(`${(err as Error).message}\n${p.output()}`);
  }
  return { ...p, url: `http://127.0.0.1:${port}`, adminUrl };
}

/**
 * Another checkout's build (a baseline), with the bench's config less the options it refuses as
 * unknown (an older build has fewer: b973567 had no server.maxConnectionsPerIp, and so no such cap
 * to lift). What was left out is printed.
 */
export async function startSwitchyardBuild(
  ...args: Parameters<typeof startSwitchyardProcess>
): ReturnType<typeof startSwitchyardProcess> {
  const [root, dir, name, config, nodeArgs] = args;
  try {
    return await startSwitchyardProcess(...args);
  } catch (err) {
    const unknown = [
      ...(err as Error).message.matchAll(/^\s+([\w.]+): unknown option(?: \(did you mean \w+\?\))?$/gm),
    ].map((m) => m[1]!);
    if (unknown.length === 0) throw err;
    process.stdout.write(`${name}: left out the options it does not know: ${unknown.join(', ')}\n`);
    const pruned = structuredClone(config);
    for (const path of unknown) {
      const keys = path.split('.');
      const parent = keys
        .slice(0, -1)
        .reduce<Record<string, unknown> | undefined>((o, k) => o?.[k] as Record<string, unknown> | undefined, pruned);
      if (parent) delete parent[keys.at(-1)!];
    }
    return await startSwitchyardProcess(root, dir, name, pruned, nodeArgs);
  }
}

/** The middle of `values` (the lower middle of an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? 0;
}

/** A call Switchyard answers itself. */
export const CHAIN_ID_CALL = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';

/**
 * The bench's cache hit: `call`, `eth_getBlockByHash(genesis)` of the chain at `anvilUrl`
 * (immutable), whose answer holds `genesis`.
 */
export async function cachedRead(anvilUrl: string): Promise<{ call: string; genesis: string }> {
  const genesis = (
    JSON.parse(
      await rpc(anvilUrl, '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x0",false]}'),
    ) as { result: { hash: string } }
  ).result.hash;
  return { call: `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByHash","params":["${genesis}",false]}`, genesis };
}

/** Switchyard as the benchmarks run it, in front of the bench's anvil. */
export function switchyardConfig(anvilUrl: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...extra,
    chainId: 186,
    // keep-alive long enough for the idle-connection figure; in-flight caps above what the
    // connections x 25-call batches put in flight, so the limits never answer instead of the node;
    // the 1,000 idle connections all come from 127.0.0.1, past the default per-IP connection cap.
    server: {
      keepAliveTimeoutMs: 120_000,
      maxInFlight: 100_000,
      maxInFlightPerIp: 100_000,
      maxConnectionsPerIp: 100_000,
    },
    upstreams: [{ name: 'anvil', url: anvilUrl }],
    rateLimit: { perIp: null },
    log: { level: 'warn' },
  };
}

/**
 * One anvil for the benchmark, quiet: by default it prints a line per call, and at tens of
 * thousands of calls a second that pipe (and whoever drains it) would slow the node down and make
 * the node direct look no faster than the proxies in front of it.
 * Like a live chain, it is past finality and makes a block every BLOCK_SECONDS: a read at `latest`
 * is then head-scoped (kept in the head table, dropped when the head moves), as in production. At
 * genesis with no block time every `latest` read would be finalized, fill the immutable LRU and
 * churn it for the rest of the run, which no live chain does. `live: false`: at genesis, no block
 * time (a chain that does not move under a measurement of latency alone, as hedge.ts's).
 */
/** The bench chain's block time. */
const BLOCK_SECONDS = 2;

export async function startQuietAnvil(opts: { live?: boolean } = {}): Promise<Proc & { url: string; port: number }> {
  const live = opts.live ?? true;
  const port = await freePort();
  const args = ['--port', String(port), '--host', '127.0.0.1', '--chain-id', '186', '--quiet'];
  if (live) args.push('--block-time', String(BLOCK_SECONDS));
  const p = startProcess('anvil', ANVIL_BIN, args);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntil(
      'anvil',
      async () => (await rpc(url, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}')).includes('0xba'),
      30_000,
    );
    // 100 blocks: `finalized` (head - 64 on anvil) is then below the head.
    if (live) await rpc(url, '{"jsonrpc":"2.0","id":1,"method":"anvil_mine","params":["0x64"]}');
  } catch (err) {
    await p.stop();
    throw new Error(`${(err as Error).message}\n${p.output()}`);
  }
  return { ...p, url, port };
}

/** HAProxy, one thread, one backend, keep-alive both sides: the L7 reference proxy. */
export async function startHaproxy(dir: string, backendPort: number): Promise<Proc & { url: string }> {
  const port = await freePort();
  const cfg = `global
  nbthread 1
  maxconn 4096
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option http-keep-alive
frontend rpc
  bind 127.0.0.1:${port}
  default_backend node
backend node
  http-reuse always
  server anvil 127.0.0.1:${backendPort} maxconn 128
`;
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, cfg);
  const p = startProcess('haproxy', 'haproxy', ['-db', '-f', file]);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntil(
      'haproxy',
      async () => (await rpc(url, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}')).includes('result'),
      10_000,
    );
  } catch (err) {
    await p.stop();
    throw new Error(`${(err as Error).message}\n${p.output()}`);
  }
  return { ...p, url };
}

/**
 * A node:http server in its own process whose request handler, once the body has been read
 * (`body`: a Buffer), runs `answer` (JavaScript text that calls res.writeHead and res.end).
 */
async function startNodeHttp(name: string, prelude: string, answer: string): Promise<Proc & { url: string }> {
  const port = await freePort();
  const script = `
const http = require('node:http');
${prelude}
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    ${answer}
  });
});
server.keepAliveTimeout = 60000;
server.listen(${port}, '127.0.0.1');
`;
  const p = startProcess(name, process.execPath, ['-e', script]);
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(name, async () => (await rpc(url, '{"id":1}')).includes('result'), 10_000);
  return { ...p, url };
}

/**
 * The hit-path reference: node:http reading the body and answering one constant text; with
 * `busyUs`, after that many microseconds of busy work per request (what any work of a proxy's own
 * costs in throughput, measured in the same run).
 */
export function startBareNode(name: string, answer: string, busyUs = 0): Promise<Proc & { url: string }> {
  return startNodeHttp(
    name,
    `const constant = Buffer.from(${JSON.stringify(answer)});`,
    `const until = performance.now() + ${busyUs / 1000};
    while (${busyUs} > 0 && performance.now() < until);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': constant.length });
    res.end(constant);`,
  );
}

/**
 * The least a JSON-RPC server does for a cached answer: node:http, the body parsed as JSON, the
 * constant result written back with the request's own id. What parsing and an id cost on top of a
 * bare node:http server, before any proxy logic: a floor for the hit path.
 */
export function startMinimalJsonRpc(name: string, result: string): Promise<Proc & { url: string }> {
  return startNodeHttp(
    name,
    `const result = ${JSON.stringify(result)};`,
    `const call = JSON.parse(body.toString('utf8'));
    const out = '{"jsonrpc":"2.0","id":' + JSON.stringify(call.id ?? null) + ',"result":' + result + '}';
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
    res.end(out);`,
  );
}

/**
 * A TCP pipe to `port` in a Node process of its own, the least a proxy in Node can do: each client
 * connection gets one connection to the node and the bytes pass both ways unread (Node's event loop
 * and system calls, no HTTP, no JSON).
 */
export async function startNodePipe(port: number): Promise<Proc & { url: string }> {
  const listen = await freePort();
  const script = `
const net = require('node:net');
net.createServer((c) => {
  const u = net.connect(${port}, '127.0.0.1');
  c.setNoDelay(true);
  u.setNoDelay(true);
  c.pipe(u);
  u.pipe(c);
  c.on('error', () => u.destroy());
  u.on('error', () => c.destroy());
  c.on('close', () => u.destroy());
  u.on('close', () => c.destroy());
}).listen(${listen}, '127.0.0.1');
`;
  const p = startProcess('node-pipe', process.execPath, ['-e', script]);
  const url = `http://127.0.0.1:${listen}`;
  await waitUntil('node-pipe', async () => (await rpc(url, CHAIN_ID_CALL)).includes('0x'), 10_000);
  return { ...p, url };
}

/**
 * The leanest HTTP proxy in plain Node: node:http in front, one undici Pool behind, the request
 * bytes passed to the node and the answer's bytes passed back, nothing parsed. What a Node proxy
 * built on these pays for HTTP in and out before it does any work of its own.
 */
export async function startPassthrough(root: string, upstream: string): Promise<Proc & { url: string }> {
  const port = await freePort();
  const script = `
const http = require('node:http');
const { Pool } = require(${JSON.stringify(join(root, 'node_modules/undici'))});
const pool = new Pool(${JSON.stringify(upstream)}, { connections: 128, pipelining: 1 });
const headers = { 'content-type': 'application/json' };
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    pool.request({ path: '/', method: 'POST', headers, body }).then(async (r) => {
      const out = Buffer.from(await r.body.arrayBuffer());
      res.writeHead(r.statusCode, { 'content-type': 'application/json', 'content-length': out.length });
      res.end(out);
    }, () => {
      res.writeHead(502, { 'content-length': 0 });
      res.end();
    });
  });
});
server.keepAliveTimeout = 60000;
server.listen(${port}, '127.0.0.1');
`;
  const p = startProcess('passthrough', process.execPath, ['-e', script]);
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(
    'passthrough',
    async () => (await rpc(url, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}')).includes('result'),
    10_000,
  );
  return { ...p, url };
}

export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) / 1024;
}

export interface WrkResult {
  rps: number;
  p50: string;
  p99: string;
  socketErrors: string;
  non2xx: number;
  requests: number;
  /** Answers the script saw that were not HTTP 200 with the expected number of results and no error. */
  bad: number;
  /** Answers the script checked (all of them). */
  checked: number;
}

/**
 * The Lua script for one scenario. `constant`: the same body every time. `batch`: eth_getBalance
 * of a new address at latest, N per request; the address is built from a per-request counter and
 * a per-run number (wrk's script argument), so no request of any run asks what an earlier one did
 * (no cache or coalescing can answer it).
 * Every answer is checked: HTTP 200, `expect` results and no `"error"`. A bad answer is counted,
 * and the run that had one does not count (run.ts). The check reads each body in Lua, which costs
 * wrk a little CPU; the node-direct row shows whether wrk still outpaces every proxy.
 */
/**
 * A constant body, or batches of `eth_getBalance` of a new address every call at `block` (default
 * `latest`; a finalized number makes every answer an immutable cache entry). `delayMs`: each
 * connection waits that long after an answer before its next request (wrk's `delay()`), which
 * paces the load: N connections then send about N x 1000 / (delayMs + latency) requests a second.
 */
export function luaScript(
  body: { constant: string; expect: number } | { batch: number; block?: string; delayMs?: number },
): string {
  const expect = 'constant' in body ? body.expect : body.batch;
  const check = `
-- globals, not locals: done() reads them from each thread with thread:get
bad = 0
checked = 0
local expected = ${expect}
local threads = {}
function setup(thread) table.insert(threads, thread) end
function response(status, headers, body)
  checked = checked + 1
  if status ~= 200 or string.find(body, '"error"', 1, true) then
    bad = bad + 1
  elseif expected == 1 then
    if not string.find(body, '"result"', 1, true) then bad = bad + 1 end
  else
    local _, n = string.gsub(body, '"result"', '')
    if n ~= expected then bad = bad + 1 end
  end
end
function done(summary, latency, requests)
  local b, c = 0, 0
  for _, t in ipairs(threads) do
    b = b + (tonumber(t:get("bad")) or 0)
    c = c + (tonumber(t:get("checked")) or 0)
  end
  io.write(string.format("CHECKED %d BAD %d\\n", c, b))
end
`;
  if ('constant' in body) {
    return `wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [==[${body.constant}]==]
${check}`;
  }
  return `local headers = { ["Content-Type"] = "application/json" }
local counter = 0
local run = 0
function init(args) run = tonumber(args[1]) or 0 end
local function call(i)
  return string.format('{"jsonrpc":"2.0","id":%d,"method":"eth_getBalance","params":["0x%08x%032x","${body.block ?? 'latest'}"]}', i, run, i)
end
function request()
  local parts = {}
  for k = 1, ${body.batch} do
    counter = counter + 1
    parts[k] = call(counter)
  end
  local payload = ${body.batch === 1 ? 'parts[1]' : '"[" .. table.concat(parts, ",") .. "]"'}
  return wrk.format("POST", "/", headers, payload)
end
${body.delayMs === undefined ? '' : `function delay() return ${body.delayMs} end`}
${check}`;
}

let runs = 0;

export async function wrk(
  url: string,
  script: string,
  opts: { connections: number; seconds: number },
): Promise<WrkResult> {
  // Each run gets its own number, passed to the script (see luaScript).
  const args = [
    '-t1',
    `-c${opts.connections}`,
    `-d${opts.seconds}s`,
    '--latency',
    // wrk's own 2 s limit drops a slow answer from the latencies and counts it as a socket error:
    // a slow answer is measured as such, a missing one still fails the run (answersWrong).
    '--timeout',
    '10s',
    '-s',
    script,
    url,
    '--',
    String(++runs),
  ];
  const p = startProcess('wrk', 'wrk', args);
  const code = await new Promise<number | null>((r) => p.proc.once('exit', (c) => r(c)));
  const out = p.output();
  if (code !== 0) throw new Error(`wrk exited with ${code}: ${out}`);
  const num = (re: RegExp): number => Number(re.exec(out)?.[1] ?? 0);
  const checkedLine = /CHECKED (\d+) BAD (\d+)/.exec(out);
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    p50: /\s50%\s+(\S+)/.exec(out)?.[1] ?? '?',
    p99: /\s99%\s+(\S+)/.exec(out)?.[1] ?? '?',
    socketErrors: /Socket errors: (.*)/.exec(out)?.[1] ?? 'none',
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/),
    requests: num(/(\d+) requests in/),
    // No CHECKED line means the script's check never ran: treat every answer as unchecked, i.e. bad.
    bad: checkedLine ? Number(checkedLine[2]) : Number.POSITIVE_INFINITY,
    checked: checkedLine ? Number(checkedLine[1]) : 0,
  };
}

export function writeScript(dir: string, name: string, text: string): string {
  const file = join(dir, `${name}.lua`);
  writeFileSync(file, text);
  return file;
}

export function distBuilt(root: string): boolean {
  return existsSync(join(root, 'dist/main.js'));
}

const TICKS_PER_SECOND = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim() || 100);

/** CPU seconds (user + system, every thread) a process has used so far, from /proc/PID/stat. */
/** A run that does not count (SPEC 11): an answer wrong or not 2xx, none checked, or a socket error. */
export function answersWrong(r: WrkResult): boolean {
  return r.bad + r.non2xx > 0 || r.socketErrors !== 'none' || r.checked === 0;
}

export interface Measured {
  r: WrkResult;
  /** Process `pid`'s CPU seconds per second of the run (1 = one core busy). */
  busy: number;
  usPerReq: number;
}

/** One wrk run against the server of process `pid`, with the CPU time it took read before and after. */
export async function measuredWrk(
  url: string,
  pid: number,
  script: string,
  opts: { connections: number; seconds: number },
): Promise<Measured> {
  const before = cpuSeconds(pid);
  const started = performance.now();
  const r = await wrk(url, script, opts);
  const cpu = cpuSeconds(pid) - before;
  return {
    r,
    busy: cpu / ((performance.now() - started) / 1000),
    usPerReq: r.requests > 0 ? (cpu / r.requests) * 1e6 : 0,
  };
}

export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[11], fields[12]: utime, stime in clock ticks (fields numbered from 3, the state).
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** A collector stand-in (BENCH_TRACING, ab.ts): takes every OTLP export and answers 200. */
export async function startCollectorSink(): Promise<{ url: string; stop: () => Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('{}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    stop: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
