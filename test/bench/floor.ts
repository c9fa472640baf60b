/**
 * What a proxy in Node costs at the least, beside HAProxy and Switchyard in front of one anvil:
 * `npm run build && node --import tsx test/bench/floor.ts` (not part of `npm run bench` or
 * `npm test`; about 5 minutes). The floor is a TCP pipe in a Node process of its own: each client
 * connection gets one connection to the node and the bytes are passed both ways unread, so it
 * pays Node's event loop and system calls and nothing else (no HTTP, no JSON); beside it the bench's
 * pass-through (node:http in front, an undici Pool behind, the bytes unparsed). A batch of 25
 * misses and a single miss (`eth_getBalance` of a new address at `latest`, as in run.ts), each
 * through the three in turn, `wrk -t1 -c32`, FLOOR_ROUNDS (3) alternating rounds of a 1 s
 * warm-up and FLOOR_SECONDS (4) measured; then single misses at one connection, where nothing
 * queues. Prints each one's req/s, p50 and CPU microseconds per request (/proc, all threads),
 * medians, and the ratios: how far below HAProxy Node's own floor is, and what Switchyard costs
 * above it. Every answer is checked; a wrong one ends the run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  answersWrong,
  cpuSeconds,
  luaScript,
  median,
  startHaproxy,
  startNodePipe,
  startPassthrough,
  startQuietAnvil,
  startSwitchyardProcess,
  switchyardConfig,
  wrk,
  writeScript,
} from './tools.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const ROUNDS = Number(process.env.FLOOR_ROUNDS ?? 3);
const SECONDS = Number(process.env.FLOOR_SECONDS ?? 4);

interface Target {
  name: string;
  url: string;
  pid: number;
}

/** Each target's figures over the rounds, the order reversed every other round. */
async function measure(
  label: string,
  targets: readonly Target[],
  script: string,
  connections: number,
): Promise<Map<string, { rps: number[]; us: number[]; p50: string[] }>> {
  const out = new Map(targets.map((t) => [t.name, { rps: [] as number[], us: [] as number[], p50: [] as string[] }]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    for (const t of order) {
      await wrk(t.url, script, { connections, seconds: 1 });
      const before = cpuSeconds(t.pid);
      const r = await wrk(t.url, script, { connections, seconds: SECONDS });
      const us = ((cpuSeconds(t.pid) - before) * 1e6) / r.requests;
      if (answersWrong(r))
        throw new Error(`${label} ${t.name}: ${r.bad} bad answers, ${r.non2xx} non-2xx, ${r.socketErrors}`);
      const f = out.get(t.name)!;
      f.rps.push(r.rps);
      f.us.push(us);
      f.p50.push(r.p50);
    }
  }
  for (const [name, f] of out) {
    process.stdout.write(
      `${label.padEnd(14)} ${name.padEnd(11)} ${median(f.rps).toFixed(0).padStart(6)} req/s  ${median(f.us).toFixed(1).padStart(6)} us CPU/req  p50 ${f.p50.join(' ')}\n`,
    );
  }
  return out;
}

function ratios(label: string, figures: Map<string, { rps: number[]; us: number[] }>): void {
  const rps = (n: string): number => median(figures.get(n)!.rps);
  const us = (n: string): number => median(figures.get(n)!.us);
  process.stdout.write(
    `${label.padEnd(14)} node-pipe / haproxy ${(rps('node-pipe') / rps('haproxy')).toFixed(2)} req/s; ` +
      `passthrough / haproxy ${(rps('passthrough') / rps('haproxy')).toFixed(2)} req/s; ` +
      `switchyard / haproxy ${(rps('switchyard') / rps('haproxy')).toFixed(2)} req/s; ` +
      `switchyard - node-pipe ${(us('switchyard') - us('node-pipe')).toFixed(1)} us CPU/req\n`,
  );
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-floor-'));
  const stops: (() => Promise<void>)[] = [];
  try {
    const anvil = await startQuietAnvil();
    stops.push(() => anvil.stop());
    const sy = await startSwitchyardProcess(ROOT, dir, 'switchyard', switchyardConfig(anvil.url));
    stops.push(() => sy.stop());
    const ha = await startHaproxy(dir, anvil.port);
    stops.push(() => ha.stop());
    const pipe = await startNodePipe(anvil.port);
    stops.push(() => pipe.stop());
    const pass = await startPassthrough(ROOT, anvil.url);
    stops.push(() => pass.stop());
    const targets: Target[] = [
      { name: 'haproxy', url: ha.url, pid: ha.pid },
      { name: 'node-pipe', url: pipe.url, pid: pipe.pid },
      { name: 'passthrough', url: pass.url, pid: pass.pid },
      { name: 'switchyard', url: sy.url, pid: sy.pid },
    ];
    const batch = writeScript(dir, 'batch', luaScript({ batch: 25 }));
    const miss = writeScript(dir, 'miss', luaScript({ batch: 1 }));
    ratios('batch of 25', await measure('batch of 25', targets, batch, 32));
    ratios('miss', await measure('miss', targets, miss, 32));
    ratios('miss, 1 conn', await measure('miss, 1 conn', targets, miss, 1));
  } finally {
    for (const stop of stops.reverse()) await stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
