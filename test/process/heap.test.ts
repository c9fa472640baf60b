/**
 * tuneHeap (src/heap.ts) bounds how far the old generation grows past what a full collection kept:
 * a loop whose objects are promoted and then die peaked at 66-80 MB of heap tuned, 121 MB at a 300%
 * growth set on the command line (which tuneHeap leaves in force).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';

/** The built module (npm test builds first), in a plain node: a loader's own allocations would blur the figures. */
const heapModule = fileURLToPath(new URL('../../dist/heap.js', import.meta.url));

/** The largest heap (MB) of a churning loop in a fresh node, tuned or not. */
function churn(tuned: boolean, execArgv: string[] = []): number {
  // Objects live long enough to be promoted, then die in the old generation: ~20 MB alive at a time.
  const script = `
    const { tuneHeap } = await import(${JSON.stringify(heapModule)});
    if (${tuned}) tuneHeap(process.execArgv);
    const ring = new Array(100_000);
    let max = 0;
    for (let i = 0; i < 4_000_000; i++) {
      ring[i % ring.length] = { i, s: 'y' + (i & 1023), arr: [i, i + 1, i + 2] };
      if ((i & 65535) === 0) max = Math.max(max, process.memoryUsage().heapTotal);
    }
    console.log(JSON.stringify({ max: max / 2 ** 20, alive: ring.length }));
  `;
  const r = spawnSync(process.execPath, [...execArgv, '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`churn failed: ${r.stderr}`);
  return (JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { max: number }).max;
}

t.test('the old generation grows at most 50% past what survived', async (t) => {
  const tuned = churn(true);
  const loose = churn(true, ['--heap-growing-percent=300']);
  t.ok(tuned < 100, `tuned: the heap peaked at ${tuned.toFixed(1)} MB`);
  // The command line's setting is left in force: 300% lets the same loop hold more.
  t.ok(loose > tuned + 15, `with --heap-growing-percent=300 it peaked at ${loose.toFixed(1)} MB`);
});
