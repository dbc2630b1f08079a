/**
 * `loopctl serve --guard <pattern>` in Chromium (docs/guardrails.md, "The CLI"): the answer is held back and
 * released sentence by sentence ('hold' mode). A MutationObserver records every text the page ever showed: a
 * sentence that matches the pattern never appears, not even for a moment, the sentences before it do, and the run
 * ends with the page's words for a guardrail. A clean answer is shown whole. No wall-clock assertion.
 */
import type { ChildProcess } from 'node:child_process';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STOP_REASON_WORDS } from '../../src/wording.js';
import { ensureBuilt, removeTempFolders, tempFolder } from '../cli-helpers.js';
import { launchChromium, withScreenshot } from './support/browser.js';
import { startServe } from './support/serve.js';
import { startHeldModel, type HeldModel } from './support/held-model.js';

let model: HeldModel;
let serve: ChildProcess;
let address: string;
let browser: Browser;

beforeAll(async () => {
  await ensureBuilt({ web: true });
  model = await startHeldModel();
  const folder = tempFolder({ 'notes.md': '# notes\n' });
  const args = ['--port', '0', '--base-url', model.baseURL, '--api-key', 'test', '--model', 'test-model'];
  args.push('--guard', '\\bpin is \\d+');
  const served = await startServe(args, { cwd: folder });
  serve = served.child;
  address = served.address;
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (serve && serve.exitCode === null) serve.kill('SIGKILL');
  await model?.close();
  removeTempFolders();
});

/** A page on the printed address that records, on every change, the text it shows. */
async function openRecordedPage(): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await page.goto(address);
  await page.getByLabel('Message').waitFor();
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { seen: string[] }).seen = seen;
    new MutationObserver(() => seen.push(document.body.innerText)).observe(document.body, {
      subtree: true,
      childList: true,
      characterData: true,
    });
  });
  return page;
}

const everShown = (page: Page) => page.evaluate(() => (window as unknown as { seen: string[] }).seen.join('\n'));
const answers = (page: Page) => page.locator('[data-entry="answer"] .text').allInnerTexts();
const outcomes = (page: Page) => page.locator('[data-entry="outcome"]').allInnerTexts();
const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 10_000, interval: 25 });

async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message').fill(text);
  await page.getByLabel('Message').press('Enter');
}

describe('loopctl serve --guard in Chromium', () => {
  it('no character of the refused sentence ever reaches the page; the sentence before it does', async () => {
    const page = await openRecordedPage();
    await withScreenshot(page, 'guard-hold', async () => {
      const n = model.requests.length;
      model.enqueue({ chunks: ['Here it is. ', 'The pin ', 'is 4321. '], held: 'Keep it safe.' });
      await send(page, 'what is my pin');
      await poll(() => answers(page)).toEqual(['Here it is.']);
      model.release(n);
      await poll(async () => (await outcomes(page)).join(' ')).toContain(STOP_REASON_WORDS.guardrail);
      const shown = await everShown(page);
      expect(shown).toContain('Here it is.');
      expect(shown).not.toMatch(/4321|Keep it safe/);
      console.log(`web guard: ${shown.length} characters observed over the run, refused sentence shown 0 times`);
    });
  });

  it('an answer that does not match is shown whole and the run is done', async () => {
    const page = await openRecordedPage();
    await withScreenshot(page, 'guard-pass', async () => {
      model.enqueue({ chunks: ['All fine. ', 'Nothing secret here.'] });
      await send(page, 'say something');
      await poll(() => outcomes(page)).toEqual(['Done.']);
      expect(await answers(page)).toEqual(['All fine. Nothing secret here.']);
    });
  });
});
