/**
 * The built web app in Chromium against the real loopctl/http handler (mounted at /api, as `loopctl serve`
 * does) running an agent whose sub-agent's sub-agent (depth 2) calls a tool that needs approval: the page shows
 * that call as a card with Approve/Reject and the path it came through; Approve decides it through the decision
 * route (the root's control adopts nested approvals), it runs, and the run completes. Stop while it waits
 * leaves the card `not run` with no decision button. Screenshots in test/services/output (page-nested-*.png).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWebApp, serveFile } from '../../src/cli/serve/static.js';
import { createHandler } from '../../src/http/index.js';
import { defineAgent, localRuns } from '../../src/index.js';
import { scriptedModel } from '../../src/testing/index.js';
import { ensureBuilt, repoRoot } from '../cli-helpers.js';
import { deployTool } from '../support/gated-tools.js';
import { SCREENSHOTS, launchChromium, withScreenshot } from './support/browser.js';

let browser: Browser;
let server: Server;
let url: string;
const executed: string[] = [];

/** helper → `research` (researcher) → `ops` (ops agent) → `deploy` (needs approval); one script per run. */
function agents() {
  const deploy = deployTool(executed);
  const script = (call: { name: string; callId: string; arguments: object }, answer: string) =>
    Array.from({ length: 4 }, () => [{ toolCalls: [call] }, { text: answer }]).flat();
  const ops = defineAgent({
    name: 'ops',
    instructions: 'i',
    model: scriptedModel(script({ name: 'deploy', callId: 'call_deploy', arguments: { service: 'api' } }, 'ops done')),
    tools: [deploy],
  });
  const researcher = defineAgent({
    name: 'researcher',
    instructions: 'i',
    model: scriptedModel(script({ name: 'ops', callId: 'call_ops', arguments: { input: 'deploy' } }, 'checked')),
    tools: [ops.asTool({ name: 'ops', description: 'ops' })],
  });
  return defineAgent({
    name: 'helper',
    instructions: 'i',
    model: scriptedModel(script({ name: 'research', callId: 'call_research', arguments: { input: 'go' } }, 'Shipped.')),
    tools: [researcher.asTool({ name: 'research', description: 'research' })],
  });
}

beforeAll(async () => {
  await ensureBuilt({ web: true });
  const web = loadWebApp(path.join(repoRoot, 'dist/web'));
  const runs = localRuns({ agents: { helper: agents() } });
  const api = createHandler({ runs, authorize: () => 'me', basePath: '/api' });
  server = createServer((req, res) => {
    const p = new URL(req.url!, 'http://x').pathname;
    if (p === '/api/info') {
      const info = { agent: 'helper', model: 'scripted', folder: '/f', tools: ['research'], version: '0' };
      return void res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(info));
    }
    if (p.startsWith('/api/')) return void api(req, res);
    if (!serveFile(web, req, res, p)) res.writeHead(404).end();
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

const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 10_000, interval: 25 });
const card = (page: Page, name: string) => page.getByRole('article', { name: `Tool call ${name}` });
const cardStatus = (page: Page, name: string) => card(page, name).locator('.tool-status').innerText();
const outcomes = (page: Page) => page.locator('[data-entry="outcome"]').allInnerTexts();
const decisionButtons = (page: Page) => page.getByRole('button', { name: /^(Approve|Reject)$/ }).count();

async function ask(page: Page): Promise<void> {
  await page.goto(url);
  await page.getByLabel('Message').fill('Ship the api.');
  await page.getByLabel('Message').press('Enter');
  await poll(() => cardStatus(page, 'deploy')).toBe('waiting for your approval');
}

describe('the web app: a depth-2 sub-agent approval', () => {
  it('shown as a card with its path and Approve/Reject; Approve runs it and the run completes', async () => {
    const page = await (await browser.newContext()).newPage();
    await withScreenshot(page, 'nested-approve', async () => {
      executed.length = 0;
      await ask(page);
      expect(await card(page, 'deploy').locator('.tool-via').innerText()).toBe('in research › ops');
      expect(await card(page, 'deploy').locator('.tool-line').innerText()).toBe('service: api');
      expect(await page.locator('.run-state').innerText()).toBe('Waiting for your approval');
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: path.join(SCREENSHOTS, 'page-nested-approval.png') });
      const decided = page.waitForResponse((r) => r.url().endsWith('/tool-calls/call_deploy/decision'));
      await card(page, 'deploy').getByRole('button', { name: 'Approve' }).click();
      expect(await (await decided).json()).toEqual({ decided: true });
      await poll(() => outcomes(page)).toEqual(['Done.']);
      expect(await cardStatus(page, 'deploy')).toBe('done');
      expect(await card(page, 'deploy').locator('.tool-decision').innerText()).toBe('You approved it.');
      expect(await cardStatus(page, 'research')).toBe('done');
      expect(executed).toEqual(['api']);
      expect(await decisionButtons(page)).toBe(0);
    });
  });

  it('Stop while it waits: the card reads not run, no decision button is left, nothing ran', async () => {
    const page = await (await browser.newContext()).newPage();
    await withScreenshot(page, 'nested-stop', async () => {
      executed.length = 0;
      await ask(page);
      await page.getByRole('button', { name: 'Stop', exact: true }).click();
      await poll(() => page.locator('[data-entry="outcome"]').count()).toBe(1);
      expect(await cardStatus(page, 'deploy')).toBe('not run');
      expect(await cardStatus(page, 'research')).toBe('stopped');
      expect(await page.locator('[data-entry="tool"][data-status="running"], [data-status="awaiting"]').count()).toBe(
        0,
      );
      expect(await decisionButtons(page)).toBe(0);
      expect(executed).toEqual([]);
    });
  });
});
