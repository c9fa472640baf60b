/**
 * Hedged reads' figures (SPEC 4.9): three real anvils, each behind a delaying proxy
 * (test/helpers/delay-proxy.ts, in this process), Switchyard from dist/ in front of them.
 * (a) every node answers 300 ms late on 3% of calls: the p99 of reads with hedging on (target
 *     under 150 ms) and off (about 300 ms);
 * (b) one node of three answers 300 ms late a third of the time: the p99 with hedging on against
 *     the p99 of the two other nodes alone (target: within 50 ms).
 * Reads: eth_getBalance of a new address every call at `latest` (no cache, no coalescing), from
 * CONCURRENCY closed-loop clients; a warm-up first (hedge delays need each node's figures), then
 * the measured calls, every answer checked. Part of `npm run bench` (run.ts writes its rows into
 * docs/benchmarks.md); alone: `npm run build && node --import tsx test/bench/hedge.ts`
 * (BENCH_QUICK=1: fewer calls).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { startDelayProxy, type DelayProxy } from '../helpers/delay-proxy.js';
import { startQuietAnvil, startSwitchyardProcess, switchyardConfig } from './tools.js';

const LATE_MS = 300;
const CONCURRENCY = 8;

export interface HedgeRun {
  label: string;
  calls: number;
  p50: number;
  p99: number;
  bad: number;
  hedges: { won: number; lost: number; skipped: number };
}

export interface HedgeFigures {
  everyNode: { on: HedgeRun; off: HedgeRun };
  oneNode: { three: HedgeRun; two: HedgeRun };
}

let nextAddress = 0;
const address = (): string => `0x${(0xc0000000 + nextAddress++).toString(16).padStart(40, '0')}`;

/** `n` reads from CONCURRENCY clients; each call's time in ms, and the answers that were not 0x0. */
async function load(pool: Pool, n: number): Promise<{ ms: number[]; bad: number }> {
  const ms: number[] = [];
  let bad = 0;
  let left = n;
  const client = async (): Promise<void> => {
    while (left-- > 0) {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [address(), 'latest'] });
      const started = performance.now();
      const res = await pool.request({
        path: '/',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      const text = await res.body.text();
      ms.push(performance.now() - started);
      if (res.statusCode !== 200 || !text.includes('"result":"0x0"')) bad++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  return { ms, bad };
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

async function hedgeCounts(adminUrl: string): Promise<HedgeRun['hedges']> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const of = (outcome: string): number => {
    const m = new RegExp(`^switchyard_hedges_total\\{outcome="${outcome}"\\} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  };
  return { won: of('won'), lost: of('lost'), skipped: of('skipped') };
}

/** One Switchyard in front of `proxies`, warmed up, then `calls` measured reads. */
async function run(
  root: string,
  dir: string,
  label: string,
  proxies: DelayProxy[],
  hedge: boolean,
  calls: number,
): Promise<HedgeRun> {
  const config = switchyardConfig(proxies[0]!.url, {
    routing: { hedge: { enabled: hedge } },
  });
  config.upstreams = proxies.map((p, k) => ({ name: `node-${k}`, url: p.url }));
  const sy = await startSwitchyardProcess(root, dir, `hedge-${label.replace(/\W+/g, '-')}`, config);
  const pool = new Pool(sy.url, { connections: CONCURRENCY });
  try {
    await load(pool, Math.max(300, calls / 5));
    const before = await hedgeCounts(sy.adminUrl);
    const { ms, bad } = await load(pool, calls);
    const after = await hedgeCounts(sy.adminUrl);
    ms.sort((a, b) => a - b);
    return {
      label,
      calls,
      p50: quantile(ms, 0.5),
      p99: quantile(ms, 0.99),
      bad,
      hedges: { won: after.won - before.won, lost: after.lost - before.lost, skipped: after.skipped - before.skipped },
    };
  } finally {
    await pool.close();
    await sy.stop();
  }
}

export async function hedgeBench(root: string, quick: boolean): Promise<HedgeFigures> {
  const calls = quick ? 1_500 : 6_000;
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-hedge-'));
  const anvils = await Promise.all([1, 2, 3].map(() => startQuietAnvil({ live: false })));
  const proxies = await Promise.all(anvils.map((a) => startDelayProxy(a.url)));
  const late = (share: number) => (method: string) =>
    method === 'eth_getBalance' && Math.random() < share ? LATE_MS : 0;
  try {
    for (const p of proxies) p.delayOf = late(0.03);
    const on = await run(root, dir, 'every node late on 3%, hedging on', proxies, true, calls);
    const off = await run(root, dir, 'every node late on 3%, hedging off', proxies, false, calls);
    for (const p of proxies) p.delayOf = () => 0;
    proxies[2]!.delayOf = late(1 / 3);
    const three = await run(root, dir, 'one node of three late a third of the time', proxies, true, calls);
    const two = await run(root, dir, 'that node removed', proxies.slice(0, 2), true, calls);
    return { everyNode: { on, off }, oneNode: { three, two } };
  } finally {
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(anvils.map((a) => a.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}

const f1 = (x: number): string => x.toFixed(1);

/** The figures as rows of the bench's ratio table (| figure | value | | target |). */
export function hedgeRows(f: HedgeFigures): string[] {
  const h = (r: HedgeRun): string =>
    `${r.calls} reads, p50 ${f1(r.p50)} ms, hedges won ${r.hedges.won} lost ${r.hedges.lost} skipped ${r.hedges.skipped}${r.bad > 0 ? `, ${r.bad} BAD ANSWERS` : ''}`;
  const { on, off } = f.everyNode;
  const { three, two } = f.oneNode;
  return [
    `| hedged reads, every node ${LATE_MS} ms late on 3% of calls: p99 (ms) with hedging on (${h(on)}) | ${f1(on.p99)} | | < 150 |`,
    `| the same with hedging off (${h(off)}) | ${f1(off.p99)} | | ~${LATE_MS} |`,
    `| hedged reads, one node of three ${LATE_MS} ms late a third of the time: p99 (ms) (${h(three)}) minus p99 with that node removed (${f1(two.p99)} ms; ${h(two)}) | ${f1(three.p99 - two.p99)} | | < 50 |`,
  ];
}

/** Any wrong answer in the hedged reads' runs. */
export function hedgeBad(f: HedgeFigures): number {
  return f.everyNode.on.bad + f.everyNode.off.bad + f.oneNode.three.bad + f.oneNode.two.bad;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  hedgeBench(root, process.env.BENCH_QUICK === '1').then(
    (f) => {
      process.stdout.write(`${['| figure | value | | target |', '|---|---:|---:|---|', ...hedgeRows(f)].join('\n')}\n`);
      process.exit(hedgeBad(f) > 0 ? 1 : 0);
    },
    (err: unknown) => {
      process.stderr.write(`hedge bench failed: ${(err as Error).stack ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
