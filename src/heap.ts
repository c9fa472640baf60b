/**
 * The V8 heap settings the process runs with, set at start (no command-line flag needed, so every
 * way of launching it gets them). Measurements: docs/benchmarks.md, "Where the time goes".
 *
 * One setting V8 reads only when the process starts is on the command line instead: the young
 * generation's cap, `--max-semi-space-size=8` (16 MB of young generation; V8's own cap is 32 MB).
 * The `switchyard` command (main.ts's first line), `npm start` and the image's entrypoint carry it;
 * test/process/heap.test.ts holds the three to the same flags. Under sustained misses with the cache
 * off it kept RSS 11-14 MB lower (139-142 MB against 152-155, same run, alternated) with CPU per
 * call unchanged within the noise.
 */
import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets the old generation grow past what the last full collection kept alive. V8's own
 * factor (up to 4x, from its speed measurements) let a cache-off process under sustained misses
 * hold 104-120 MB of heap for about 27 MB alive, the rest garbage awaiting a full collection:
 * RSS 169-186 MB. At 50% it held 75 MB, RSS 142 MB, CPU per call unchanged within the noise.
 */
const HEAP_GROWING_PERCENT = 50;

/**
 * Allocation-site pretenuring off, and the old generation's growth bounded (HEAP_GROWING_PERCENT)
 * unless the node command line sets `--heap-growing-percent` itself.
 *
 * Pretenuring: V8 sees a call's objects (its parsed request, plan and routing state) outlive a
 * young-generation collection while its upstream call is out, and starts allocating them in the
 * old generation. They die a few milliseconds later, but there only a full collection frees them,
 * and until it runs they keep the young objects they point to alive through every scavenge. Off, a
 * batch of 25 misses measured 10-20% less CPU (scavenge time down 40%); single calls unchanged.
 */
export function tuneHeap(execArgv: readonly string[] = process.execArgv): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
  if (!execArgv.some((a) => /^--heap[-_]growing[-_]percent/.test(a)))
    setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
