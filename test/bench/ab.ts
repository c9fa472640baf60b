/**
 * One scenario of `npm run bench`, over several Switchyards of one run, in alternating rounds:
 * `node --import tsx test/bench/ab.ts` (not part of `npm run bench` or `npm test`). What it is
 * for: telling what one setting or one build costs, which the main bench's medians of 3 cannot
 * separate from the host's drift (docs/benchmarks.md, "Latest full run", is measured with it).
 *   AB_BUILDS     JSON, name -> a built checkout (default {"switchyard": "."}); a name may repeat a
 *                 directory with other settings
 *   AB_SERVER_<name>      JSON merged into that one's `server` config, e.g. {"diagnosticHeaders":false}
 *   AB_CONFIG_<name>      JSON merged into that one's config at the top, e.g. {"tracing":{"enabled":true}};
 *                         a `tracing` without an endpoint exports to a collector stand-in here
 *   AB_NODE_ARGS_<name>   JSON array of node flags, e.g. ["--heap-growing-percent=300"]
 *   AB_SCENARIO   miss (default), batch (25 misses a body), hit, local: as in run.ts
 *   AB_ROUNDS     5; each a 1 s warm-up and a 4 s measured wrk -t1 -c32 run per Switchyard, the
 *                 order reversed every other round
 *   AB_PIN        1: every Switchyard pinned to the last core (taskset), wrk and anvil left the
 *                 others: less CPU per request for all (six untraced of one build: 34.6-38.8 us
 *                 per hit pinned, 40.2-45.7 us not), but one process still reads apart from the
 *                 next for its whole life, the first two started the cheapest in every run so
 *                 far: compare several processes of each (docs/benchmarks.md, "Reading the figures")
 * Prints each one's CPU microseconds per request (/proc, as run.ts), the median and every round.
 * Every answer is checked; a wrong one ends the run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  answersWrong,
  CHAIN_ID_CALL,
  cachedRead,
  luaScript,
  measuredWrk,
  median,
  rpc,
  startCollectorSink,
  startQuietAnvil,
  startSwitchyardBuild,
  switchyardConfig,
  wrk,
  writeScript,
} from './tools.js';
import { pin } from './side-by-side.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUILDS = JSON.parse(process.env.AB_BUILDS ?? '{"switchyard":"."}') as Record<string, string>;
const SCENARIO = process.env.AB_SCENARIO ?? 'miss';
const ROUNDS = Number(process.env.AB_ROUNDS ?? 5);
const PIN = process.env.AB_PIN === '1';
const CONNECTIONS = 32;
const SECONDS = 4;

function script(dir: string, hitCall: string): string {
  switch (SCENARIO) {
    case 'miss':
      return writeScript(dir, 'miss', luaScript({ batch: 1 }));
    case 'batch':
      return writeScript(dir, 'batch', luaScript({ batch: 25 }));
    case 'hit':
      return writeScript(dir, 'hit', luaScript({ constant: hitCall, expect: 1 }));
    case 'local':
      return writeScript(dir, 'local', luaScript({ constant: CHAIN_ID_CALL, expect: 1 }));
    default:
      throw new Error(`AB_SCENARIO: expected miss, batch, hit or local, got ${SCENARIO}`);
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-ab-'));
  const stops: (() => Promise<void>)[] = [];
  try {
    const anvil = await startQuietAnvil();
    stops.push(() => anvil.stop());
    const { call: hitCall, genesis } = await cachedRead(anvil.url);
    const sink = await startCollectorSink();
    stops.push(sink.stop);
    const sys = [];
    for (const [name, build] of Object.entries(BUILDS)) {
      const config = switchyardConfig(anvil.url);
      config.server = { ...(config.server as object), ...JSON.parse(process.env[`AB_SERVER_${name}`] ?? '{}') };
      Object.assign(config, JSON.parse(process.env[`AB_CONFIG_${name}`] ?? '{}'));
      if (typeof config.tracing === 'object') config.tracing = { endpoint: sink.url, ...config.tracing };
      const args = JSON.parse(process.env[`AB_NODE_ARGS_${name}`] ?? '[]') as string[];
      const sy = await startSwitchyardBuild(resolve(ROOT, build), dir, name, config, args);
      stops.push(() => sy.stop());
      if (!(await rpc(sy.url, hitCall)).includes(genesis)) throw new Error(`${name} does not answer the hit call`);
      if (PIN) pin(sy.pid, availableParallelism() - 1);
      sys.push(sy);
    }
    const s = script(dir, hitCall);
    const us = new Map<string, number[]>(sys.map((x) => [x.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const sy of round % 2 === 0 ? sys : [...sys].reverse()) {
        await wrk(sy.url, s, { connections: CONNECTIONS, seconds: 1 });
        const m = await measuredWrk(sy.url, sy.pid, s, { connections: CONNECTIONS, seconds: SECONDS });
        if (answersWrong(m.r)) throw new Error(`${sy.name}: wrong answers in round ${round + 1}`);
        us.get(sy.name)!.push(m.usPerReq);
      }
    }
    for (const [name, xs] of us)
      process.stdout.write(
        `${SCENARIO} ${name.padEnd(12)} median ${median(xs).toFixed(1).padStart(6)} us/req  [${xs.map((x) => x.toFixed(1)).join(' ')}]\n`,
      );
  } finally {
    for (const stop of stops.reverse()) await stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`ab failed: ${(err as Error).message}\n`);
  process.exit(1);
});
