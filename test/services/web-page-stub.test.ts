/**
 * The built web app in Chromium against a hand-written AG-UI server: what `loopctl serve` cannot emit yet
 * (run control's approvals), and the tool card's progress. Approve/Reject answered 501 (a `Runs` without
 * approvals, e.g. an older server) show a notice and keep the card waiting; answered `{ decided: true }` they mark it,
 * and the run goes on. Operated with the keyboard only.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWebApp, serveFile } from '../../src/cli/serve/static.js';
import { ensureBuilt, repoRoot } from '../cli-helpers.js';
import { launchChromium, withScreenshot } from './support/browser.js';

let browser: Browser;
let server: Server;
let url: string;
/** How the decision route answers, and what it was sent. */
let decide: 'not_implemented' | 'decided' = 'not_implemented';
const decisions: unknown[] = [];
let stream: ServerResponse | undefined;
let seq = 0;

const write = (event: Record<string, unknown>) => stream!.write(`id: ${seq++}\ndata: ${JSON.stringify(event)}\n\n`);
const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
const body = async (req: IncomingMessage) => {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  return JSON.parse(text) as unknown;
};

beforeAll(async () => {
  await ensureBuilt({ web: true });
  const web = loadWebApp(path.join(repoRoot, 'dist/web'));
  server = createServer((req, res) => {
    void (async () => {
      const p = new URL(req.url!, 'http://x').pathname;
      if (p === '/api/info')
        return json(res, 200, { agent: 'helper', model: 'stub', folder: '/f', tools: ['write_file'], version: '0' });
      if (p === '/api/agents/helper/runs') {
        await body(req);
        res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Loopctl-Run-Id': 'r1' });
        stream = res;
        seq = 0;
        write({ type: 'RUN_STARTED', threadId: 't', runId: 'r1' });
        write({ type: 'STEP_STARTED', stepName: 'turn 1' });
        const value = { callId: 'c1', name: 'write_file', arguments: '{"path":"a.md","content":"hi"}' };
        return void write({ type: 'CUSTOM', name: 'loopctl.approval_requested', value });
      }
      if (p === '/api/runs/r1/tool-calls/c1/decision') {
        decisions.push(await body(req));
        if (decide === 'not_implemented') {
          return json(res, 501, { error: { code: 'not_implemented', message: 'decide is not implemented yet' } });
        }
        return json(res, 200, { decided: true });
      }
      if (!serveFile(web, req, res, p)) res.writeHead(404).end();
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

/** Presses Tab until the focused element is the one `name`d (a button or a text box), then `key`. */
async function keyboard(page: Page, name: string, key: string): Promise<void> {
  for (let i = 0; i < 30; i++) {
    const focused = await page.evaluate(
      () => document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent ?? '',
    );
    if (focused === name) return void (await page.keyboard.press(key));
    await page.keyboard.press('Tab');
  }
  throw new Error(`no focusable element named ${name}`);
}

const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 10_000, interval: 25 });
const card = (page: Page) => page.getByRole('article', { name: 'Tool call write_file' });

describe('the web app: approvals and tool cards', () => {
  it('Approve answered 501: a notice says approvals are not available yet; the card still waits', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(url);
    await withScreenshot(page, 'approve-501', async () => {
      decide = 'not_implemented';
      await page.getByLabel('Message').focus();
      await page.keyboard.type('write a.md');
      await page.keyboard.press('Enter');
      await poll(() => card(page).locator('.tool-status').innerText()).toBe('waiting for your approval');
      expect(await card(page).locator('.tool-args').innerText()).toBe('path: a.md\ncontent: hi');
      await keyboard(page, 'Approve', 'Enter');
      await poll(() => page.getByRole('status').innerText()).toBe(
        'Approve is not available in this version of loopctl (the server answered 501: decide is not implemented yet).',
      );
      expect(decisions.at(-1)).toEqual({ approve: true });
      expect(await card(page).getByRole('button', { name: 'Approve' }).isVisible()).toBe(true);
      expect(await card(page).locator('.tool-status').innerText()).toBe('waiting for your approval');
    });
  });

  it('Reject with a reason, answered { decided: true }, marks the card; progress and result follow', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(url);
    await withScreenshot(page, 'approve-decided', async () => {
      decide = 'decided';
      await page.getByLabel('Message').fill('write a.md');
      await page.getByLabel('Message').press('Enter');
      await poll(() => card(page).locator('.tool-status').innerText()).toBe('waiting for your approval');
      await card(page).getByLabel('Reason').fill('not now');
      await keyboard(page, 'Reject', 'Space');
      await poll(() => card(page).locator('.tool-decision').innerText()).toBe('You rejected it.');
      expect(decisions.at(-1)).toEqual({ approve: false, reason: 'not now' });
      // What the server does once run control lands: the call fails with the rejection, the run answers.
      write({ type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'write_file', parentMessageId: 'm' });
      write({ type: 'TOOL_CALL_END', toolCallId: 'c1' });
      write({
        type: 'CUSTOM',
        name: 'loopctl.tool_progress',
        value: { callId: 'c1', name: 'write_file', progress: { bytes: 2 } },
      });
      await poll(() => card(page).locator('.tool-progress').innerText()).toBe('Progress: {"bytes":2}');
      write({
        type: 'TOOL_CALL_RESULT',
        messageId: 'res',
        toolCallId: 'c1',
        content: 'rejected: not now',
        role: 'tool',
        metadata: { loopctl: { error: { name: 'ToolCallRejectedError', message: 'rejected: not now' } } },
      });
      await poll(() => card(page).locator('.tool-status').innerText()).toBe('failed');
      expect(await card(page).locator('.tool-result').innerText()).toBe('rejected: not now');
      write({ type: 'STEP_FINISHED', stepName: 'turn 1' });
      write({ type: 'RUN_FINISHED', threadId: 't', runId: 'r1', outcome: { type: 'success' } });
      stream!.end();
      await poll(() => page.locator('[data-entry="outcome"]').innerText()).toBe('Done.');
    });
  });
});
