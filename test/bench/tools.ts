/**
 * What the benchmark scenarios share: the load generator (wrk with a Lua script), the processes
 * under test (Switchyard from dist/, HAProxy, a bare node:http server) started on free ports and
 * killed by pid, CPU pinning, and RSS from /proc. Not a test file: tap never runs it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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
    throw new Error(`missing ${missing.join(', ')}: install them first, e.g. sudo apt-get install -y ${missing.join(' ')}`);
  }
  process.stdout.write(`installing ${missing.join(', ')} with apt-get\n`);
  const install = () => spawnSync('apt-get', ['install', '-y', '-qq', ...missing], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status === 0;
  if (!install()) {
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    if (!install()) throw new Error(`apt-get install ${missing.join(' ')} failed`);
  }
}


/** Every thread of `pid` onto `cpu` (taskset -a), so "one thread each" holds for the comparison. */
export function pin(pid: number, cpu: number): boolean {
  if (!commandExists('taskset')) return false;
  return spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' }).status === 0;
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

export async function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await probe()) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function rpc(url: string, body: string): Promise<string> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return res.text();
}

/** Switchyard from dist/ with a temp config; ready when its admin /ready says so. */
export async function startSwitchyardProcess(root: string, dir: string, name: string, config: Record<string, unknown>): Promise<Proc & { url: string; adminUrl: string }> {
  const port = await freePort();
  const admin = await freePort();
  const full = {
    ...config,
    server: { host: '127.0.0.1', port, wsPort: null, ...(config.server as object) },
    admin: { host: '127.0.0.1', port: admin },
  };
  const file = join(dir, `${name}.json`);
  // JSON is YAML: the config loader reads it as is.
  writeFileSync(file, JSON.stringify(full, null, 2));
  const p = startProcess(name, process.execPath, [join(root, 'dist/main.js'), '--config', file], { cwd: root });
  const adminUrl = `http://127.0.0.1:${admin}`;
  try {
    await waitUntil(`${name} ready`, async () => (await fetch(`${adminUrl}/ready`)).status === 200);
  } catch (err) {
    await p.stop();
    throw new Error(`${(err as Error).message}\n${p.output()}`);
  }
  return { ...p, url: `http://127.0.0.1:${port}`, adminUrl };
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
    await waitUntil('haproxy', async () => (await rpc(url, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}')).includes('result'), 10_000);
  } catch (err) {
    await p.stop();
    throw new Error(`${(err as Error).message}\n${p.output()}`);
  }
  return { ...p, url };
}

/** The hit-path reference: node:http reading the body and answering one constant JSON-RPC result. */
export async function startBareNode(): Promise<Proc & { url: string }> {
  const port = await freePort();
  const script = `
const http = require('node:http');
const body = Buffer.from('{"jsonrpc":"2.0","id":1,"result":"0xba"}');
const server = http.createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  });
});
server.keepAliveTimeout = 60000;
server.listen(${port}, '127.0.0.1');
`;
  const p = startProcess('bare-node', process.execPath, ['-e', script]);
  const url = `http://127.0.0.1:${port}`;
  await waitUntil('bare node server', async () => (await rpc(url, '{}')).includes('result'), 10_000);
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
}

/**
 * The Lua script for one scenario. `body` is either a constant or a generator: a generator gets a
 * per-request counter and a per-run number (wrk's script argument) and builds the address from both,
 * so no request of any run asks what an earlier one did (no cache or coalescing can answer it).
 * No response() callback: it would make wrk copy every body into Lua and turn the load generator
 * into the bottleneck. Bad answers are counted from Switchyard's own metrics instead (badAnswers).
 */
export function luaScript(body: { constant: string } | { batch: number }): string {
  if ('constant' in body) {
    return `wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [==[${body.constant}]==]
`;
  }
  return `local headers = { ["Content-Type"] = "application/json" }
local counter = 0
local run = 0
function init(args) run = tonumber(args[1]) or 0 end
local function call(i)
  local m = (i % 2 == 0) and "eth_getBalance" or "eth_getTransactionCount"
  return string.format('{"jsonrpc":"2.0","id":%d,"method":"%s","params":["0x%08x%032x","latest"]}', i, m, run, i)
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
`;
}

/** Calls Switchyard answered with anything but a result so far (its switchyard_calls_total). */
export async function badAnswers(adminUrl: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^switchyard_calls_total\{([^}]*)\} (\S+)$/gm)) {
    const outcome = /outcome="([^"]*)"/.exec(m[1]!)?.[1];
    if (outcome !== 'ok' && outcome !== 'cached') n += Number(m[2]);
  }
  return n;
}

let runs = 0;

export async function wrk(url: string, script: string, opts: { connections: number; seconds: number; cpu?: number }): Promise<WrkResult> {
  // Each run gets its own number, passed to the script (see luaScript).
  const args = ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency', '-s', script, url, '--', String(++runs)];
  const pinned = opts.cpu !== undefined && commandExists('taskset');
  const p = startProcess('wrk', pinned ? 'taskset' : 'wrk', pinned ? ['-c', String(opts.cpu), 'wrk', ...args] : args);
  const code = await new Promise<number | null>((r) => p.proc.once('exit', (c) => r(c)));
  const out = p.output();
  if (code !== 0) throw new Error(`wrk exited with ${code}: ${out}`);
  const num = (re: RegExp): number => Number(re.exec(out)?.[1] ?? 0);
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    p50: /\s50%\s+(\S+)/.exec(out)?.[1] ?? '?',
    p99: /\s99%\s+(\S+)/.exec(out)?.[1] ?? '?',
    socketErrors: /Socket errors: (.*)/.exec(out)?.[1] ?? 'none',
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/),
    requests: num(/(\d+) requests in/),
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

/** CPU seconds (user + system) a process has used so far, from /proc/PID/stat. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[11], fields[12]: utime, stime in clock ticks (fields numbered from 3, the state).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
