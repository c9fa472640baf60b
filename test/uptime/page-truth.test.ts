/**
 * The uptime page tells the truth first (SPEC 12.3), in a real browser against Switchyard in
 * front of the devnet, with the fleet made to fail: an operator incident's impact sets the state
 * and stands on the first screen of a phone; a maintenance window for one node never hides an
 * outage of all; every time is UTC and says so; the badge follows the page's data rule; without
 * JavaScript the page already shows the state; the feed is linked and never dated in the future;
 * each check and node is a component; the Statuspage JSON; uptime.support as { url, email };
 * X-Request-Id exposed through CORS; the script fetches only the sections that changed (304).
 * Screenshots go to SWITCHYARD_SHOTS (or .tap/artifacts/).
 */
import t from 'tap';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { request } from 'undici';
import { startDevnet } from '../../src/devnet/index.js';
import type { UptimeReport } from '../../src/uptime/report.js';
import { CHROMIUM, FLAGS, axeSerious, openBrowser } from '../helpers/browser.js';
import { get, post } from '../helpers/rpc.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';

const SHOTS = process.env.SWITCHYARD_SHOTS ?? fileURLToPath(new URL('../../.tap/artifacts/', import.meta.url));
const SLOW = { timeoutMs: 30_000, intervalMs: 150 };

async function report(base: string): Promise<UptimeReport> {
  const r = await get(`${base}/uptime.json`);
  if (r.status !== 200) throw new Error(`uptime.json: HTTP ${r.status}`);
  return r.json() as UptimeReport;
}

const text = (page: Page, selector: string): Promise<string> => page.locator(selector).innerText();

if (!existsSync(CHROMIUM)) {
  t.fail(`${CHROMIUM} not found: the Debian package "chromium" is required`);
} else {
  t.test('the status page tells the truth first', async (t) => {
    const devnet = await startDevnet({ nodes: 3, chainId: 186, blockTimeMs: 400, basePort: 0, controlPort: 0 });
    t.teardown(() => devnet.stop());
    const nodes = devnet.nodes();
    const sy = await startSwitchyard(t, {
      upstreams: nodes.map((n) => ({ name: n.name, url: n.url })),
      uptime: {
        probeIntervalMs: 250,
        stallAfterSeconds: 3,
        title: 'Devnet status',
        support: { url: 'https://support.example.org/new', email: 'ops@example.org' },
      },
    });
    await waitFor('a first probe', () => report(sy.url).then((r) => r.state === 'operational'));

    const { page, problems } = await openBrowser(t, { width: 390, height: 844 });
    mkdirSync(SHOTS, { recursive: true });
    const shot = async (name: string): Promise<void> => {
      const path = join(SHOTS, `uptime-truth-${name}.png`);
      await page.screenshot({ path, fullPage: true });
      t.comment(`screenshot: ${path}`);
    };
    const bothSchemes = async (t: import('tap').Test, what: string, name?: string): Promise<void> => {
      t.same(await axeSerious(page), [], `${what}: phone, light`);
      if (name) await shot(`${name}-light`);
      await page.emulateMedia({ colorScheme: 'dark' });
      t.same(await axeSerious(page), [], `${what}: phone, dark`);
      if (name) await shot(`${name}-dark`);
      await page.emulateMedia({ colorScheme: 'light' });
      t.ok(
        await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
        `${what}: no sideways scroll at 390 px`,
      );
    };
    await page.goto(`${sy.url}/uptime`);

    await t.test('figures agree: the badge says no data while the page says not enough data', async (t) => {
      t.match(await text(page, '#u30d'), /^not enough data \(/, 'the page');
      const badge = await get(`${sy.url}/uptime/badge.svg`);
      t.match(badge.text, /<title>uptime 30d: no data<\/title>/, 'the badge');
      t.match(badge.text, /fill="#9f9f9f"/, 'in grey');
      t.notMatch(badge.text.replace(/y2="100%"/, ''), /\d%/, 'no percentage anywhere in it');
    });

    await t.test('without JavaScript the served HTML shows the state, checks, head and feed link', async (t) => {
      const ctx = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
      t.teardown(() => ctx.close());
      const bare = await ctx.newPage({ javaScriptEnabled: false, viewport: { width: 390, height: 844 } });
      await bare.goto(`${sy.url}/uptime`);
      t.equal(await text(bare, '#state'), 'Operational');
      t.equal(await text(bare, '#reachable'), 'Yes');
      t.match(await text(bare, '#head'), /^#[0-9,]+$/, 'the head');
      t.match(await text(bare, '#checked'), /^checked \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+ s ago\)$/);
      t.equal(await bare.locator('#days i').count(), 90, 'the 90 bars');
      t.equal(await bare.locator('#components .comp').count(), 5, 'the components');
      t.equal(
        await bare.locator('link[rel="alternate"][type="application/atom+xml"]').getAttribute('href'),
        'uptime/feed.atom',
        'the feed is linked in the head',
      );
      t.equal(await bare.locator('footer a', { hasText: 'Atom feed' }).count(), 1, 'and in the footer');
      await bare.screenshot({ path: join(SHOTS, 'uptime-truth-nojs.png'), fullPage: true });
    });

    await t.test('components: each check and node with its state and 90 days, in uptime.json', async (t) => {
      const r = await report(sy.url);
      t.same(
        r.components.map((c) => [c.kind, c.name, c.state]),
        [
          ['check', 'reachable', 'operational'],
          ['check', 'advancing', 'operational'],
          ['upstream', 'node-0', 'operational'],
          ['upstream', 'node-1', 'operational'],
          ['upstream', 'node-2', 'operational'],
        ],
      );
      for (const c of r.components) t.equal(c.days.length, 90, `${c.name}: 90 days`);
      t.equal(r.components[0]!.days.at(-1), 1, 'today the check held');
    });

    await t.test('Statuspage-compatible JSON', async (t) => {
      const status = (await get(`${sy.url}/uptime/api/v2/status.json`)).json() as any;
      t.match(status, {
        page: { name: 'Devnet status', url: /\/uptime$/, time_zone: 'Etc/UTC' },
        status: { indicator: 'none', description: 'All Systems Operational' },
      });
      const summary = (await get(`${sy.url}/uptime/api/v2/summary.json`)).json() as any;
      t.same(
        summary.components.map((c: { id: string; status: string }) => [c.id, c.status]),
        [
          ['check-reachable', 'operational'],
          ['check-advancing', 'operational'],
          ['upstream-node-0', 'operational'],
          ['upstream-node-1', 'operational'],
          ['upstream-node-2', 'operational'],
        ],
      );
      t.same(summary.incidents, []);
      t.same(summary.scheduled_maintenances, []);
    });

    await t.test('X-Request-Id is exposed through CORS; support as { url, email }', async (t) => {
      const r = await request(sy.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: 'https://dapp.example' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      });
      await r.body.dump();
      t.ok(r.headers['x-request-id'], 'the answer has one');
      t.match(String(r.headers['access-control-expose-headers']), /\bX-Request-Id\b/, 'scripts may read it');
      t.match(await text(page, '#support'), /support\.example\.org\/new or ops@example\.org/);
    });

    await t.test('the script fetches only what changed: a 304 when nothing did', async (t) => {
      const first = await request(`${sy.url}/uptime/parts?have=`);
      const etag = first.headers.etag as string;
      const html = await first.body.text();
      t.equal(first.statusCode, 200);
      t.match(html, /id="p-now"/, 'every part when it has none');
      const have = [...html.matchAll(/data-h="([^"]+)"/g)].map((m) => m[1]).join('.');
      const again = await request(`${sy.url}/uptime/parts?have=${have}`);
      const changed = await again.body.text();
      t.ok(changed.length < html.length / 2, `only what changed since: ${changed.length} of ${html.length} bytes`);
      const same = await request(`${sy.url}/uptime/parts?have=${have}`, { headers: { 'if-none-match': etag } });
      await same.body.dump();
      t.ok(same.statusCode === 304 || same.statusCode === 200, `conditional: ${same.statusCode}`);
      // As the script does, once after each of 8 probes: what comes back is what changed.
      const held = new Map([...html.matchAll(/<div id="(p-[a-z]+)" data-h="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
      let bytes = 0;
      let tag = etag;
      for (let n = 0; n < 8; n++) {
        const at = (await report(sy.url)).checkedAt;
        await waitFor('the next probe', async () => (await report(sy.url)).checkedAt !== at, SLOW);
        const r = await request(`${sy.url}/uptime/parts?have=${[...held.values()].join('.')}`, {
          headers: { 'if-none-match': tag },
        });
        const body = await r.body.text();
        bytes += body.length;
        if (r.statusCode === 200) tag = r.headers.etag as string;
        for (const m of body.matchAll(/<div id="(p-[a-z]+)" data-h="([^"]*)"/g)) held.set(m[1]!, m[2]!);
      }
      // A measurement, not a bound: how much changes depends on where the probes fall (see parts.test.ts).
      t.comment(`8 polls after 8 probes: ${bytes} bytes, against ${8 * html.length} whole`);
      const json = await request(`${sy.url}/uptime/api/v2/status.json`);
      const jtag = json.headers.etag as string;
      await json.body.dump();
      const cond = await request(`${sy.url}/uptime/api/v2/status.json`, { headers: { 'if-none-match': jtag } });
      const body = await cond.body.text();
      if (cond.statusCode === 304) t.equal(body, '', '304 without a body');
      else t.not(cond.headers.etag, jtag, 'a 200 only with another ETag');
    });

    const admin = `${sy.adminUrl}/uptime/incidents`;
    await t.test('an operator incident of major impact: state down, "Major outage", on the first screen', async (t) => {
      const title = 'eth_call errors on node-2, investigating';
      const opened = await post(admin, {
        title,
        status: 'investigating',
        message: 'About 5% of eth_call fail.',
        impact: 'major',
      });
      t.equal(opened.status, 201);
      const { id, impact } = opened.json() as { id: number; impact: string };
      t.equal(impact, 'major');
      t.equal((await report(sy.url)).state, 'down', 'uptime.json: down with a major incident');
      await waitFor('the page to say so', async () => (await text(page, '#state')) === 'Major outage', SLOW);
      const box = await page.locator('#open li a', { hasText: title }).boundingBox();
      t.ok(
        box !== null && box.y + box.height <= 844,
        `the title on the first screen (bottom at ${box?.y}+${box?.height})`,
      );
      t.match(await text(page, '#open'), /major impact[\s\S]*investigating, \d{4}-\d\d-\d\d \d\d:\d\d UTC: About 5%/);
      const status = (await get(`${sy.url}/uptime/api/v2/summary.json`)).json() as any;
      t.equal(status.status.indicator, 'major');
      t.match(status.incidents, [{ id: `incident-${id}`, name: title, impact: 'major', status: 'investigating' }]);
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: join(SHOTS, 'uptime-truth-major-first-screen.png') });
      await bothSchemes(t, 'a major incident', 'major');

      t.equal(
        (await post(`${admin}/${id}/updates`, { status: 'monitoring', message: 'Fixed.', impact: 'minor' })).status,
        201,
      );
      t.equal((await report(sy.url)).state, 'degraded', 'minor: degraded');
      await waitFor('Degraded on the page', async () => (await text(page, '#state')) === 'Degraded', SLOW);
      t.equal(
        (await post(`${admin}/${id}/updates`, { status: 'monitoring', message: 'Watching.', impact: 'none' })).status,
        201,
      );
      t.equal((await report(sy.url)).state, 'operational', 'impact none: the probes decide');
      t.equal((await post(`${admin}/${id}/updates`, { status: 'resolved', message: 'Done.' })).status, 201, 'resolved');
      const bad = await post(admin, { title: 'x', status: 'investigating', message: 'y', impact: 'huge' });
      t.equal(bad.status, 400, 'an unknown impact is refused');
    });

    await t.test('a window for node-2 never hides an outage of all: incident, metric, downtime', async (t) => {
      const soon = Date.now() + 3_600_000;
      const made = await post(`${sy.adminUrl}/uptime/maintenance`, {
        start: new Date(Date.now() - 1_000).toISOString(),
        end: new Date(soon).toISOString(),
        title: 'node-2 disk swap',
        scope: ['node-2'],
      });
      t.equal(made.status, 201);
      const later = await post(`${sy.adminUrl}/uptime/maintenance`, {
        start: new Date(soon + 86_400_000).toISOString(),
        end: new Date(soon + 90_000_000).toISOString(),
        title: 'upgrade tomorrow',
      });
      t.equal(later.status, 201);
      await devnet.kill(2);
      await waitFor(
        'node-2 shown in maintenance',
        async () => (await report(sy.url)).components.find((c) => c.name === 'node-2')?.state === 'maintenance',
        SLOW,
      );
      t.equal((await report(sy.url)).state, 'operational', 'the others answer');
      const before = (await report(sy.url)).uptime['24h'];
      await devnet.kill(0);
      await devnet.kill(1);
      const open = await waitFor(
        'an unreachable incident',
        async () => (await report(sy.url)).incidents.find((i) => i.kind === 'unreachable' && i.endedAt === null),
        SLOW,
      );
      t.equal(open.impact, 'critical');
      const r = await report(sy.url);
      t.equal(r.state, 'down', 'not maintenance');
      t.ok(r.uptime['24h']! < before!, `downtime counted: 24 h ${before} -> ${r.uptime['24h']}`);
      const metric = metricSamples((await get(`${sy.adminUrl}/metrics`)).text, 'switchyard_uptime_incident_open', {
        kind: 'unreachable',
      })[0];
      t.equal(metric, 1, 'switchyard_uptime_incident_open{kind="unreachable"} 1');
      await waitFor('the page to say so', async () => (await text(page, '#state')) === 'Major outage', SLOW);
      t.match(await text(page, '#open'), /critical impact[\s\S]*No node answered eth_chainId/);
      t.match(await text(page, '#maint'), /node-2 disk swap[\s\S]*covers node-2/);
      await bothSchemes(t, 'outage under a node window', 'outage');

      const feed = await get(`${sy.url}/uptime/feed.atom`);
      const updated = /<feed[\s\S]*?<updated>([^<]+)<\/updated>/.exec(feed.text)![1]!;
      t.ok(Date.parse(updated) <= Date.now(), `the feed's updated ${updated} is not in the future`);
      for (const m of feed.text.matchAll(/<updated>([^<]+)<\/updated>/g))
        t.ok(Date.parse(m[1]!) <= Date.now(), `no entry dated ahead: ${m[1]}`);

      for (const i of [0, 1, 2]) await devnet.restart(i);
      await waitFor('operational again', async () => (await report(sy.url)).state === 'operational', {
        timeoutMs: 60_000,
        intervalMs: 200,
      });
    });

    await t.test('one clock: every time on the page is UTC and says so', async (t) => {
      const times = await page.locator('time').allInnerTexts();
      t.ok(times.length > 3, `${times.length} times`);
      for (const x of times) t.match(x, / UTC$/, x);
      const all = await page.locator('main').innerText();
      t.notMatch(all, /\b\d{1,2}:\d\d( |\u202f)?[AP]M\b/, 'no 12-hour local clock');
      t.match(await text(page, '#days-h'), /UTC days/);
      await page.locator('#bar').focus();
      await page.keyboard.press('ArrowLeft');
      t.match(await text(page, '#bar-detail'), /^\d\d:\d\d - \d\d:\d\d UTC: /, 'a segment by keyboard, in UTC');
      await page.locator('#days i').last().hover();
      t.match(await text(page, '#days-detail'), /^\d{4}-\d\d-\d\d \(UTC\): /, 'a day, in UTC');
      const title = await page.locator('time').first().getAttribute('title');
      t.ok(title && title.length > 0, `the visitor's local time in a title: ${title}`);
      await page.setViewportSize({ width: 1280, height: 900 });
      await shot('desktop-light');
      await page.emulateMedia({ colorScheme: 'dark' });
      t.same(await axeSerious(page), [], 'desktop, dark');
      await shot('desktop-dark');
      await page.emulateMedia({ colorScheme: 'light' });
      await page.setViewportSize({ width: 390, height: 844 });
    });

    t.same(problems, [], 'no script error or refused resource in the page');
  });
}
