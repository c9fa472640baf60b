/**
 * What verification costs (SPEC 4.9): `node --import tsx test/bench/verify.ts` (not part of
 * `npm run bench` or `npm test`; needs a build and wrk).
 *   1. Per block: the CPU microseconds verify/answer.ts takes on real anvil blocks: a header (a block
 *      with transaction hashes), blocks with 1, 50 and 200 full transactions, and the receipts of
 *      the 200 (their root; the header asked for it is one more header check); read from the value
 *      the answer's parse made, as Switchyard does, and from the text (one more JSON.parse).
 *   2. Per miss: Switchyards in front of one anvil, routing.verify on and off (VERIFY_TWINS of each,
 *      2 by default), the cache off so every call is a miss, in alternating wrk rounds (as ab.ts) of
 *      eth_getBlockByNumber over 256 blocks; CPU microseconds per request of each, each round's
 *      ratio of the kinds (their twins' mean), the twins' own ratios, and the ratio of the kinds'
 *      medians (the target: within 1.10).
 *   VERIFY_ROUNDS  5 rounds of a 1 s warm-up and a 4 s measured run per Switchyard each.
 *   VERIFY_CPU_PROF=DIR  each Switchyard writes a --cpu-prof profile to DIR/<name>/ when it stops:
 *      the share of its busy time under routing/verified.ts judged() is what verification costs it,
 *      a figure a busy host disturbs less than the CPU per request.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkAnswer } from '../../src/verify/answer.js';
import { keccakReady } from '../../src/verify/keccak.js';
import {
  answersWrong,
  measuredWrk,
  median,
  rpc,
  startQuietAnvil,
  startSwitchyardBuild,
  switchyardConfig,
  wrk,
  writeScript,
} from './tools.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ROUNDS = Number(process.env.VERIFY_ROUNDS ?? 5);
const TWINS = Number(process.env.VERIFY_TWINS ?? 2);
const PROF = process.env.VERIFY_CPU_PROF;
const DEV = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

async function call(url: string, method: string, params: unknown[]): Promise<any> {
  return (JSON.parse(await rpc(url, JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))) as { result: unknown })
    .result;
}

/**
 * CPU microseconds per call of `f` (this process's user + system time, so that other processes
 * on a busy host do not count), over about 0.3 s after a warm-up.
 */
function usPer(f: () => unknown): number {
  for (let i = 0; i < 50; i++) f();
  let n = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  while (performance.now() - started < 300) {
    f();
    n++;
  }
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / n;
}

async function perBlock(url: string): Promise<void> {
  await keccakReady();
  await call(url, 'evm_setIntervalMining', [0]);
  await call(url, 'evm_setAutomine', [false]);
  const blocks: { label: string; method: string; params: string; text: string }[] = [];
  for (const n of [1, 50, 200]) {
    for (let i = 0; i < n; i++)
      await call(url, 'eth_sendTransaction', [{ from: DEV, to: `0x${'33'.repeat(20)}`, value: '0x1' }]);
    await call(url, 'evm_mine', []);
    const number = (await call(url, 'eth_blockNumber', [])) as string;
    const full = await call(url, 'eth_getBlockByNumber', [number, true]);
    if (full.transactions.length !== n)
      throw new Error(`block ${number}: ${full.transactions.length} transactions, not ${n}`);
    if (n === 1)
      blocks.push({
        label: 'header',
        method: 'eth_getBlockByNumber',
        params: `["${number}",false]`,
        text: JSON.stringify(await call(url, 'eth_getBlockByNumber', [number, false])),
      });
    blocks.push({
      label: `${n} transactions`,
      method: 'eth_getBlockByNumber',
      params: `["${number}",true]`,
      text: JSON.stringify(full),
    });
    if (n === 200)
      blocks.push({
        label: `${n} receipts`,
        method: 'eth_getBlockReceipts',
        params: `["${number}"]`,
        text: JSON.stringify(await call(url, 'eth_getBlockReceipts', [number])),
      });
  }
  await call(url, 'evm_setAutomine', [true]);
  await call(url, 'evm_setIntervalMining', [2]);
  for (const b of blocks) {
    const check = checkAnswer(b.method, b.params, b.text);
    if (check.is === 'wrong' || check.is === 'unverified') throw new Error(`${b.label}: ${JSON.stringify(check)}`);
    // As Switchyard verifies: from the value the answer's own parse read (upstream/answers.ts);
    // and from the text alone, as for an answer read as bytes (past 1 MiB).
    // Alternated over 5 rounds, each figure their median: a busy host slows whichever runs when it is.
    const value = JSON.parse(b.text) as unknown;
    const figures: number[][] = [[], [], []];
    for (let round = 0; round < 5; round++) {
      figures[0]!.push(usPer(() => checkAnswer(b.method, b.params, b.text, value)));
      figures[1]!.push(usPer(() => checkAnswer(b.method, b.params, b.text)));
      figures[2]!.push(usPer(() => JSON.parse(b.text)));
    }
    const [us, fromText, parse] = figures.map(median) as [number, number, number];
    process.stdout.write(
      `per block  ${b.label.padEnd(18)} ${us.toFixed(1).padStart(8)} us verified (from its text ${fromText.toFixed(1)} us, JSON.parse ${parse.toFixed(1)} us), ${b.text.length} bytes\n`,
    );
  }
}

const MISS_SCRIPT = `local headers = { ["Content-Type"] = "application/json" }
local counter = 0
function request()
  counter = counter + 1
  return wrk.format("POST", "/", headers, string.format('{"jsonrpc":"2.0","id":%d,"method":"eth_getBlockByNumber","params":["0x%x",false]}', counter, counter % 256 + 1))
end
bad = 0
checked = 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
function response(status, headers, body)
  checked = checked + 1
  if status ~= 200 or not string.find(body, '"stateRoot"', 1, true) then bad = bad + 1 end
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

async function perMiss(url: string, dir: string, stops: (() => Promise<void>)[]): Promise<void> {
  await call(url, 'anvil_mine', ['0x100']);
  // Twins of each kind: one process keeps its own luck (memory layout, JIT) for its whole life,
  // and the spread between twins is what a difference between kinds must stand above.
  const kinds: { name: string; enabled: boolean }[] = [];
  for (let k = 1; k <= TWINS; k++)
    kinds.push({ name: `verified${k}`, enabled: true }, { name: `unverified${k}`, enabled: false });
  const sys: Awaited<ReturnType<typeof startSwitchyardBuild>>[] = [];
  for (const { name, enabled } of kinds) {
    const config = switchyardConfig(url, { cache: { maxBytes: 0 }, routing: { verify: { enabled } } });
    const prof = PROF === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(PROF, name)}`];
    const sy = await startSwitchyardBuild(resolve(ROOT, '.'), dir, name, config, prof);
    stops.push(() => sy.stop());
    sys.push(sy);
  }
  const script = writeScript(dir, 'blocks', MISS_SCRIPT);
  const us = new Map<string, number[]>(sys.map((x) => [x.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const sy of round % 2 === 0 ? sys : [...sys].reverse()) {
      await wrk(sy.url, script, { connections: 32, seconds: 1 });
      const m = await measuredWrk(sy.url, sy.pid, script, { connections: 32, seconds: 4 });
      if (answersWrong(m.r))
        throw new Error(
          `${sy.name}: wrong answers in round ${round + 1}: ${JSON.stringify(m.r)}\n${sy.output().slice(-3000)}`,
        );
      us.get(sy.name)!.push(m.usPerReq);
    }
  }
  for (const [name, xs] of us)
    process.stdout.write(
      `per miss   ${name.padEnd(12)} median ${median(xs).toFixed(1).padStart(6)} us/req  [${xs.map((x) => x.toFixed(1)).join(' ')}]\n`,
    );
  // Each round's figure of a kind: the mean of its twins in that round.
  const kind = (enabled: boolean): number[] =>
    Array.from({ length: ROUNDS }, (_, r) => {
      const xs = sys.filter((_, i) => kinds[i]!.enabled === enabled).map((sy) => us.get(sy.name)![r]!);
      return xs.reduce((a, b) => a + b, 0) / xs.length;
    });
  const v = kind(true);
  const u = kind(false);
  process.stdout.write(`per miss   each round's ratio  [${v.map((x, k) => (x / u[k]!).toFixed(2)).join(' ')}]\n`);
  if (TWINS > 1) {
    const twin = (a: string, b: string): string => (median(us.get(a)!) / median(us.get(b)!)).toFixed(3);
    process.stdout.write(
      `per miss   twins alike: verified1 / verified2 ${twin('verified1', 'verified2')}, unverified1 / unverified2 ${twin('unverified1', 'unverified2')}\n`,
    );
  }
  const ratio = median(v) / median(u);
  process.stdout.write(`per miss   verified / unverified: ${ratio.toFixed(3)} (target: at most 1.10)\n`);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-verify-'));
  const stops: (() => Promise<void>)[] = [];
  try {
    const anvil = await startQuietAnvil();
    stops.push(() => anvil.stop());
    await perBlock(anvil.url);
    await perMiss(anvil.url, dir, stops);
  } finally {
    for (const stop of stops.reverse()) await stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`verify bench failed: ${(err as Error).message}\n`);
  process.exit(1);
});
