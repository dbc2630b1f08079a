/**
 * A Stop whose request fails, in Chromium against `loopctl serve` (the built bin, offline model): the page's
 * cancel request is cut (a network error), so the run goes on. The page says Stop failed, does not go on
 * saying "Stopping…" for a run that is not stopping, and Stop can be pressed again (it stayed disabled, so only
 * Esc could stop the run); the second Stop ends it. A reload while a Stop's request is still out (it never
 * reaches the server: the reload drops it) shows the run going on with Stop to press, not "Stopping…" for good.
 */
import type { ChildProcess } from 'node:child_process';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cliEnv, ensureBuilt, removeTempFolders, tempFolder } from '../cli-helpers.js';
import { launchChromium, withScreenshot } from './support/browser.js';
import { startServe } from './support/serve.js';

let serve: ChildProcess;
let address: string;
let browser: Browser;

beforeAll(async () => {
  await ensureBuilt({ web: true });
  // Enough files that the offline model's listing streams for a few seconds.
  const folder = tempFolder(Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`note-${i}.md`, `# ${i}\n`])));
  const env = cliEnv({ LOOPCTL_OFFLINE_DELAY_MS: '100' });
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

/** A new page (its own context) on the printed address, once its message box is shown. */
async function openPage(): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(10_000);
  await page.goto(address);
  await page.getByLabel('Message').waitFor();
  return page;
}

/** Sends `text` from the page's message box. */
async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message').fill(text);
  await page.getByLabel('Message').press('Enter');
}

it('a Stop whose request failed leaves the run shown as going on, with Stop to press again', async () => {
  const page = await openPage();
  await withScreenshot(page, 'stop-failed', async () => {
    await page.route('**/cancel', (route) => route.abort('connectionreset'));
    await send(page, 'List the markdown files');
    const state = page.locator('.run-state');
    const stop = page.getByRole('button', { name: 'Stop', exact: true });
    await poll(() => state.innerText()).toBe('Writing…');
    await stop.click();
    await poll(() => page.locator('.notice').innerText()).toMatch(/^Stop failed: /);
    await poll(() => state.innerText()).toBe('Writing…'); // the run goes on, and the page says so
    expect(await stop.isEnabled()).toBe(true);
    await page.unroute('**/cancel');
    await stop.click();
    await poll(() => page.locator('[data-entry="outcome"]').innerText()).toMatch(/^Stopped\./);
    expect(await state.count()).toBe(0);
    console.log('[web-stop-failed] a failed Stop: status back to "Writing…", Stop enabled; the second Stop stopped it');
  });
}, 60_000);

it('a reload while a Stop request is still out shows the run going on, with Stop to press again', async () => {
  const page = await openPage();
  await withScreenshot(page, 'stop-reloaded', async () => {
    await page.route('**/cancel', () => undefined); // held: never reaches the server
    await send(page, 'List the markdown files');
    const state = page.locator('.run-state');
    const stop = page.getByRole('button', { name: 'Stop', exact: true });
    await poll(() => state.innerText()).toBe('Writing…');
    await stop.click();
    await poll(() => state.innerText()).toBe('Stopping…');
    await page.reload(); // the held request goes with the page
    await poll(() => state.innerText()).toBe('Writing…');
    expect(await stop.isEnabled()).toBe(true);
    await page.unroute('**/cancel');
    await stop.click();
    await poll(() => page.locator('[data-entry="outcome"]').innerText()).toMatch(/^Stopped\./);
    console.log('[web-stop-failed] reloaded with a Stop out: "Writing…", Stop enabled; the next Stop stopped it');
  });
}, 60_000);
