/**
 * The uptime paths over HTTP (content types, cache, CORS, CSP, GET / by Accept, HEAD, turned off),
 * a restart of Switchyard on the same store (incidents and history still there), and a store file
 * that cannot be used: logged naming `uptime.store`, history in memory, the file untouched, and
 * the process keeps serving (never an exit, so never a crash loop).
 */
import t, { type Test } from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { createLogger } from '../../src/log/logger.js';
import type { UptimeReport } from '../../src/uptime/report.js';
import { startAnvil, type AnvilNode } from '../helpers/anvil.js';
import { listeningPorts, runCli } from '../helpers/cli.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { get, post } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-uptime-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function report(base: string): Promise<UptimeReport> {
  const r = await get(`${base}/uptime.json`);
  if (r.status !== 200) throw new Error(`uptime.json: HTTP ${r.status}`);
  return r.json() as UptimeReport;
}

async function anvil(t: Test): Promise<AnvilNode> {
  const node = await startAnvil();
  t.teardown(() => node.stop());
  return node;
}

/** Log lines as objects, for tests that read what Switchyard says. */
function capture(): { lines: Record<string, unknown>[]; logger: ReturnType<typeof createLogger> } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger('info', { write: (s: string) => lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { lines, logger };
}

t.test('the uptime paths over HTTP', async (t) => {
  const node = await anvil(t);
  const sy = await startSwitchyard(t, {
    upstreams: [{ name: 'solo', url: node.url }],
    uptime: { probeIntervalMs: 200, stallAfterSeconds: 30 },
  });
  await waitFor('a first probe', () => report(sy.url));

  const page = await request(`${sy.url}/uptime`);
  const html = await page.body.text();
  t.equal(page.statusCode, 200);
  t.equal(page.headers['content-type'], 'text/html; charset=utf-8');
  t.equal(page.headers['cache-control'], 'public, max-age=1', 'a public page cached no longer than a probe interval');
  t.match(
    page.headers['content-security-policy'],
    /default-src 'none'; style-src 'sha256-[^']+'; script-src 'sha256-[^']+'; connect-src 'self'/,
    'only its own inline style and script; fetches only from its own origin',
  );
  t.notMatch(html, /\b(src|href)\s*=\s*"(https?:)?\/\//i, 'no external script, style, font or image');
  t.notMatch(html, /@import|url\(\s*["']?https?:/i, 'no external CSS either');
  t.notOk(html.includes(node.url) || html.includes(`:${node.port}`), 'the upstream URL is nowhere in the page');
  t.match(html, /<b id="chain">0xba \(186\)<\/b>/, 'the page is rendered on the server, so it shows at once');
  t.match(html, /<b id="state">Operational<\/b>/, 'its state too');

  const browserRoot = await request(`${sy.url}/`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
  t.equal(browserRoot.headers['content-type'], 'text/html; charset=utf-8', "a browser's GET / gets the page");
  // The page is large enough to be gzipped for clients that accept it: then it varies by that too.
  t.match(browserRoot.headers.vary, /^Accept(, Accept-Encoding)?$/);
  t.match(await browserRoot.body.text(), /<title>Switchyard status<\/title>/);
  const clientRoot = await get(`${sy.url}/`);
  t.same(
    Object.keys(clientRoot.json()),
    ['name', 'version', 'chainId', 'ready'],
    'other clients keep the JSON object of SPEC 3.2',
  );
  t.equal(
    clientRoot.headers.vary,
    'Accept',
    'and are told it depends on Accept (a cache must not hand it to a browser)',
  );
  const headRoot = await request(`${sy.url}/`, { method: 'HEAD' });
  t.equal(headRoot.statusCode, 200, 'HEAD / (how monitors probe) is answered like GET');
  t.equal(headRoot.headers['content-type'], 'application/json');
  t.equal(await headRoot.body.text(), '', 'without a body');

  const json = await request(`${sy.url}/uptime.json`, { headers: { origin: 'https://someone.example' } });
  t.equal(json.headers['content-type'], 'application/json');
  t.equal(json.headers['access-control-allow-origin'], '*', 'CORS: any page may read it');
  const r = (await json.body.json()) as UptimeReport;
  t.match(r, {
    chainId: '0xba',
    state: 'operational',
    checkedAt: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
    checks: { reachable: { ok: true }, advancing: { ok: true, head: /^0x[0-9a-f]+$/, headAgeSeconds: Number } },
    uptime: { '24h': 1, '7d': 1, '30d': 1 },
    incidents: [],
    upstreams: [{ name: 'solo', state: 'healthy', head: /^0x/, lag: 0, latencyMs: Number }],
  });
  t.equal(r.history.segments.length, 90);
  t.notOk(JSON.stringify(r).includes(String(node.port)), 'no upstream address in the JSON');

  const head = await request(`${sy.url}/uptime.json`, { method: 'HEAD' });
  t.equal(head.statusCode, 200, 'HEAD works');
  t.equal(await head.body.text(), '');
  const badge = await request(`${sy.url}/uptime/badge.svg`);
  t.equal(badge.headers['content-type'], 'image/svg+xml; charset=utf-8');
  // Seconds of data: the page says not enough data, so does the badge (one rule, figures.ts).
  t.match(await badge.body.text(), /<svg[\s\S]*uptime 30d[\s\S]*no data/);
  t.equal(
    (await post(sy.url, { jsonrpc: '2.0', id: 1, method: 'eth_chainId' })).json().result,
    '0xba',
    'JSON-RPC on / is untouched',
  );

  const off = await startSwitchyard(t, { upstreams: [{ name: 'solo', url: node.url }], uptime: { enabled: false } });
  t.equal((await get(`${off.url}/uptime`)).status, 404, 'uptime.enabled false: no page');
  t.equal((await get(`${off.url}/uptime.json`)).status, 404);
  const offRoot = await request(`${off.url}/`, { headers: { accept: 'text/html' } });
  t.equal(offRoot.headers['content-type'], 'application/json', 'and GET / stays JSON for browsers too');
  await offRoot.body.dump();
});

t.test('a restart on the same store keeps incidents and uptime history', async (t) => {
  const node = await anvil(t);
  const file = join(tempDir(t), 'uptime.db');
  const settings = {
    upstreams: [{ name: 'solo', url: node.url }],
    uptime: { probeIntervalMs: 100, stallAfterSeconds: 1, store: file },
  };
  const first = await startSwitchyard(t, settings);
  // anvil mines only when asked: the chain stalls by itself, then one block ends the stall.
  const open = await waitFor(
    'a stalled incident',
    async () => (await report(first.url)).incidents.find((i) => i.kind === 'stalled'),
    { timeoutMs: 20_000 },
  );
  await post(node.url, { jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: ['0x1'] });
  const closed = await waitFor(
    'the stall to close',
    async () => (await report(first.url)).incidents.find((i) => i.id === open.id && i.endedAt !== null),
    { timeoutMs: 20_000 },
  );
  const before = await report(first.url);
  t.ok(before.uptime['24h']! < 1, `the stall cost uptime: ${before.uptime['24h']}`);
  await first.close();

  // anvil stalls again by itself; the second process must not see that as a new stall, so that
  // its uptime can only rise from what the first one recorded (a fresh store would say 1).
  const second = await startSwitchyard(t, { ...settings, uptime: { ...settings.uptime, stallAfterSeconds: 3600 } });
  const after = await waitFor('a probe after the restart', () => report(second.url));
  t.same(
    after.incidents.find((i) => i.id === open.id),
    closed,
    'the incident is still there, same id, start and end',
  );
  t.ok(
    after.uptime['24h']! < 1 && after.uptime['24h']! >= before.uptime['24h']! - 0.01,
    `uptime history kept: ${before.uptime['24h']} then ${after.uptime['24h']}`,
  );
  t.ok(
    after.history.segments.some((s) => s !== null && s < 1),
    'the history bar still shows the stall',
  );
  const status = (await get(`${second.adminUrl}/status`)).json();
  t.match(status.uptime, { store: file, persistent: true });
});

t.test('a store file that cannot be used: logged naming uptime.store, kept in memory, file untouched', async (t) => {
  const node = await anvil(t);
  const dir = tempDir(t);
  const file = join(dir, 'uptime.db');
  const garbage = 'this is not an SQLite database\n'.repeat(200);
  writeFileSync(file, garbage);
  const { lines, logger } = capture();
  const sy = await startSwitchyard(
    t,
    {
      upstreams: [{ name: 'solo', url: node.url }],
      uptime: { probeIntervalMs: 100, store: file },
      log: { level: 'info' },
    },
    { logger },
  );
  const line = lines.find((l) => String(l.msg).includes('uptime.store'));
  t.match(
    line,
    { level: 'error', store: file, msg: /uptime\.store cannot be used; uptime history is kept in memory/ },
    'one clear line naming the option and the file',
  );
  t.match(
    line?.err,
    { message: /not a usable SQLite database|not a database/ },
    'the error through the err serializer',
  );
  const r = await waitFor('the page works from memory', () => report(sy.url));
  t.equal(r.state, 'operational');
  t.same(
    metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_uptime_store_persistent'),
    [0],
    'the metric says it is not persistent',
  );
  t.equal(readFileSync(file, 'utf8'), garbage, 'the file is left as it was');

  // The same through the real process: it serves, it does not exit.
  const config = join(dir, 'switchyard.yaml');
  writeFileSync(
    config,
    `server: { host: 127.0.0.1, port: 0, wsPort: null, shutdownDelayMs: 0 }\nadmin: { host: 127.0.0.1, port: 0 }\nupstreams: [{ name: solo, url: "${node.url}" }]\nuptime: { store: ${JSON.stringify(dir)} }\n`,
  );
  const cli = runCli(t, ['--config', config]);
  const ports = await waitFor('the process listening', () => listeningPorts(cli.stdout()), { timeoutMs: 20_000 });
  t.match(cli.stdout(), /uptime\.store cannot be used/, 'a folder as the store: the same logged fallback');
  await waitFor('ready', async () => (await get(`http://127.0.0.1:${ports.admin}/ready?upstreams=1`)).status === 200);
  t.equal(cli.proc.exitCode, null, 'still running');
  cli.proc.kill('SIGTERM');
  t.equal(await cli.exited, 0, 'and exits 0 on SIGTERM');
});
