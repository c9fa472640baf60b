/**
 * Debian's chromium driven by playwright-core, for the pages' tests: the launch flags of a
 * machine with no way out, and axe-core run inside a page.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';

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
