/**
 * The uptime answers made at most once a second (uptime/pages/page-memo.ts): served again within
 * MEMO_MS unless the report changed (a probe, an incident, a window), keyed only by what the answer
 * depends on, bounded in entries and bytes. Then, measured: a Switchyard with the largest report
 * there is (50 incidents of 50 updates of 2,000 characters: uptime.json of about 5 MB) polled as
 * fast as another process can, while a bystander calls: its failures and p99, and how much of the
 * time the event loop was held.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { UptimeReport } from '../../src/uptime/report.js';
import { MEMO_BYTES, MEMO_ENTRIES, MEMO_MS, memoUptimeAnswer } from '../../src/uptime/pages/page-memo.js';
import type { UptimePages } from '../../src/uptime/pages/routes.js';
import { UptimeStore } from '../../src/uptime/store/store.js';
import { startAnvil } from '../helpers/anvil.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { stopProcess } from '../helpers/process.js';

function fakePages(): UptimePages & { current: UptimeReport } {
  const current = {
    title: 'Status',
    chainId: '0xba',
    state: 'operational',
    checkedAt: '2026-11-27T00:00:00.000Z',
    checks: { reachable: { ok: true }, advancing: { ok: true, head: '0x1', headAgeSeconds: 0 } },
    uptime: { '24h': 1, '7d': 1, '30d': 1 },
    observedSeconds: { '24h': 60, '7d': 60, '30d': 60 },
    history: { from: '2026-11-26T00:00:00.000Z', segmentSeconds: 960, segments: [] },
    daily: [],
    components: [],
    incidents: [],
    maintenance: [],
    probeIntervalMs: 5_000,
    stallAfterSeconds: 30,
  } as unknown as UptimeReport;
  return {
    current,
    report() {
      return this.current;
    },
    uptime30d: () => 1,
    title: 'Status',
    probeIntervalMs: 5_000,
  };
}

t.test('an answer is made once a second, and again at once when the report changes', async (t) => {
  const pages = fakePages();
  const t0 = 1_000_000;
  const first = memoUptimeAnswer(pages, '/uptime.json', {}, t0);
  t.equal(first?.status, 200);
  t.ok(Buffer.isBuffer(first?.body), 'kept as bytes: encoded once');
  t.equal(memoUptimeAnswer(pages, '/uptime.json', {}, t0 + MEMO_MS - 1), first, 'served again within MEMO_MS');
  t.equal(memoUptimeAnswer(pages, '/uptime.json?x=1', {}, t0 + 1), first, 'a query string makes no new entry');
  t.not(memoUptimeAnswer(pages, '/uptime.json', {}, t0 + MEMO_MS), first, 'made again after MEMO_MS');

  const second = memoUptimeAnswer(pages, '/uptime.json', {}, t0 + 5_000);
  pages.current = { ...pages.current, checkedAt: '2026-11-27T00:00:05.000Z' };
  const probed = memoUptimeAnswer(pages, '/uptime.json', {}, t0 + 5_001);
  t.not(probed, second, 'a probe makes it again at once');
  t.match(String(probed?.body), /00:00:05/);
  pages.current = { ...pages.current, incidents: [] };
  t.not(memoUptimeAnswer(pages, '/uptime.json', {}, t0 + 5_002), probed, 'a new incident list makes it again');
  const before = memoUptimeAnswer(pages, '/uptime.json', {}, t0 + 5_003);
  pages.current = {
    ...pages.current,
    maintenance: [
      { id: 'admin-1', title: 'Upgrade', start: '2026-11-28T00:00:00Z', end: '2026-11-28T01:00:00Z', scope: 'all' },
    ],
  };
  const windowed = memoUptimeAnswer(pages, '/uptime.json', {}, t0 + 5_004);
  t.not(windowed, before, 'a maintenance window makes it again');
  t.match(String(windowed?.body), /Upgrade/);
});

t.test('keyed by what the answer depends on, and bounded', async (t) => {
  const pages = fakePages();
  const now = 2_000_000;
  const html = memoUptimeAnswer(pages, '/', { accept: 'text/html' }, now);
  const page = memoUptimeAnswer(pages, '/uptime', {}, now);
  t.equal(html?.headers.vary, 'Accept', '`/` keeps its Vary');
  t.equal(page?.headers.vary, undefined, '/uptime has none: a separate entry');
  t.equal(memoUptimeAnswer(pages, '/', { accept: 'application/json' }, now), null, 'a JSON GET / is no uptime path');
  t.equal(memoUptimeAnswer(pages, '/nothing', {}, now), null);
  const feedA = memoUptimeAnswer(pages, '/uptime/feed.atom', { host: 'a.example' }, now);
  const feedB = memoUptimeAnswer(pages, '/uptime/feed.atom', { host: 'b.example' }, now);
  t.not(feedA, feedB, 'the feed is kept per Host (its links name it)');
  t.match(String(feedB?.body), /b\.example/);

  // More Hosts than entries: the oldest go, the newest stay.
  const kept = memoUptimeAnswer(pages, '/uptime/badge.svg', {}, now);
  for (let i = 0; i < MEMO_ENTRIES; i++) memoUptimeAnswer(pages, '/uptime/feed.atom', { host: `h${i}.example` }, now);
  t.not(memoUptimeAnswer(pages, '/uptime/badge.svg', {}, now), kept, 'an entry pushed out is made again');
  const last = memoUptimeAnswer(pages, '/uptime/feed.atom', { host: `h${MEMO_ENTRIES - 1}.example` }, now);
  t.equal(memoUptimeAnswer(pages, '/uptime/feed.atom', { host: `h${MEMO_ENTRIES - 1}.example` }, now), last);
  t.ok(MEMO_BYTES >= 2 * 5 * 1024 * 1024, 'the largest uptime.json and feed fit together');
});

const BYSTANDER = { 'x-forwarded-for': '10.0.0.2' };

/**
 * A store file holding the most uptime.json lists: 50 incidents of 50 updates of 2,000 characters,
 * each opened, updated and resolved through the store's own write functions, as the admin routes
 * would (POST /uptime/incidents and /updates). Told through a running Switchyard instead, every
 * update rebuilds the report's incident lines from all that came before: 2,500 posts took 50 s.
 */
function seedIncidents(path: string): void {
  const store = UptimeStore.open(path, Date.now());
  const message = (i: number, u: number): string => `incident ${i} update ${u} `.padEnd(2_000, 'x');
  for (let i = 0; i < 50; i++) {
    const opened = store.told.open(`Incident ${i}`, 'investigating', message(i, 0), Date.now());
    if ('refused' in opened) throw new Error(`open: ${opened.why}`);
    for (let u = 1; u < 50; u++) {
      const r = store.told.update(opened.id, u === 49 ? 'resolved' : 'monitoring', message(i, u), Date.now());
      if ('refused' in r) throw new Error(`update: ${r.why}`);
    }
  }
  store.close(Date.now());
}

/** A process that GETs `url` with `concurrency` requests at a time for `seconds`, reading every byte. */
function poller(
  url: string,
  concurrency: number,
  seconds: number,
  headers: Record<string, string>,
): Promise<{ ok: number; bytes: number; limited: number; other: number }> {
  const script = `
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true });
const until = Date.now() + ${seconds * 1000};
const out = { ok: 0, bytes: 0, limited: 0, other: 0 };
function one() {
  if (Date.now() >= until) return Promise.resolve();
  return new Promise((resolve) => {
    http.get(${JSON.stringify(url)}, { agent, headers: ${JSON.stringify(headers)} }, (res) => {
      res.on('data', (c) => (out.bytes += c.length));
      res.on('end', () => {
        if (res.statusCode === 200) out.ok++;
        else if (res.statusCode === 429) out.limited++;
        else out.other++;
        resolve();
      });
    }).on('error', () => { out.other++; resolve(); });
  }).then(one);
}
Promise.all(Array.from({ length: ${concurrency} }, one))
  .then(() => new Promise((r) => setTimeout(r, Math.max(0, until - Date.now()))))
  .then(() => { process.stdout.write(JSON.stringify(out)); });
`;
  const p = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let text = '';
  p.stdout.on('data', (c: Buffer) => (text += c));
  return new Promise((resolve, reject) => {
    p.once('exit', (code) => (code === 0 ? resolve(JSON.parse(text)) : reject(new Error(`poller exited ${code}`))));
  }).finally(() => stopProcess(p)) as Promise<{ ok: number; bytes: number; limited: number; other: number }>;
}

t.test('the largest uptime.json polled flat out costs a bystander little', async (t) => {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-memo-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  seedIncidents(join(dir, 'uptime.db'));
  // A per-IP budget of 20 a second (120 in 5 s with the burst's 20), about half what this machine
  // serves of this page even when slow (40 a second in the slowest CI run seen). At the default 50 a
  // second that run saw no 429 at all. The poller and the bystander are told apart by
  // X-Forwarded-For; the bystander's address is exempt from the budget.
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'node-a', url: node.url }],
    uptime: { probeIntervalMs: 1_000, store: join(dir, 'uptime.db') },
    server: { trustedProxies: ['127.0.0.1/32'] },
    rateLimit: { perIp: { ratePerSec: 20, burst: 40 }, exempt: [`${BYSTANDER['x-forwarded-for']}/32`] },
  });
  await waitFor('a first probe', async () => (await get(`${sy.url}/uptime.json`)).status === 200);

  const full = await get(`${sy.url}/uptime.json`);
  t.ok(full.text.length > 5_000_000, `uptime.json is ${(full.text.length / 1e6).toFixed(1)} MB`);

  const delay = monitorEventLoopDelay({ resolution: 5 });
  const latencies: number[] = [];
  const failures: string[] = [];
  let stop = false;
  const bystander = (async () => {
    for (let id = 1; !stop; id++) {
      const started = performance.now();
      const r = await post(sy.url, { jsonrpc: '2.0', id, method: 'eth_chainId', params: [] }, BYSTANDER);
      latencies.push(performance.now() - started);
      if (r.json().result !== '0xba') failures.push(r.text.slice(0, 200));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  delay.enable();
  const polled = await poller(`${sy.url}/uptime.json`, 4, 5, { 'x-forwarded-for': '10.0.0.1' });
  delay.disable();
  stop = true;
  await bystander;

  const sorted = [...latencies].sort((a, b) => a - b);
  const p99 = sorted[Math.floor(sorted.length * 0.99)] ?? 0;
  const heldMs = delay.percentile(99) / 1e6;
  t.comment(
    `polled ${polled.ok} times (${polled.limited} refused 429) (${(polled.bytes / 1e9).toFixed(2)} GB) in 5 s; bystander ${latencies.length} calls, p50 ${sorted[sorted.length >> 1]?.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms; event loop delay p99 ${heldMs.toFixed(1)} ms, max ${(delay.max / 1e6).toFixed(1)} ms`,
  );
  t.equal(polled.other, 0, 'every poll answered 200 or 429');
  t.ok(polled.ok >= 10, 'the poller was served');
  // 20 a second for 5 s, the burst's 20 once, and room for a second boundary crossed: at most 140.
  // A poller that asked for more had the rest refused (every poll is a 200 or a 429, above).
  t.ok(polled.ok <= 140, `and held to its budget: ${polled.ok} served <= 140`);
  t.same(failures, [], 'no bystander call failed');
  // Measured on 2 cores at the default budget (50 a second): answers made per request starved the bystander (25 calls, p99 546 ms,
  // event loop delay p99 225 ms); made once a second, 200 calls, p99 50 ms (27 ms with no poller:
  // the probe itself reads the 5 MB of incidents). The bounds leave room for a loaded machine.
  t.ok(latencies.length >= 60, `the bystander kept calling: ${latencies.length} calls in 5 s`);
  t.ok(p99 < 300, `bystander p99 ${p99.toFixed(1)} ms < 300 ms`);
});
