/**
 * Steering sent as a run ends, in Chromium against `loopctl serve` (the built bin, offline model): the page's
 * steering request is held until the run's outcome is on the page, so the server answers 409 `run_not_live`.
 * The page says in words that the message was not sent and stays in the box (it showed the server's
 * `Steering failed: run "<id>" has ended`), and Enter then sends it as a new message.
 */
import type { ChildProcess } from 'node:child_process';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { STEER_TOO_LATE_WORDS } from '../../src/wording.js';
import { cliEnv, ensureBuilt, removeTempFolders, tempFolder } from '../cli-helpers.js';
import { launchChromium, withScreenshot } from './support/browser.js';
import { startServe } from './support/serve.js';

let serve: ChildProcess;
let address: string;
let browser: Browser;

beforeAll(async () => {
  await ensureBuilt({ web: true });
  const folder = tempFolder({ 'README.md': '# readme\none\ntwo\n' });
  const env = cliEnv({ LOOPCTL_OFFLINE_DELAY_MS: '200' });
  const served = await startServe(['--port', '0'], { cwd: folder, env });
  serve = served.child;
  address = served.address;
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (serve && serve.exitCode === null) serve.kill('SIGKILL');
  removeTempFolders();
});

const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 10_000, interval: 25 });

async function send(page: Page, text: string): Promise<void> {
  await page.locator('#composer-text').fill(text);
  await page.locator('#composer-text').press('Enter');
}

it('steering that reaches a run after it ended is said not sent, kept in the box, and Enter sends it as a new message', async () => {
  const page = await (await browser.newContext()).newPage();
  await page.goto(address);
  await page.getByLabel('Message').waitFor();
  await withScreenshot(page, 'steer-after-end', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/steering', async (route) => {
      await held;
      await route.continue();
    });
    await send(page, 'How many lines are in README.md?');
    await poll(() => page.locator('.run-state').innerText()).toBe('Writing…'); // the run is known: Enter steers
    await send(page, 'and the other files too');
    await page.locator('[data-entry="outcome"]').waitFor(); // the run ended while its steering was on its way
    release();
    await poll(() => page.locator('.notice').innerText()).toBe(STEER_TOO_LATE_WORDS);
    expect(await page.locator('#composer-text').inputValue()).toBe('and the other files too');
    await page.unroute('**/steering');
    await page.locator('#composer-text').press('Enter');
    await poll(() => page.locator('[data-entry="user"]').allInnerTexts()).toEqual([
      expect.stringContaining('How many lines are in README.md?'),
      expect.stringContaining('and the other files too'),
    ]);
    await poll(() => page.locator('.run-state').count()).toBe(1); // a new run took it
    await page.keyboard.press('Escape');
    await poll(() => page.locator('[data-entry="outcome"]').count()).toBe(2);
    console.log(`[web-steer-after-end] 409 run_not_live said as "${STEER_TOO_LATE_WORDS}"; Enter sent it anew`);
  });
}, 60_000);
