/**
 * tuneHeap (src/heap.ts) bounds how far the old generation grows past what a full collection kept:
 * a loop whose objects are promoted and then die peaked at 66-80 MB of heap tuned, 121 MB at a 300%
 * growth set on the command line (which tuneHeap leaves in force). The young generation's cap is a
 * command-line flag: every launcher carries the same flags, and with them the young generation
 * stays within 16 MB where V8's default lets it grow to 32.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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

const root = (path: string): string => fileURLToPath(new URL(`../../${path}`, import.meta.url));

/** The node flags of the `switchyard` command (main.ts's first line), `npm start` and the image's entrypoint. */
function launcherFlags(): { command: string[]; 'npm start': string[]; image: string[] } {
  const shebang = readFileSync(root('src/main.ts'), 'utf8').split('\n', 1)[0]!;
  const start = (JSON.parse(readFileSync(root('package.json'), 'utf8')) as { scripts: { start: string } }).scripts
    .start;
  const entry = /^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(root('Dockerfile'), 'utf8'))?.[1];
  const flags = (words: string[]): string[] => words.filter((w) => w.startsWith('--') && w !== '--config');
  return {
    command: flags(shebang.replace(/^#!\/usr\/bin\/env -S node /, '').split(' ')),
    'npm start': flags(
      start
        .replace(/^node /, '')
        .split(' dist/main.js')[0]!
        .split(' '),
    ),
    image: flags(entry === undefined ? [] : (JSON.parse(entry) as string[]).slice(1, -1)),
  };
}

t.test('the command, npm start and the image run node with the same flags', async (t) => {
  const all = launcherFlags();
  t.ok(all.command.includes('--max-semi-space-size=8'), `the command's flags: ${all.command.join(' ')}`);
  t.same(all['npm start'], all.command, 'npm start');
  t.same(all.image, all.command, 'the image');
});

/** The young generation's size (MB) after a burst of short-lived objects, in a node run with `flags`. */
function youngAfterBurst(flags: string[]): number {
  const script = `
    const v8 = require('node:v8');
    let keep = [];
    for (let i = 0; i < 3_000_000; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 20_000) keep = []; }
    const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    console.log(young.space_size / 2 ** 20);
  `;
  const r = spawnSync(process.execPath, [...flags, '-e', script], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`burst failed: ${r.stderr}`);
  return Number(r.stdout.trim());
}

t.test("with the command's flags the young generation stays within 16 MB", async (t) => {
  const shipped = youngAfterBurst(launcherFlags().command);
  const plain = youngAfterBurst([]);
  t.ok(shipped <= 16, `with the flags: ${shipped} MB`);
  // The same burst in a node without them: the cap is the flag's doing.
  t.ok(plain > 16, `without: ${plain} MB`);
});
