/**
 * What one call costs Switchyard apart from HTTP: `npm run build && node --import tsx
 * test/bench/calls.ts` (not part of `npm run bench` or `npm test`; it loads the built dist/, or
 * CALLS_BUILD=DIR's, another checkout built, for a before/after). An in-process Switchyard in
 * front of one anvil (the bench's chain: past finality, a block every 2 s); CALLS_CONNECTIONS (32)
 * loops each hand the front (src/server/front.ts, what the HTTP and WebSocket listeners call) a
 * body and wait for its answer, CALLS_SECONDS (5) each after a 1 s warm-up: eth_getBalance misses
 * at `latest`, one call per body, then CALLS_BATCH (25) per body; then CALLS_BATCH eth_chainId
 * calls per body, which the front answers itself (what a call costs without the cache or a node:
 * parse, limits, the answer's text); then CALLS_BATCH calls of a method no node serves per body,
 * each refused with its own -32601 (what a flood of refused calls costs a call); then a cache hit in a loop (the bench's eth_getBlockByHash of
 * genesis, answered from memory: no node, no promise). Prints this process's CPU time per body and
 * per call (anvil runs in its own process and is not counted). With an HTTP request's own cost H
 * from `npm run bench` (a single miss there minus a call here), a batch of 25 costs
 * (H + 25 x call) / (H + call) single calls, the ratio docs/benchmarks.md reports for a batch of 25.
 */
import { pathToFileURL } from 'node:url';
import type { Front } from '../../src/server/front.js';
import { cachedRead, startQuietAnvil, switchyardConfig, waitUntil } from './tools.js';

// The built code (dist/, as `npm start` runs it), typed by its sources.
const build = process.env.CALLS_BUILD
  ? pathToFileURL(`${process.env.CALLS_BUILD}/`)
  : new URL('../../', import.meta.url);
const dist = (path: string): Promise<unknown> => import(new URL(`dist/${path}`, build).href);
const { App } = (await dist('app.js')) as typeof import('../../src/app.js');
const { validateConfig } = (await dist('config/load.js')) as typeof import('../../src/config/load.js');
const { createLogger } = (await dist('log/logger.js')) as typeof import('../../src/log/logger.js');

const CONNECTIONS = Number(process.env.CALLS_CONNECTIONS ?? 32);
const BATCH = Number(process.env.CALLS_BATCH ?? 25);
const SECONDS = Number(process.env.CALLS_SECONDS ?? 5);

async function main(): Promise<void> {
  const anvil = await startQuietAnvil();
  const log = createLogger('warn');
  // app.ready then waits for a healthy node too (/ready alone no longer does: SPEC 8).
  const bench = switchyardConfig(anvil.url, {
    admin: { host: '127.0.0.1', port: 0, readyRequiresUpstream: true },
    uptime: { store: null },
  });
  const config = validateConfig({
    ...bench,
    server: { ...(bench.server as object), host: '127.0.0.1', port: 0, wsPort: null },
  });
  const app = await App.start(config, { logger: log, processMetrics: false });
  try {
    await waitUntil('switchyard ready', async () => app.ready);
    // The front is private to the app (in its request path; a build before the request path kept it
    // on the app): this tool measures it without the HTTP listener around it.
    const inner = app as unknown as { path?: { front: Front }; front?: Front };
    const front = (inner.path?.front ?? inner.front)!;
    let n = 0;
    const miss = (): string => {
      n++;
      return `{"jsonrpc":"2.0","id":${n},"method":"eth_getBalance","params":["0x${n.toString(16).padStart(40, '0')}","latest"]}`;
    };
    // Answered by the front itself: parse, limits and the answer's text, no cache, no node.
    const local = (): string => `{"jsonrpc":"2.0","id":${++n},"method":"eth_chainId","params":[]}`;
    // Refused by the front: a method no node serves, each call its own -32601 (a flood's cost per call).
    const unknown = (): string => `{"jsonrpc":"2.0","id":${++n},"method":"eth_none","params":[]}`;
    const runs = [
      { label: 'miss', call: miss, size: 1, answer: '"result"' },
      { label: 'miss', call: miss, size: BATCH, answer: '"result"' },
      { label: 'eth_chainId', call: local, size: BATCH, answer: '"result"' },
      { label: 'refused', call: unknown, size: BATCH, answer: '"code":-32601' },
    ];
    for (const { label, call, size, answer } of runs) {
      const body = (): string => (size === 1 ? call() : `[${Array.from({ length: size }, call).join(',')}]`);
      for (const seconds of [1, SECONDS]) {
        let bodies = 0;
        let bad = 0;
        const until = performance.now() + seconds * 1000;
        const cpu = process.cpuUsage();
        const loop = async (): Promise<void> => {
          while (performance.now() < until) {
            const r = await front.process(body(), { ip: '127.0.0.1' }, log);
            const text = String(r.body);
            const answers = text.split(answer).length - 1;
            const errors = text.split('"error"').length - 1;
            if (r.status !== 200 || answers !== size || errors !== (answer === '"result"' ? 0 : size)) bad++;
            bodies++;
          }
        };
        await Promise.all(Array.from({ length: CONNECTIONS }, loop));
        const used = process.cpuUsage(cpu);
        if (seconds === 1) continue; // the warm-up
        const us = (used.user + used.system) / bodies;
        process.stdout.write(
          `${label.padEnd(11)} ${String(size).padStart(3)} call(s) per body: ${bodies} bodies, ${us.toFixed(1)} us CPU per body, ${(us / size).toFixed(1)} us per call, ${bad} bad answers\n`,
        );
        if (bad > 0) process.exitCode = 1;
      }
    }
    await cacheHits(front, log, (await cachedRead(anvil.url)).call);
  } finally {
    await app.close();
    await anvil.stop();
  }
}

/**
 * The CPU time of a cached answer through the front, in a loop: what a hit costs of Switchyard's
 * JSON-RPC work (parse, limits, pipeline, cache, metrics, the answer's text) without HTTP.
 */
async function cacheHits(front: Front, log: Parameters<Front['process']>[2], call: string): Promise<void> {
  const first = await front.process(call, { ip: '127.0.0.1' }, log);
  if (!String(first.body).includes('"result"')) throw new Error('the hit call has no result');
  for (const seconds of [1, SECONDS]) {
    let n = 0;
    let bad = 0;
    const until = performance.now() + seconds * 1000;
    const cpu = process.cpuUsage();
    while (performance.now() < until) {
      for (let i = 0; i < 100; i++) {
        const r = front.process(call, { ip: '127.0.0.1' }, log);
        // A hit is answered at once: a promise here would be a miss.
        if (r instanceof Promise || r.status !== 200 || r.diagnostics?.cache !== 'hit') bad++;
      }
      n += 100;
    }
    const used = process.cpuUsage(cpu);
    if (seconds === 1) continue;
    process.stdout.write(
      `cache hit                 ${n} calls, ${((used.user + used.system) / n).toFixed(2)} us CPU per call, ${bad} bad answers\n`,
    );
    if (bad > 0) process.exitCode = 1;
  }
}

void main();
