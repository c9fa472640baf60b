/**
 * The public uptime page in a real browser (Debian's chromium driven by playwright-core) against
 * Switchyard in front of the replicated devnet: it shows the chain id, the head rising without a
 * reload and the upstream names, and asks nothing of another origin. Then the chain is stalled
 * through the devnet's control API past stallAfterSeconds (a `stalled` incident opens on the page
 * and in the JSON, and closes when blocks resume), and every node is killed (an `unreachable`
 * incident). Screenshots are saved under .tap/artifacts/.
 */
import t, { type Test } from 'tap';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { request } from 'undici';
import { startDevnet } from '../../src/devnet/index.js';
import type { UptimeReport } from '../../src/uptime/report.js';
import { get, post } from '../helpers/rpc.js';
import { metricSamples } from '../helpers/metrics-text.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { axeSerious, CHROMIUM, openBrowser } from '../helpers/browser.js';

const ARTIFACTS = fileURLToPath(new URL('../../.tap/artifacts/', import.meta.url));

async function report(base: string): Promise<UptimeReport> {
  const r = await get(`${base}/uptime.json`);
  if (r.status !== 200) throw new Error(`uptime.json: HTTP ${r.status}`);
  return r.json() as UptimeReport;
}

async function openIncidents(adminUrl: string, kind: string): Promise<number | undefined> {
  return metricSamples((await get(`${adminUrl}/metrics`)).text, 'switchyard_uptime_incident_open', { kind })[0];
}

const text = (page: Page, selector: string): Promise<string> => page.locator(selector).innerText();

const POSTMORTEM = `# Summary

Between 21:40 and 22:05 UTC, \`eth_getLogs\` over more than 2,000 blocks took up to 12 s on one node.

## Timeline

| time (UTC) | what happened |
|---|---|
| 21:40 | the node's disk filled up and its log index stopped |
| 21:52 | the node was cordoned; calls went to the others |
| 22:05 | the disk was grown and the node uncordoned |

## What we change

- alert on disk use at 80%
- see [the operations guide](https://example.org/ops) and [our status page](/uptime)

<script>window.pwned = 1</script> <img src=x onerror="window.pwned = 1"> [a link that is not](javascript:window.pwned=1)
`;

/** Opens an incident by hand through the admin port, with updates and a post-mortem, and checks its pages in the browser. */
async function operatorIncident(
  t: Test,
  page: Page,
  sy: { url: string; adminUrl: string },
  shot: (name: string) => Promise<void>,
): Promise<void> {
  const admin = `${sy.adminUrl}/uptime/incidents`;
  const title = 'Slow eth_getLogs on one node <img src=x onerror="window.pwned = 1">';
  const opened = await post(admin, { title, status: 'investigating', message: 'Some eth_getLogs calls take 10 s.' });
  t.equal(opened.status, 201, 'opened through the admin port');
  const id = (opened.json() as { id: number }).id;
  for (const [status, message] of [
    ['identified', "One node's disk is full; it is cordoned."],
    ['resolved', 'The disk was grown and the node is back.'],
  ] as const)
    t.equal((await post(`${admin}/${id}/updates`, { status, message })).status, 201, status);
  const pm = await request(`${admin}/${id}/postmortem`, {
    method: 'PUT',
    headers: { 'content-type': 'text/markdown' },
    body: POSTMORTEM,
  });
  await pm.body.dump();
  t.equal(pm.statusCode, 200, 'post-mortem attached');

  const item = page.locator('#incidents li', { hasText: 'Slow eth_getLogs' });
  await waitFor('the incident on the page', async () => (await item.count()) === 1, { timeoutMs: 20_000 });
  t.match(await item.innerText(), /resolved, .*: The disk was grown and the node is back\./, 'with its latest update');
  t.match(
    await text(page, '#support'),
    /another network[\s\S]*ops@example\.org[\s\S]*X-Request-Id/,
    'Report a problem',
  );
  const clock = await text(page, '#utc-now');
  t.match(clock, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/, 'the current UTC time');
  await waitFor('the UTC time to move', async () => (await text(page, '#utc-now')) !== clock, { timeoutMs: 5_000 });
  t.same(await axeSerious(page), [], 'the page with an incident and the support section, phone, light');
  await page.emulateMedia({ colorScheme: 'dark' });
  t.same(await axeSerious(page), [], 'phone, dark');
  await page.emulateMedia({ colorScheme: 'light' });

  await item.locator('a').click();
  await page.waitForURL(`**/uptime/incidents/${id}`);
  t.equal(await text(page, '#title'), title, 'the title, as text');
  t.same(
    await page.locator('#timeline li .pill').allInnerTexts(),
    ['resolved', 'identified', 'investigating'],
    'the timeline, newest first',
  );
  t.match(await text(page, '#postmortem'), /What we change[\s\S]*alert on disk use/, 'the post-mortem');
  t.equal(await page.locator('script, iframe, img, style:not(head style)').count(), 0, 'no script, iframe or image');
  t.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined, 'nothing ran');
  t.same(
    await page.locator('#postmortem a').evaluateAll((as) => as.map((a) => a.getAttribute('href'))),
    ['https://example.org/ops', '/uptime'],
    'only the safe links are links',
  );
  t.same(await axeSerious(page), [], 'incident page: phone, light');
  t.ok(
    await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
    'no sideways scroll at 390 px',
  );
  await page.emulateMedia({ colorScheme: 'dark' });
  t.same(await axeSerious(page), [], 'incident page: phone, dark');
  await page.setViewportSize({ width: 1280, height: 900 });
  t.same(await axeSerious(page), [], 'incident page: desktop, dark');
  await page.emulateMedia({ colorScheme: 'light' });
  t.same(await axeSerious(page), [], 'incident page: desktop, light');
  await shot('incident');

  await page.locator('nav.crumbs a', { hasText: 'All incidents' }).click();
  await page.waitForURL('**/uptime/incidents');
  t.match(await text(page, '#archive'), /Slow eth_getLogs[\s\S]*post-mortem/, 'the archive lists it');
  t.same(await axeSerious(page), [], 'archive: desktop, light');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.emulateMedia({ colorScheme: 'dark' });
  t.same(await axeSerious(page), [], 'archive: phone, dark');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto(`${sy.url}/uptime`);
}

if (!existsSync(CHROMIUM)) {
  t.fail(`${CHROMIUM} not found: the Debian package "chromium" is required; .ci/run installs it`);
} else {
  t.test('the uptime page in a browser: live head, upstreams, a stall and an outage as incidents', async (t) => {
    const devnet = await startDevnet({ nodes: 3, chainId: 186, blockTimeMs: 400, basePort: 0, controlPort: 0 });
    t.teardown(() => devnet.stop());
    const nodes = devnet.nodes();
    const sy = await startSwitchyard(t, {
      upstreams: nodes.map((n) => ({ name: n.name, url: n.url })),
      uptime: { probeIntervalMs: 250, stallAfterSeconds: 3, title: 'Devnet status', support: 'ops@example.org' },
    });
    const origin = new URL(sy.url).origin;
    await waitFor('a first probe', () => report(sy.url).then((r) => r.state === 'operational'));

    const { page, problems } = await openBrowser(t, { width: 390, height: 844 });
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    mkdirSync(ARTIFACTS, { recursive: true });
    const shot = async (name: string): Promise<void> => {
      const path = join(ARTIFACTS, `uptime-${name}.png`);
      await page.screenshot({ path, fullPage: true });
      t.comment(`screenshot: ${path}`);
    };

    await page.goto(`${sy.url}/uptime`);
    await page.evaluate(() => {
      (window as unknown as { loadedOnce: boolean }).loadedOnce = true;
    });
    t.equal(await text(page, '#title'), 'Devnet status');
    t.match(await text(page, '#chain'), /^0xba \(186\)$/, 'the chain id');
    t.equal(await text(page, '#state'), 'Operational');
    const names = await page.locator('#upstreams td.name').allInnerTexts();
    t.same(names, ['node-0', 'node-1', 'node-2'], 'every upstream by name');
    const headOnPage = async (): Promise<number> => Number((await text(page, '#head')).replace(/[^0-9]/g, ''));
    const first = await headOnPage();
    t.ok(first > 0, `a head is shown (#${first})`);
    const later = await waitFor(
      'the head to rise on the page',
      async () => {
        const h = await headOnPage();
        return h > first + 1 ? h : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    t.ok(later > first + 1, `the head rose from ${first} to ${later}`);
    t.equal(
      await page.evaluate(() => (window as unknown as { loadedOnce?: boolean }).loadedOnce),
      true,
      'without a reload (the page is the same document)',
    );
    t.ok(
      requests.some((u) => new URL(u).pathname === '/uptime/parts'),
      'it refreshed itself from uptime/parts',
    );
    await shot('operational');

    await t.test('readable at 390 px, 1280 px and in dark mode, with no serious axe-core violation', async (t) => {
      t.same(await axeSerious(page), [], 'phone, light');
      t.ok(
        await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
        'no sideways scroll at 390 px',
      );
      t.match(
        await text(page, '#u30d'),
        /^not enough data \(\d+ (s|min \d+ s) observed\)$/,
        'a minute of data is not 100%',
      );
      t.match(
        await text(page, '#incidents'),
        /^No incidents in the \d+ (s|min \d+ s) observed\.$/,
        'no incidents claimed for 30 days when a minute was watched',
      );
      const observed = (await report(sy.url)).observedSeconds;
      t.ok(observed['24h'] > 0 && observed['24h'] < 3600, `observedSeconds 24h: ${observed['24h']}`);
      await page.locator('#bar').focus();
      await page.keyboard.press('ArrowLeft');
      t.match(await text(page, '#bar-detail'), /^\d{2}:\d{2} - \d{2}:\d{2} UTC: /, 'a segment by keyboard');
      await page.locator('#bar').click({ position: { x: 2, y: 10 } });
      const tapped = await text(page, '#bar-detail');
      t.match(tapped, /: no data$/, `the first segment (before any probe) by tap: ${tapped}`);
      await page.setViewportSize({ width: 1280, height: 900 });
      t.same(await axeSerious(page), [], 'desktop, light');
      await shot('desktop');
      await page.emulateMedia({ colorScheme: 'dark' });
      t.same(await axeSerious(page), [], 'desktop, dark');
      await shot('dark');
      await page.setViewportSize({ width: 390, height: 844 });
      t.same(await axeSerious(page), [], 'phone, dark');
      await page.emulateMedia({ colorScheme: 'light' });
    });

    await t.test('an incident told by hand: listed with its latest update, its own page, the archive', async (t) => {
      await operatorIncident(t, page, sy, shot);
    });

    await t.test(
      'history: 90 daily bars and the latency chart, by hover, tap and keyboard; text alternatives',
      async (t) => {
        const r = await report(sy.url);
        t.equal(r.daily.length, 90, '90 days in uptime.json');
        t.equal(r.daily.at(-1)!.date, new Date().toISOString().slice(0, 10), 'the last is today (UTC)');
        t.equal(await page.locator('#days i').count(), 90, '90 bars on the page');
        t.equal(await page.locator('#days i.ok').count(), 1, 'today is green; the days before have no data');
        await page.locator('#days i').last().hover();
        const today = r.daily.at(-1)!;
        const told =
          today.incidentCount === 0 ? 'no incidents' : `${today.incidentCount} incidents?: ${today.incidents[0]!.kind}`;
        t.match(
          await text(page, '#days-detail'),
          new RegExp(`\\(UTC\\): 100\\.00% of .* observed; ${told}`),
          'hover: the day, its figure and its incidents',
        );
        await page.locator('#days i').first().click();
        t.match(await text(page, '#days-detail'), /\(UTC\): no data; no incidents$/, 'tap: the first day');
        await page.locator('#days').focus();
        await page.keyboard.press('End');
        t.match(await text(page, '#days-detail'), /^\d{4}-\d{2}-\d{2} \(UTC\): 100\.00%/, 'keyboard: End is today');
        t.equal(r.latency.hours.length, 24, '24 hours of latency');
        const now = r.latency.hours.at(-1)!;
        t.ok(now.probes > 0 && now.p50Ms! > 0 && now.p95Ms! >= now.p50Ms!, `this hour: ${JSON.stringify(now)}`);
        await waitFor('the chart drawn', async () => (await page.locator('#lat rect').count()) >= 2);
        t.match(await page.locator('#lat desc').textContent(), /^This hour: p50 \d+\.\d ms, p95 \d+\.\d ms/);
        t.equal(await page.locator('#lat-rows tr').count(), 24, 'a table of the 24 hours as text alternative');
      },
    );

    await t.test(
      'maintenance made on the admin port: a stall inside it shows `maintenance`, opens no incident, costs no uptime',
      async (t) => {
        const before = await report(sy.url);
        t.equal(before.uptime['24h'], 1, 'no failure so far');
        const post = await fetch(`${sy.adminUrl}/uptime/maintenance`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            start: new Date(Date.now() - 1_000).toISOString(),
            end: new Date(Date.now() + 3_600_000).toISOString(),
            title: 'Node upgrade <b>now</b>',
          }),
        });
        t.equal(post.status, 201);
        const { window } = (await post.json()) as { window: { id: string } };
        await waitFor('the page to show the window', async () => (await text(page, '#maint')).includes('ongoing'), {
          timeoutMs: 20_000,
          intervalMs: 200,
        });
        t.match(await text(page, '#maint'), /Node upgrade <b>now<\/b>/, 'its title, as text');
        for (const n of nodes) await fetch(`${devnet.controlUrl}/nodes/${n.index}/stall`, { method: 'POST' });
        await waitFor('the page to say maintenance', async () => (await text(page, '#state')) === 'Under maintenance', {
          timeoutMs: 20_000,
          intervalMs: 200,
        });
        const r = await report(sy.url);
        t.equal(r.state, 'maintenance');
        t.equal(r.checks.advancing.ok, false, 'the check itself still says what it sees');
        t.same(
          r.maintenance.map((m) => m.id),
          [window.id],
        );
        t.equal(r.history.maintenance!.at(-1), true, 'the 24 h bar marks it');
        t.equal(r.daily.at(-1)!.maintenance, true, 'so does today');
        t.same(await axeSerious(page), [], 'maintenance: no serious axe-core violation');
        await shot('maintenance');
        for (const n of nodes) await fetch(`${devnet.controlUrl}/nodes/${n.index}/resume`, { method: 'POST' });
        await waitFor('operational again', async () => (await report(sy.url)).state === 'operational', {
          timeoutMs: 20_000,
          intervalMs: 100,
        });
        const end = await fetch(`${sy.adminUrl}/uptime/maintenance/${window.id}`, {
          method: 'DELETE',
          headers: { 'content-type': 'application/json' },
        });
        t.match(await end.json(), { change: 'ended', window: { id: window.id, state: 'over' } });
        const after = await report(sy.url);
        t.same(
          after.incidents.filter((i) => !before.incidents.some((b) => b.id === i.id)),
          [],
          'no incident opened',
        );
        t.equal(after.uptime['24h'], 1, 'the stalled probes inside the window are no data, not downtime');
        t.same(after.maintenance, [], 'an ended window is no longer listed');
        await waitFor('the card to go', () => page.locator('#maint').isHidden(), {
          timeoutMs: 20_000,
          intervalMs: 200,
        });
      },
    );

    await t.test(
      'a stalled chain opens a `stalled` incident on the page and in the JSON; blocks resuming close it',
      async (t) => {
        for (const n of nodes)
          t.equal(
            (await fetch(`${devnet.controlUrl}/nodes/${n.index}/stall`, { method: 'POST' })).status,
            200,
            `stall ${n.name}`,
          );
        const open = await waitFor(
          'a stalled incident in the JSON',
          async () => (await report(sy.url)).incidents.find((i) => i.kind === 'stalled' && i.endedAt === null),
          {
            timeoutMs: 20_000,
            intervalMs: 100,
          },
        );
        t.match(open, { kind: 'stalled', endedAt: null, summary: /did not advance for more than 3 s/ });
        const r = await report(sy.url);
        t.equal(r.state, 'degraded', 'degraded: reachable but not advancing');
        t.same(r.checks.reachable, { ok: true });
        t.equal(r.checks.advancing.ok, false);
        t.ok(r.checks.advancing.headAgeSeconds! >= 3, `head age ${r.checks.advancing.headAgeSeconds} s`);
        await waitFor('the page to show the stall', async () => (await text(page, '#state')) === 'Degraded', {
          timeoutMs: 20_000,
          intervalMs: 200,
        });
        const item = page.locator('#incidents li').first();
        t.match(await item.innerText(), /stalled[\s\S]*ongoing/, 'newest incident first, ongoing');
        t.equal(await text(page, '#advancing'), 'No');
        await waitFor(
          'the node rows to agree',
          async () => (await page.locator('#upstreams td.st').allInnerTexts()).every((s) => s !== 'healthy'),
          { timeoutMs: 20_000, intervalMs: 200 },
        );
        t.same(
          (await report(sy.url)).upstreams!.map((u) => u.state),
          ['stalled', 'stalled', 'stalled'],
          'no node row says healthy while the chain stalls',
        );
        t.same(await axeSerious(page), [], 'degraded: no serious axe-core violation');
        t.equal(await openIncidents(sy.adminUrl, 'stalled'), 1, 'the open incident is a metric');
        await shot('stalled');

        for (const n of nodes) await fetch(`${devnet.controlUrl}/nodes/${n.index}/resume`, { method: 'POST' });
        const closed = await waitFor(
          'the stall to close',
          async () => (await report(sy.url)).incidents.find((i) => i.id === open.id && i.endedAt !== null),
          {
            timeoutMs: 20_000,
            intervalMs: 100,
          },
        );
        t.ok(Date.parse(closed.endedAt!) > Date.parse(closed.startedAt), 'it has an end after its start');
        await waitFor(
          'the page to show it closed',
          async () =>
            (await text(page, '#state')) === 'Operational' &&
            !(await page.locator('#incidents li').first().innerText()).includes('ongoing'),
          { timeoutMs: 20_000, intervalMs: 200 },
        );
        t.equal(await openIncidents(sy.adminUrl, 'stalled'), 0);
        const r2 = await report(sy.url);
        t.ok(r2.uptime['24h']! < 1 && r2.uptime['24h']! > 0, `24 h uptime counts the stall: ${r2.uptime['24h']}`);
      },
    );

    await t.test(
      'every node unreachable opens an `unreachable` incident; it closes when one answers again',
      async (t) => {
        for (const n of nodes) await devnet.kill(n.index);
        const open = await waitFor(
          'an unreachable incident',
          async () => (await report(sy.url)).incidents.find((i) => i.kind === 'unreachable' && i.endedAt === null),
          {
            timeoutMs: 20_000,
            intervalMs: 100,
          },
        );
        t.match(open, { kind: 'unreachable', summary: 'No node answered eth_chainId with 0xba' });
        t.equal((await report(sy.url)).state, 'down');
        await waitFor('the page to say so', async () => (await text(page, '#state')) === 'Major outage', {
          timeoutMs: 20_000,
          intervalMs: 200,
        });
        t.match(await page.locator('#incidents li').first().innerText(), /unreachable[\s\S]*ongoing/);
        await shot('down');
        t.same(await axeSerious(page), [], 'down: no serious axe-core violation');
        await devnet.restart(0);
        await waitFor(
          'the outage to close',
          async () => (await report(sy.url)).incidents.find((i) => i.id === open.id && i.endedAt !== null),
          {
            timeoutMs: 30_000,
            intervalMs: 100,
          },
        );
        await waitFor('the page to recover', async () => (await text(page, '#state')) !== 'Major outage', {
          timeoutMs: 20_000,
          intervalMs: 200,
        });
        const listed = (await report(sy.url)).incidents;
        t.ok(listed.find((i) => i.id === open.id)?.endedAt, 'the outage is listed, closed');
        t.ok(
          listed.some((i) => i.kind === 'stalled' && i.endedAt !== null),
          'the stall before it is still listed, closed',
        );
        const starts = listed.map((i) => Date.parse(i.startedAt));
        t.same(
          starts,
          [...starts].sort((a, b) => b - a),
          'ordered by start, newest first',
        );
      },
    );

    const foreign = requests.filter((u) => new URL(u).origin !== origin);
    t.same(foreign, [], `no request to another origin (${requests.length} requests in all)`);
    t.same(problems, [], 'no script error or refused resource in the page');
    const html = (await get(`${sy.url}/uptime`)).text + (await get(`${sy.url}/uptime.json`)).text;
    for (const n of nodes) t.notOk(html.includes(new URL(n.url).host), `${n.name}'s address appears nowhere`);
  });
}
