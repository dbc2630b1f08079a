/**
 * Debian's Chromium driven by playwright-core, for the web specs: headless, no sandbox (CI runs as root), no
 * GPU, no QUIC, nothing fetched in the background; `launch()` gives every browser a fresh temporary profile
 * (`--user-data-dir`), removed on close. A missing Chromium fails with one line saying how to get it (never
 * a download of a browser of playwright's own: it cannot work here).
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repoRoot } from '../../support/openai-server.js';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
] as const;

/** Where a failing web spec leaves its screenshot (ignored by git). */
export const SCREENSHOTS = path.join(repoRoot, 'test/services/output');

/** Launches Chromium (`extraArgs` after the standard ones); throws one line when it is not installed. */
export async function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is missing: ${CHROMIUM} does not exist (apt-get install -y chromium; .ci/run does it)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs] });
}

/**
 * Runs `body`, then fails when `page` threw anything uncaught meanwhile (an exception or a rejection no code of
 * the page caught: Playwright's 'pageerror', listed by name and message); when either throws, saves a full-page
 * screenshot of `page` as `<name>.png` in {@link SCREENSHOTS}, adds its path to the error, and rethrows.
 */
export async function withScreenshot<T>(page: Page, name: string, body: () => Promise<T>): Promise<T> {
  const uncaught: string[] = [];
  const onError = (error: Error) => uncaught.push(`${error.name}: ${error.message}`);
  page.on('pageerror', onError);
  try {
    const result = await body();
    if (uncaught.length > 0) throw new Error(`the page threw ${uncaught.length} uncaught: ${uncaught.join('; ')}`);
    return result;
  } catch (error) {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const file = path.join(SCREENSHOTS, `${name.replace(/[^\w.-]+/g, '-')}.png`);
    const saved = await page.screenshot({ path: file, fullPage: true }).then(
      () => `screenshot: ${file}`,
      (e: unknown) => `no screenshot (${String(e)})`,
    );
    if (error instanceof Error) error.message += `\n${saved}`;
    throw error;
  } finally {
    page.off('pageerror', onError);
  }
}
