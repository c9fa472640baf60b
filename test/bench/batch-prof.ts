/**
 * A CPU profile of batches of misses through the front, in process, without HTTP:
 * `npm run build && node --import tsx test/bench/batch-prof.ts` writes PROF_OUT (batch.cpuprofile)
 * covering only the measured window (PROF_SECONDS, 5, after a 1 s warm-up) of PROF_CONNECTIONS (16)
 * loops each sending a batch of PROF_BATCH (25) eth_getBalance misses at `latest` to one anvil.
 * Its relative shares hold on a loaded machine, its times do not. Not part of `npm run bench`.
 * PROF_KIND=alloc: a sampling heap profile of the same window instead (batch.heapprofile), the
 * objects the collector took since counted too, and it prints the bytes a call allocated and the
 * functions that allocated most (what a scavenge's frequency follows).
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import type { Front } from '../../src/server/front.js';
import { startQuietAnvil, switchyardConfig, waitUntil } from './tools.js';

const dist = (path: string): Promise<unknown> => import(new URL(`../../dist/${path}`, import.meta.url).href);
const { App } = (await dist('app.js')) as typeof import('../../src/app.js');
const { validateConfig } = (await dist('config/load.js')) as typeof import('../../src/config/load.js');
const { createLogger } = (await dist('log/logger.js')) as typeof import('../../src/log/logger.js');

const CONNECTIONS = Number(process.env.PROF_CONNECTIONS ?? 16);
const BATCH = Number(process.env.PROF_BATCH ?? 25);
const SECONDS = Number(process.env.PROF_SECONDS ?? 5);
const ALLOC = process.env.PROF_KIND === 'alloc';
const OUT = process.env.PROF_OUT ?? (ALLOC ? 'batch.heapprofile' : 'batch.cpuprofile');

/** A node of a sampling heap profile (HeapProfiler.stopSampling). */
interface SampledNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SampledNode[];
}

/**
 * The bytes a call allocated in the window (the sampled sizes, collected objects included: V8
 * scales each sample to what it stands for) and the functions that allocated most of them,
 * each with what it inlined; the loop's own bodies are among them.
 */
function printAllocations(head: { head: SampledNode } | SampledNode, calls: number): void {
  const bySite = new Map<string, number>();
  const walk = (n: SampledNode): void => {
    const f = n.callFrame;
    const site = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
    bySite.set(site, (bySite.get(site) ?? 0) + n.selfSize);
    for (const c of n.children) walk(c);
  };
  walk('head' in head ? head.head : head);
  const total = [...bySite.values()].reduce((a, b) => a + b, 0);
  process.stdout.write(`allocated: ${(total / calls).toFixed(0)} bytes a call; the most by function (bytes a call):\n`);
  for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 15))
    process.stdout.write(`  ${(bytes / calls).toFixed(0).padStart(6)}  ${site}\n`);
}

const anvil = await startQuietAnvil();
const log = createLogger('warn');
const bench = switchyardConfig(anvil.url, {
  admin: { host: '127.0.0.1', port: 0, readyRequiresUpstream: true },
  uptime: { store: null },
});
const config = validateConfig({
  ...bench,
  server: { ...(bench.server as object), host: '127.0.0.1', port: 0, wsPort: null },
});
const app = await App.start(config, { logger: log, processMetrics: false });
const session = new Session();
try {
  await waitUntil('switchyard ready', async () => app.ready);
  const inner = app as unknown as { path?: { front: Front }; front?: Front };
  const front = (inner.path?.front ?? inner.front)!;
  let n = 0;
  const call = (): string => {
    n++;
    return `{"jsonrpc":"2.0","id":${n},"method":"eth_getBalance","params":["0x${n.toString(16).padStart(40, '0')}","latest"]}`;
  };
  const body = (): string => (BATCH === 1 ? call() : `[${Array.from({ length: BATCH }, call).join(',')}]`);
  session.connect();
  for (const seconds of [1, SECONDS]) {
    if (seconds === SECONDS && ALLOC) {
      // Every allocation sampled, those the collector took since included: what a call allocates.
      await session.post('HeapProfiler.enable');
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 1024,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    } else if (seconds === SECONDS) {
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 100 });
      await session.post('Profiler.start');
    }
    let bodies = 0;
    let bad = 0;
    const until = performance.now() + seconds * 1000;
    const cpu = process.cpuUsage();
    const loop = async (): Promise<void> => {
      while (performance.now() < until) {
        const r = await front.process(body(), { ip: '127.0.0.1' }, log);
        const text = String(r.body);
        if (r.status !== 200 || text.split('"result"').length - 1 !== BATCH || text.includes('"error"')) bad++;
        bodies++;
      }
    };
    await Promise.all(Array.from({ length: CONNECTIONS }, loop));
    const used = process.cpuUsage(cpu);
    if (seconds !== SECONDS) continue;
    const { profile } = ALLOC ? await session.post('HeapProfiler.stopSampling') : await session.post('Profiler.stop');
    writeFileSync(OUT, JSON.stringify(profile));
    const us = (used.user + used.system) / bodies;
    process.stdout.write(
      `${BATCH} call(s) per body: ${bodies} bodies, ${us.toFixed(1)} us CPU per body, ${(us / BATCH).toFixed(1)} us per call, ${bad} bad answers; profile in ${OUT}\n`,
    );
    if (ALLOC) printAllocations(profile as unknown as SampledNode, bodies * BATCH);
    if (bad > 0) process.exitCode = 1;
  }
} finally {
  session.disconnect();
  await app.close();
  await anvil.stop();
}
