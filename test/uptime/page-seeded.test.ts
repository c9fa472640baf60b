/**
 * The uptime page over a store with 90 days of history (fixtures/history.ts: bad days, a
 * maintenance window, a resolved incident told by hand, per-node component days), in a real
 * browser against Switchyard in front of the devnet: the 24 h / 7 d / 30 d figures, the daily
 * bars, each component's bars and the incident list show what the store holds, axe finds nothing
 * serious at 1280 and 390 px in both schemes. Its screenshots are the ones in
 * docs/uptime-page.md: `SWITCHYARD_SHOTS=docs npx tap test/uptime/page-seeded.test.ts` renews
 * them (otherwise they go to .tap/artifacts/).
 */
import t from 'tap';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { startDevnet } from '../../src/devnet/index.js';
import type { UptimeReport } from '../../src/uptime/report.js';
import { CHROMIUM, axeSerious, openBrowser } from '../helpers/browser.js';
import { get } from '../helpers/rpc.js';
import { startSwitchyard } from '../helpers/switchyard.js';
import { waitFor } from '../helpers/wait.js';
import { seedHistory, TOLD_TITLE } from './fixtures/history.js';

const SHOTS = resolve(process.env.SWITCHYARD_SHOTS ?? fileURLToPath(new URL('../../.tap/artifacts/', import.meta.url)));
const INTERVAL_MS = 5_000;

async function report(base: string): Promise<UptimeReport> {
  const r = await get(`${base}/uptime.json`);
  if (r.status !== 200) throw new Error(`uptime.json: HTTP ${r.status}`);
  return r.json() as UptimeReport;
}

const text = (page: Page, selector: string): Promise<string> => page.locator(selector).innerText();

if (!existsSync(CHROMIUM)) {
  t.fail(`${CHROMIUM} not found: the Debian package "chromium" is required`);
} else {
  t.test('the page over 90 days of history', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-history-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const devnet = await startDevnet({ nodes: 3, chainId: 186, blockTimeMs: 1_000, basePort: 0, controlPort: 0 });
    t.teardown(() => devnet.stop());
    const nodes = devnet.nodes();
    const started = Date.now();
    const seeded = seedHistory(
      join(dir, 'uptime.db'),
      INTERVAL_MS,
      nodes.map((n) => n.name),
    );
    t.comment(`seeded ${seeded.probes} probes in ${Date.now() - started} ms`);
    const sy = await startSwitchyard(t, {
      upstreams: nodes.map((n) => ({ name: n.name, url: n.url })),
      uptime: {
        probeIntervalMs: INTERVAL_MS,
        stallAfterSeconds: 60,
        title: 'Devnet status',
        store: join(dir, 'uptime.db'),
        support: { url: 'https://support.example.org/new', email: 'ops@example.org' },
      },
    });
    const r = await waitFor(
      'a first probe',
      () => report(sy.url).then((r) => (r.state === 'operational' ? r : undefined)),
      {
        timeoutMs: 30_000,
        intervalMs: 200,
      },
    );

    await t.test('uptime.json: figures and components from the stored days', async (t) => {
      for (const w of ['24h', '7d', '30d'] as const) t.ok(r.uptime[w] !== null, `${w}: ${r.uptime[w]}`);
      t.ok(r.observedSeconds['30d'] >= 29 * 86_400, `30 d observed: ${r.observedSeconds['30d']} s`);
      // 10 minutes of stall 2 days ago, of a week of probes.
      t.ok(r.uptime['7d']! < 1 && r.uptime['7d']! > 0.998, `7 d: ${r.uptime['7d']}`);
      const day = (start: number): number => (r.daily ?? []).findIndex((d) => Date.parse(d.date) === start);
      const daily = r.daily ?? [];
      t.equal(daily.length, 90);
      t.ok(daily[day(seeded.days.outage)]!.uptime! < 0.99, 'the outage day');
      t.ok(daily[day(seeded.days.stall)]!.uptime! < 0.99, 'the stall day');
      t.ok(daily[day(seeded.days.maintenance)]!.maintenance, 'the maintenance day');
      t.equal(daily[day(seeded.days.maintenance)]!.uptime, 1, 'its failures are no data');
      const node = (name: string) => r.components.find((c) => c.name === name)!;
      const n = day(seeded.days.node);
      t.equal(node('node-1').days[n], 0.75, 'node-1 failed 6 hours of its day');
      t.equal(node('node-0').days[n], 1, 'node-0 held');
      t.equal(node('reachable').days[n], 1, 'and so did the checks');
      t.equal(node('reachable').days[day(seeded.days.outage)]! < 0.99, true, 'reachable: the outage day');
      t.equal(node('advancing').days[day(seeded.days.stall)]! < 0.99, true, 'advancing: the stall day');
      t.match(
        r.incidents.find((i) => i.id === seeded.told.id),
        { summary: TOLD_TITLE, source: 'operator', endedAt: String, postmortem: true },
        'the told incident, resolved',
      );
    });

    const { page, problems } = await openBrowser(t, { width: 1280, height: 900 });
    mkdirSync(SHOTS, { recursive: true });
    await page.goto(`${sy.url}/uptime`);

    await t.test('the page shows the history', async (t) => {
      for (const id of ['u24h', 'u7d', 'u30d'])
        t.match(await text(page, `#${id}`), /^\d{1,3}\.\d\d% of .* observed$/, `#${id}`);
      const classes = await page.locator('#days i').evaluateAll((is) => is.map((i) => i.className));
      t.equal(classes.length, 90);
      t.equal(classes.filter((c) => c === 'bad').length, 2, 'two bad days');
      t.equal(classes.filter((c) => c === 'warn').length, 1, 'one day under 99.9%');
      t.equal(classes.filter((c) => c.includes('mday')).length, 1, 'one day with maintenance');
      t.ok(classes.filter((c) => c.startsWith('ok')).length >= 85, 'the rest held');
      const bad = (name: string): Promise<number> =>
        page
          .locator('#components .comp', { hasText: `Node ${name}` })
          .locator('i.bad')
          .count();
      t.equal(await bad('node-0'), 1, 'node-0: the outage day');
      t.equal(await bad('node-1'), 2, 'node-1: the outage day and its own bad day');
      t.match(await text(page, '#incidents'), new RegExp(`${TOLD_TITLE}[\\s\\S]*resolved`), 'the told incident');
      t.match(await text(page, '#state'), 'Operational');
    });

    await t.test('axe and screenshots at 1280 and 390 px, light and dark', async (t) => {
      const shots: [string, number, 'light' | 'dark'][] = [
        ['uptime-page.png', 1280, 'light'],
        ['uptime-page-dark.png', 1280, 'dark'],
        ['uptime-page-phone.png', 390, 'light'],
        ['uptime-page-phone-dark.png', 390, 'dark'],
      ];
      for (const [name, width, scheme] of shots) {
        await page.setViewportSize({ width, height: width > 400 ? 900 : 844 });
        await page.emulateMedia({ colorScheme: scheme });
        t.same(await axeSerious(page), [], `${width} px, ${scheme}`);
        t.ok(
          await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
          `${width} px: no sideways scroll`,
        );
        await page.screenshot({ path: join(SHOTS, name), fullPage: true });
        t.comment(`screenshot: ${join(SHOTS, name)}`);
      }
    });

    t.same(problems, [], 'no script error or refused resource in the page');
  });
}
