/**
 * The web app in Chromium when `loopctl serve` (the built bin, offline model) is SIGKILLed mid-run and launched
 * again on its port: while the page cannot reach it, the status region says the connection was lost and that it
 * tries again (the spinner alone read as a run still writing); once the new launch answers, the run is settled
 * with words saying it is out of reach, also when the page is opened at the new launch's address (the server's
 * own `no run "<id>"` was shown). Never the server's JSON, an id, or a stack.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CONNECTION_LOST_WORDS, RELAUNCHED_WORDS, RUN_GONE_WORDS } from '../../src/wording.js';
import { BIN, cliEnv, ensureBuilt, removeTempFolders, tempFolder, waitFor } from '../cli-helpers.js';
import { launchChromium, withScreenshot } from './support/browser.js';

let folder: string;
let port = 0;
let serve: ChildProcess | undefined;
let browser: Browser;

/** Launches `loopctl serve` (on `port`, 0 for any) with a slow offline model; resolves with the printed address. */
async function launch(): Promise<string> {
  const args = ['serve', '--port', String(port)];
  const env = cliEnv({ LOOPCTL_OFFLINE_DELAY_MS: '100' });
  const child = spawn(process.execPath, [BIN, ...args], { cwd: folder, env, stdio: ['ignore', 'pipe', 'pipe'] });
  serve = child;
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const address = await waitFor('the address loopctl serve prints', () => /http:\/\/\S+\?token=\S+/.exec(out)?.[0]);
  port = Number(new URL(address).port);
  return address;
}

/** SIGKILLs the server and waits for its exit (its port is free again). */
async function kill(): Promise<void> {
  const child = serve!;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

beforeAll(async () => {
  await ensureBuilt({ web: true });
  // Enough files that the offline model's listing streams for a few seconds.
  folder = tempFolder(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`note-${i}.md`, `# note ${i}\n`])));
  browser = await launchChromium();
}, 180_000);

afterEach(async () => {
  if (serve && serve.exitCode === null && serve.signalCode === null) await kill();
});

afterAll(async () => {
  await browser?.close();
  removeTempFolders();
});

const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 20_000, interval: 25 });
const notice = (page: Page) => page.locator('.notice').innerText();
const running = (page: Page) => page.locator('.run-state').count();

/** A new browser on `address` with a run streaming its answer. */
async function pageWithRun(address: string): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await page.goto(address);
  await page.getByLabel('Message').fill('List the markdown files');
  await page.getByLabel('Message').press('Enter');
  await poll(() => page.locator('.run-state').innerText()).toBe('Writing…');
  return page;
}

describe('loopctl serve killed under a page', () => {
  it('a page says the connection is lost while the server is down, then that its run is out of reach once a new launch answers', async () => {
    const page = await pageWithRun(await launch());
    await withScreenshot(page, 'server-killed-mid-run', async () => {
      await kill();
      await poll(() => notice(page)).toBe(CONNECTION_LOST_WORDS);
      expect(await running(page)).toBe(1); // still following it: the server may come back
      await launch();
      await poll(() => notice(page)).toBe(RELAUNCHED_WORDS);
      expect(await running(page)).toBe(0);
      expect(await page.getByRole('button', { name: 'Stop', exact: true }).count()).toBe(0);
      const text = await page.locator('main').innerText();
      expect(text).not.toMatch(/"\w+":|Error:|at \w+ \(/);
      console.log(`[web-server-lost] killed mid-run: "${CONNECTION_LOST_WORDS}", then "${RELAUNCHED_WORDS}"`);
    });
  }, 60_000);

  it('a page opened at the new launch address says its run is gone, not the server error naming its id', async () => {
    const page = await pageWithRun(await launch());
    await withScreenshot(page, 'server-relaunched-reopened', async () => {
      // Keep the page trying (a cut network) until it is opened at the new address, as a user would.
      await page.route('**/api/runs/**', (route) => route.abort('connectionreset'));
      await kill();
      await poll(() => notice(page)).toBe(CONNECTION_LOST_WORDS);
      await page.goto('about:blank'); // the tab leaves the page (its state saved) while its run is followed
      const address = await launch();
      await page.unroute('**/api/runs/**');
      await page.goto(address);
      await poll(() => notice(page)).toBe(RUN_GONE_WORDS);
      expect(await running(page)).toBe(0);
      expect(await page.locator('main').innerText()).not.toMatch(/no run "/);
      console.log(`[web-server-lost] reopened at the new launch: "${RUN_GONE_WORDS}"`);
    });
  }, 60_000);
});
