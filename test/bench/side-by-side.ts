/**
 * Two Switchyards of one build measured side by side: both loaded at the same time, each by its own
 * wrk with half the bench's connections, so that whatever the machine does meanwhile falls on both
 * alike. Each is pinned to a core of its own (taskset), the cores swapping every round: the two
 * cores of this machine's virtual CPU do not run at one speed (one ran the same process at half
 * the other's rate for minutes at a time), and unpinned, the scheduler's placement decided which
 * side was slower. Every round gives one ratio (B's req/s over A's, and B's CPU us/req over A's).
 * `npm run bench` uses it for tracing's cost (BENCH_TRACING=1): A is an untraced reference, B in
 * turn the traced process and an untraced twin, and the figure is the traced one's ratio over the
 * twin's from the same cores, round by round: what is left of the machine is what the reference
 * did not see (docs/benchmarks.md has what each method read on this machine).
 */
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { answersWrong, measuredWrk, wrk, type Measured } from './tools.js';

export interface Loaded {
  url: string;
  pid: number;
}

export interface SideBySide {
  /** B's req/s / A's, per round. */
  rps: number[];
  /** B's CPU us/req / A's, per round. */
  us: number[];
  /** Rounds with any answer wrong or a socket error, on either side. */
  bad: number;
}

/** Every thread of process `pid` runs on core `cpu` from now on (on one core, nothing to choose). */
export function pin(pid: number, cpu: number): void {
  if (availableParallelism() < 2) return;
  execFileSync('taskset', ['--all-tasks', '--pid', '--cpu-list', String(cpu), String(pid)], { stdio: 'ignore' });
}

/**
 * One round of A and B loaded together under `script`, its ratios added to `into`: A pinned to core
 * `round % 2` and B to the other, a `warmup`-second run, then a `seconds`-second measured one.
 */
export async function sideBySide(
  into: SideBySide,
  a: Loaded,
  b: Loaded,
  script: string,
  opts: { connections: number; warmup: number; seconds: number; round: number; label: string },
): Promise<void> {
  const half = Math.max(1, Math.floor(opts.connections / 2));
  pin(a.pid, opts.round % 2);
  pin(b.pid, 1 - (opts.round % 2));
  await Promise.all([a, b].map((s) => wrk(s.url, script, { connections: half, seconds: opts.warmup })));
  const [ma, mb] = (await Promise.all(
    [a, b].map((s) => measuredWrk(s.url, s.pid, script, { connections: half, seconds: opts.seconds })),
  )) as [Measured, Measured];
  if (answersWrong(ma.r) || answersWrong(mb.r)) into.bad++;
  into.rps.push(mb.r.rps / ma.r.rps);
  into.us.push(mb.usPerReq / ma.usPerReq);
  process.stdout.write(
    `  ${opts.label.padEnd(16)} cores ${opts.round % 2}/${1 - (opts.round % 2)}  ${ma.r.rps.toFixed(0).padStart(6)} / ${mb.r.rps.toFixed(0).padStart(6)} req/s  ${ma.usPerReq.toFixed(1).padStart(6)} / ${mb.usPerReq.toFixed(1).padStart(6)} us/req  ratio ${(mb.r.rps / ma.r.rps).toFixed(3)}\n`,
  );
}

/** The geometric mean of ratios (1 for none): a ratio and its inverse weigh alike. */
export function geomean(ratios: readonly number[]): number {
  if (ratios.length === 0) return 1;
  return Math.exp(ratios.reduce((s, r) => s + Math.log(r), 0) / ratios.length);
}
