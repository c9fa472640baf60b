/**
 * Debian's chromium driven by playwright-core, for the pages' tests: the launch flags of a
 * machine with no way out, and axe-core run inside a page.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import type { Test } from 'tap';

export const CHROMIUM = '/usr/bin/chromium';

/** Flags for a browser on a machine with no way out: nothing phones home, nothing waits on the network. */
export const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const AXE = readFileSync(fileURLToPath(new URL('../../node_modules/axe-core/axe.min.js', import.meta.url)), 'utf8');

/**
 * axe-core run in the page: the serious and critical violations, as "rule: n nodes". It is
 * evaluated through the devtools protocol, not added as a script tag, because the page's CSP
 * rightly refuses any inline script but its own.
 */
export async function axeSerious(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE);
  return page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> };
      }
    ).axe;
    const r = await axe.run();
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.length} nodes`);
  });
}

/**
 * A headless chromium with a fresh profile of its own (a persistent context is how playwright
 * takes a --user-data-dir of our choosing), closed and removed at the test's end, and its first
 * page; the page's uncaught errors and console errors collect in `problems`.
 */
export async function openBrowser(
  t: Test,
  viewport: { width: number; height: number },
): Promise<{ browser: BrowserContext; page: Page; problems: string[] }> {
  const profile = mkdtempSync(join(tmpdir(), 'switchyard-chromium-'));
  t.teardown(() => rmSync(profile, { recursive: true, force: true }));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport,
  });
  t.teardown(() => browser.close());
  const page = browser.pages()[0] ?? (await browser.newPage());
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  return { browser, page, problems };
}
