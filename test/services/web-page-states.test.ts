/**
 * The web app's states in Chromium against `loopctl serve --confirm --allow-shell --max-turns 2` (the built
 * bin) and a local OpenAI-compatible model server that holds its next chunk until released: an answer
 * streaming as Markdown (a heading, bold, inline code, a code block with Copy, a list, a link), its finished
 * blocks left in place while the rest streams (no re-render, no flicker); model output
 * with HTML and scripts rendered inert; a write waiting for Approve/Reject in the page, approved (the file is
 * written) and rejected (the model reads the refusal); Stop with one call running and one awaiting approval
 * (neither card left running or pending, no decision buttons left), and Stop with a tool running alone and with a
 * call awaiting approval alone (the stream's own interrupted results settle them); a decision for a call that no
 * longer waits, said in words; the offline model's write under `serve --confirm`, approved in the page; the page's
 * switch "Ask before writes and shell commands" under a plain `serve` (on: the write asks; off: it runs; kept
 * across a reload) and locked on under `--confirm`, where no request can start a run that does not ask; a
 * failed run in words; cards' durations; light and dark. Each state's screenshot is saved in test/services/output
 * (page-*.png) to be looked at; no wall-clock assertion.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliEnv, ensureBuilt, removeTempFolders, tempFolder, waitFor } from '../cli-helpers.js';
import { launchChromium, SCREENSHOTS, withScreenshot } from './support/browser.js';
import { startServe } from './support/serve.js';
import { startHeldModel, type HeldModel } from './support/held-model.js';

let model: HeldModel;
let serve: ChildProcess;
let folder: string;
let address: string;
let origin: string;
let browser: Browser;

beforeAll(async () => {
  await ensureBuilt({ web: true });
  model = await startHeldModel();
  folder = tempFolder({ 'notes.md': '# notes\n' });
  const args = [
    ...['--port', '0', '--confirm', '--allow-shell', '--max-turns', '2'],
    ...['--base-url', model.baseURL, '--api-key', 'test', '--model', 'test-model'],
  ];
  const served = await startServe(args, { cwd: folder });
  serve = served.child;
  address = served.address;
  origin = new URL(address).origin;
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (serve && serve.exitCode === null) serve.kill('SIGKILL');
  await model?.close();
  removeTempFolders();
});

async function openPage(
  options: Parameters<Browser['newContext']>[0] = {},
): Promise<{ page: Page; context: BrowserContext }> {
  const context = await browser.newContext({ viewport: { width: 900, height: 760 }, colorScheme: 'light', ...options });
  const page = await context.newPage();
  await page.goto(address);
  await page.getByLabel('Message').waitFor();
  return { page, context };
}

/** Saves what the page looks like now as test/services/output/page-<name>.png, to be looked at. */
async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `page-${name}.png`) });
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message').fill(text);
  await page.getByLabel('Message').press('Enter');
}

const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 10_000, interval: 25 });
const outcomes = (page: Page) => page.locator('[data-entry="outcome"]').allInnerTexts();
const status = (page: Page) => page.locator('.run-state').innerText();
const card = (page: Page, name: string) => page.getByRole('article', { name: `Tool call ${name}` });
const cardStatus = (page: Page, name: string) => card(page, name).locator('.tool-status').innerText();
/** The page's background colour: light `#ffffff` or dark `#0d1117`, as the system's scheme says. */
const background = (page: Page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
const askSwitch = (page: Page) => page.getByRole('switch', { name: 'Ask before writes and shell commands' });
const decisionButtons = (page: Page) => page.getByRole('button', { name: /^(Approve|Reject)$/ }).count();
/** The tool messages the model was sent in request `n`. */
const toolMessages = (n: number) => model.requests[n]!.messages.filter((m) => m.role === 'tool').map((m) => m.content);

describe('the page in Chromium: answers as Markdown', () => {
  it('an answer streams as Markdown: heading, bold, inline code and an open code block, then a list and a link', async () => {
    const { page } = await openPage({ permissions: ['clipboard-read', 'clipboard-write'] });
    await withScreenshot(page, 'markdown', async () => {
      const n = model.requests.length;
      model.enqueue({
        chunks: ['## Plan\n\nThe file holds **one** heading and `notes.md` says:\n\n', '```md\n# notes\n'],
        held: '```\n\n- first\n- second\n\nSee [the docs](https://example.com/docs).',
      });
      await send(page, 'explain notes.md');
      const answer = page.locator('[data-entry="answer"]');
      await poll(() => answer.locator('pre code').count()).toBe(1);
      expect(await answer.locator('h2').innerText()).toBe('Plan');
      expect(await answer.locator('strong').innerText()).toBe('one');
      expect(await answer.locator('p code').innerText()).toBe('notes.md');
      // The fence is not closed yet: already a monospace block.
      expect(await answer.locator('pre code').innerText()).toBe('# notes');
      const font = await answer.locator('pre code').evaluate((el) => getComputedStyle(el).fontFamily);
      expect(font).toMatch(/mono/i);
      expect(await status(page)).toBe('Writing…');
      // Tag the finished blocks' elements: the rest of the stream must leave them in place (no re-render).
      await answer.locator('h2, strong').evaluateAll((els) => els.forEach((el) => el.setAttribute('data-seen', '')));
      await shot(page, 'streaming');
      model.release(n);
      await poll(() => outcomes(page)).toEqual(['Done.']);
      expect(await answer.locator('h2[data-seen], strong[data-seen]').count()).toBe(2);
      expect(await answer.locator('li').allInnerTexts()).toEqual(['first', 'second']);
      const link = answer.getByRole('link', { name: 'the docs' });
      expect([
        await link.getAttribute('href'),
        await link.getAttribute('rel'),
        await link.getAttribute('target'),
      ]).toEqual(['https://example.com/docs', 'noopener noreferrer nofollow', '_blank']);
      expect(await answer.locator('pre code').innerText()).toBe('# notes');
      await answer.getByRole('button', { name: 'Copy' }).click();
      await poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe('# notes');
      expect(await answer.getByRole('button', { name: 'Copied' }).count()).toBe(1);
      await shot(page, 'completed');
    });
  });

  it('model output with <img onerror>, <script> and a javascript: link renders inert, as text', async () => {
    const { page } = await openPage();
    await withScreenshot(page, 'sanitised', async () => {
      const n = model.requests.length;
      model.enqueue({
        chunks: [
          'Look: <img src=x onerror="window.__pwned=1">\n\n<script>window.__pwned=2</script>\n\n',
          '[click](javascript:window.__pwned=3) <a href="https://evil.example" onclick="window.__pwned=4">a</a>',
        ],
      });
      await send(page, 'say something nasty');
      await poll(() => outcomes(page)).toEqual(['Done.']);
      const answer = page.locator('[data-entry="answer"] .markdown');
      expect(await answer.locator('img, script, [onerror], [onclick]').count()).toBe(0);
      expect(await answer.getByRole('link').count()).toBe(0);
      await answer.getByText('click').click();
      expect(await page.evaluate(() => (window as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(await answer.innerText()).toContain('Look: <img src=x onerror="window.__pwned=1">');
      expect(await answer.innerText()).toContain('<script>window.__pwned=2</script>');
      expect(model.requests.length).toBe(n + 1);
    });
  });
});

describe('the page in Chromium: serve --confirm', () => {
  it('a write waits for Approve in the page; approved, it runs and the file is written', async () => {
    const { page } = await openPage();
    await withScreenshot(page, 'approve', async () => {
      const n = model.requests.length;
      const call = { id: 'call_w1', name: 'write_file', args: { path: 'plan.md', content: '# plan\n' } };
      model.enqueue({ chunks: ['I will write the plan.'], toolCalls: [call] }, { chunks: ['Wrote **plan.md**.'] });
      await send(page, 'write a plan into plan.md');
      await poll(() => cardStatus(page, 'write_file')).toBe('waiting for your approval');
      expect(await status(page)).toBe('Waiting for your approval');
      expect(await card(page, 'write_file').locator('.tool-line').innerText()).toBe('path: plan.md, content: # plan');
      expect(existsSync(path.join(folder, 'plan.md'))).toBe(false);
      await shot(page, 'approval');
      await card(page, 'write_file').getByRole('button', { name: 'Approve' }).click();
      await poll(() => outcomes(page)).toEqual(['Done.']);
      expect(await cardStatus(page, 'write_file')).toBe('done');
      // How long the call took, in words (its approval wait not included): e.g. "12 ms" or "1.4 s".
      expect(await card(page, 'write_file').locator('.tool-time').innerText()).toMatch(/^(\d+ ms|\d+\.\d s|\d+ s)$/);
      expect(await card(page, 'write_file').locator('.tool-decision').innerText()).toBe('You approved it.');
      expect(await background(page)).toBe('rgb(255, 255, 255)'); // light mode
      expect(await card(page, 'write_file').locator('.tool-line').innerText()).toBe('path: plan.md, content: # plan');
      expect(readFileSync(path.join(folder, 'plan.md'), 'utf8')).toBe('# plan\n');
      expect(await decisionButtons(page)).toBe(0);
      expect(model.requests.length).toBe(n + 2);
      await shot(page, 'tool-card');
    });
  });

  it('rejected with a reason: the call does not run, the model reads the refusal (dark, narrow)', async () => {
    const { page } = await openPage({ colorScheme: 'dark', viewport: { width: 390, height: 760 } });
    await withScreenshot(page, 'reject', async () => {
      const n = model.requests.length;
      const call = { id: 'call_w2', name: 'write_file', args: { path: 'nope.md', content: 'x' } };
      model.enqueue({ toolCalls: [call] }, { chunks: ['Understood, I did not write it.'] });
      await send(page, 'write nope.md');
      await poll(() => cardStatus(page, 'write_file')).toBe('waiting for your approval');
      await card(page, 'write_file').getByLabel('Reason').fill('not today');
      await shot(page, 'approval-dark-narrow');
      await card(page, 'write_file').getByRole('button', { name: 'Reject' }).click();
      await poll(() => outcomes(page)).toEqual(['Done.']);
      expect(await cardStatus(page, 'write_file')).toBe('rejected');
      expect(existsSync(path.join(folder, 'nope.md'))).toBe(false);
      expect(JSON.stringify(toolMessages(n + 1))).toContain('not today');
    });
  });

  it('Stop with a shell command running and a write awaiting approval: stopped, not run, no buttons left', async () => {
    const { page } = await openPage();
    await withScreenshot(page, 'stop-settles', async () => {
      const calls = [
        { id: 'call_s1', name: 'run_shell', args: { command: 'sleep 30' } },
        { id: 'call_w3', name: 'write_file', args: { path: 'later.md', content: 'x' } },
      ];
      model.enqueue({ chunks: ['Two things at once.'], toolCalls: calls });
      await send(page, 'sleep and write');
      await poll(() => decisionButtons(page)).toBe(4);
      await card(page, 'run_shell').getByRole('button', { name: 'Approve' }).click();
      await poll(() => cardStatus(page, 'run_shell')).toBe('running');
      // One call runs, the other still waits for the person: asking comes first.
      expect(await status(page)).toBe('Waiting for your approval');
      await page.keyboard.press('Escape'); // Esc is Stop
      await poll(() => page.locator('[data-entry="outcome"]').count()).toBe(1);
      // Where the cancel landed: the running call or the waiting one, whichever the engine was at.
      expect((await outcomes(page))[0]).toMatch(
        /^Stopped\. You pressed Stop while (a tool was running|a tool call waited for approval)\.$/,
      );
      expect(await cardStatus(page, 'run_shell')).toBe('stopped');
      // A stopped call ran until the run ended: its card says for how long.
      expect(await card(page, 'run_shell').locator('.tool-time').innerText()).toMatch(/^(\d+ ms|\d+\.\d s|\d+ s)$/);
      expect(await cardStatus(page, 'write_file')).toBe('not run');
      expect(await page.locator('[data-entry="tool"][data-status="running"], [data-status="awaiting"]').count()).toBe(
        0,
      );
      expect(await decisionButtons(page)).toBe(0);
      expect(existsSync(path.join(folder, 'later.md'))).toBe(false);
      await shot(page, 'stopped');
    });
  });

  it('Stop with a tool running alone, then with a call awaiting approval alone: the stream settles each card', async () => {
    const { page } = await openPage();
    await withScreenshot(page, 'stop-single', async () => {
      // The cards settle from the stream itself: each open call gets a TOOL_CALL_RESULT marked interrupted (the
      // frames are pinned by test/ag-ui-terminal-settles.test.ts; here, what the page shows of them).
      const shell = { id: 'call_s9', name: 'run_shell', args: { command: 'sleep 30' } };
      model.enqueue({ toolCalls: [shell] });
      await send(page, 'sleep');
      await card(page, 'run_shell').getByRole('button', { name: 'Approve' }).click();
      await poll(() => cardStatus(page, 'run_shell')).toBe('running');
      expect(await status(page)).toBe('Running run_shell…');
      await page.getByRole('button', { name: 'Stop', exact: true }).click();
      await poll(() => outcomes(page)).toEqual(['Stopped. You pressed Stop while a tool was running.']);
      expect(await cardStatus(page, 'run_shell')).toBe('stopped');

      const write = { id: 'call_w9', name: 'write_file', args: { path: 'never.md', content: 'x' } };
      model.enqueue({ toolCalls: [write] });
      await send(page, 'write never.md');
      await poll(() => cardStatus(page, 'write_file')).toBe('waiting for your approval');
      await page.getByRole('button', { name: 'Stop', exact: true }).click();
      await poll(() => page.locator('[data-entry="outcome"]').count()).toBe(2);
      expect((await outcomes(page))[1]).toBe('Stopped. You pressed Stop while a tool call waited for approval.');
      expect(await cardStatus(page, 'write_file')).toBe('not run');
      expect(await page.locator('[data-entry="tool"][data-status="running"], [data-status="awaiting"]').count()).toBe(
        0,
      );
      expect(await decisionButtons(page)).toBe(0);
      expect(existsSync(path.join(folder, 'never.md'))).toBe(false);
    });
  });

  it('a decision for a call that no longer waits (its run was stopped meanwhile) is said in words', async () => {
    const { page, context } = await openPage();
    await withScreenshot(page, 'decision-too-late', async () => {
      const call = { id: 'call_w4', name: 'write_file', args: { path: 'late.md', content: 'x' } };
      model.enqueue({ toolCalls: [call] });
      await send(page, 'write late.md');
      await poll(() => cardStatus(page, 'write_file')).toBe('waiting for your approval');
      // The run is cancelled for real (another tab's Stop) just before this page's decision reaches the server.
      await page.route('**/tool-calls/*/decision', async (route) => {
        const runId = /\/runs\/([^/]+)\//.exec(route.request().url())![1]!;
        const cancelled = await context.request.post(`${origin}/api/runs/${runId}/cancel`, {
          data: { reason: 'stopped by the user' },
        });
        expect(await cancelled.json()).toEqual({ cancelled: true });
        await route.continue();
      });
      const decided = page.waitForResponse((r) => r.url().endsWith('/decision'));
      await card(page, 'write_file').getByRole('button', { name: 'Approve' }).click();
      expect(await (await decided).json()).toEqual({ decided: false });
      await poll(() => page.getByRole('status').innerText()).toBe(
        'That call no longer waits for a decision: it was decided already, or its run has ended.',
      );
      await poll(() => outcomes(page)).toEqual(['Stopped. You pressed Stop while a tool call waited for approval.']);
      expect(await cardStatus(page, 'write_file')).toBe('not run');
      expect(await card(page, 'write_file').locator('.tool-decision').innerText()).toBe(
        'This call no longer waits for a decision.',
      );
      expect(await decisionButtons(page)).toBe(0);
      expect(existsSync(path.join(folder, 'late.md'))).toBe(false);
    });
  });
});

describe('the page in Chromium: serve --confirm with the offline model', () => {
  it('"summarise notes.md into SUMMARY.md": the write waits in the page; approved, the file holds the summary', async () => {
    const dir = tempFolder({ 'notes.md': '# Notes\n\nThe build uses Vite.\n\nThe tests use Vitest and Chromium.\n' });
    const offline = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--confirm'], {
      cwd: dir,
      env: cliEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      offline.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
      const at = await waitFor('the offline serve address', () => /http:\/\/\S+\?token=\S+/.exec(out)?.[0]);
      const context = await browser.newContext({ viewport: { width: 900, height: 760 } });
      const page = await context.newPage();
      await page.goto(at);
      await withScreenshot(page, 'offline-confirm', async () => {
        expect(await page.locator('.top .meta').innerText()).toMatch(/^offline model/);
        await send(page, 'summarise notes.md into SUMMARY.md');
        await poll(() => cardStatus(page, 'write_file')).toBe('waiting for your approval');
        expect(await card(page, 'write_file').locator('.tool-line').innerText()).toMatch(
          /^path: SUMMARY\.md, content: /,
        );
        expect(existsSync(path.join(dir, 'SUMMARY.md'))).toBe(false);
        await shot(page, 'offline-approval');
        await card(page, 'write_file').getByRole('button', { name: 'Approve' }).click();
        await poll(() => outcomes(page)).toEqual(['Done.']);
        expect(readFileSync(path.join(dir, 'SUMMARY.md'), 'utf8')).toContain('Vite');
        // The offline model's answer is Markdown too: its summary points are a list.
        expect(await page.locator('[data-entry="answer"] li').count()).toBeGreaterThan(0);
        await shot(page, 'offline-done');
      });
      await context.close();
    } finally {
      offline.kill('SIGKILL');
    }
  });
});

describe("the page in Chromium: the setting 'Ask before writes and shell commands' without --confirm", () => {
  it('on, a write waits for Approve/Reject; off, it runs at once; the setting is kept after a reload', async () => {
    const dir = tempFolder({ 'notes.md': '# Notes\n\nThe build uses Vite.\n\nThe tests use Vitest and Chromium.\n' });
    const plain = spawn(process.execPath, [BIN, 'serve', '--port', '0'], {
      cwd: dir,
      env: cliEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      plain.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
      const at = await waitFor('the serve address', () => /http:\/\/\S+\?token=\S+/.exec(out)?.[0]);
      const context = await browser.newContext({ viewport: { width: 900, height: 760 }, colorScheme: 'light' });
      const page = await context.newPage();
      await page.goto(at);
      await withScreenshot(page, 'ask-setting', async () => {
        expect(await askSwitch(page).isChecked()).toBe(false);
        expect(await askSwitch(page).isDisabled()).toBe(false);
        await askSwitch(page).click();
        expect(await askSwitch(page).isChecked()).toBe(true);
        await page.reload();
        await page.getByLabel('Message').waitFor();
        expect(await askSwitch(page).isChecked()).toBe(true);
        await send(page, 'summarise notes.md into SUMMARY.md');
        await poll(() => cardStatus(page, 'write_file')).toBe('waiting for your approval');
        expect(existsSync(path.join(dir, 'SUMMARY.md'))).toBe(false);
        await shot(page, 'ask-setting-approval');
        await card(page, 'write_file').getByRole('button', { name: 'Reject' }).click();
        await poll(() => outcomes(page)).toEqual(['Done.']);
        expect(await cardStatus(page, 'write_file')).toBe('rejected');
        expect(existsSync(path.join(dir, 'SUMMARY.md'))).toBe(false);

        await page.getByRole('button', { name: 'New chat' }).click();
        await askSwitch(page).click();
        expect(await askSwitch(page).isChecked()).toBe(false);
        await send(page, 'summarise notes.md into SUMMARY.md');
        await poll(() => outcomes(page)).toEqual(['Done.']);
        expect(await cardStatus(page, 'write_file')).toBe('done');
        expect(await decisionButtons(page)).toBe(0);
        expect(readFileSync(path.join(dir, 'SUMMARY.md'), 'utf8')).toContain('Vite');
      });
      await context.close();
    } finally {
      plain.kill('SIGKILL');
    }
  });

  it('under --confirm no request can start a run that does not ask: the asking agent is the only one', async () => {
    const { page, context } = await openPage();
    const info = (await (await context.request.get(`${origin}/api/info`)).json()) as Record<string, unknown>;
    expect(info).toMatchObject({ agent: 'loopctl', confirm: true });
    expect(info['askingAgent']).toBeUndefined();
    const other = await context.request.post(`${origin}/api/agents/loopctl-ask/runs`, {
      data: { threadId: 't', runId: 'r', messages: [], tools: [], context: [], state: {}, forwardedProps: {} },
    });
    expect(other.status()).toBe(404);
    await page.close();
  });
});

describe('the page in Chromium: failures and the rest', () => {
  it('a run that fails shows what happened in words, never its stop reason', async () => {
    const { page } = await openPage();
    await withScreenshot(page, 'failed', async () => {
      const read = (id: string) => ({ id, name: 'read_file', args: { path: 'notes.md' } });
      model.enqueue({ toolCalls: [read('call_r1')] }, { toolCalls: [read('call_r2')] });
      await send(page, 'keep reading');
      await poll(() => page.locator('[data-entry="outcome"][data-outcome="failed"]').count()).toBe(1);
      const [text] = await outcomes(page);
      expect(text).toBe(
        'Gave up: the run reached its limit of turns (--max-turns) before it had an answer. Its limit is 2 turns.',
      );
      await shot(page, 'error');
    });
  });

  it('the empty state, and the page on a narrow screen in dark mode', async () => {
    const { page } = await openPage({ viewport: { width: 390, height: 760 }, colorScheme: 'dark' });
    await withScreenshot(page, 'empty', async () => {
      expect(await page.getByRole('heading', { name: 'What should loopctl do?' }).isVisible()).toBe(true);
      expect(await page.locator('.top .meta').isVisible()).toBe(false); // the header's details are hidden when narrow
      // serve --confirm: the page's setting shows on, and cannot be turned off.
      expect(await askSwitch(page).isChecked()).toBe(true);
      expect(await askSwitch(page).isDisabled()).toBe(true);
      expect(await background(page)).toBe('rgb(13, 17, 23)'); // dark mode
      await shot(page, 'empty-narrow-dark');
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width).toBeLessThanOrEqual(390); // nothing wider than the screen
    });
  });
});
