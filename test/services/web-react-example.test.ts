/**
 * docs/ui.md's "A React page in ~30 lines", taken from the page as it is: typechecked with tsc, built with
 * Vite, served next to loopctl/http behind Express (as the page shows it), and used in Chromium the way the
 * issue's "done means" says: ask and watch the answer stream, steer it mid-run and see the steering reach the
 * model, press Stop and see it stop (the model's request closed, its held chunk never sent).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import express from 'express';
import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../../src/http/index.js';
import { defineAgent, localRuns, openaiChat } from '../../src/index.js';
import { repoRoot } from '../cli-helpers.js';
import { launchChromium, withScreenshot } from './support/browser.js';
import { startHeldModel, type HeldModel } from './support/held-model.js';

const exec = promisify(execFile);
// Under node_modules, so the page's imports (react, @ag-ui/client) resolve to the repository's packages.
const dir = path.join(repoRoot, 'node_modules/.cache', `loopctl-react-example-${process.pid}`);

/** The page's code block under its heading in docs/ui.md. */
function snippet(): string {
  const doc = readFileSync(path.join(repoRoot, 'docs/ui.md'), 'utf8');
  const code = /^### A React page in ~30 lines\n[\s\S]*?```tsx\n([\s\S]*?)```/m.exec(doc)?.[1];
  if (!code) throw new Error('docs/ui.md has no tsx block under "### A React page in ~30 lines"');
  return code;
}

let model: HeldModel;
let server: Server;
let browser: Browser;
let url: string;

beforeAll(async () => {
  const code = snippet();
  expect(code.split('\n').length).toBeLessThanOrEqual(36);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'chat.tsx'), code);
  writeFileSync(
    path.join(dir, 'main.tsx'),
    "import { createRoot } from 'react-dom/client';\nimport { Chat } from './chat';\n" +
      "createRoot(document.getElementById('root')!).render(<Chat />);\n",
  );
  writeFileSync(
    path.join(dir, 'index.html'),
    '<!doctype html><html><body><div id="root"></div><script type="module" src="./main.tsx"></script></body></html>',
  );
  const compilerOptions = {
    jsx: 'react-jsx',
    module: 'esnext',
    moduleResolution: 'bundler',
    target: 'es2022',
    strict: true,
    lib: ['ES2022', 'DOM', 'DOM.Iterable'],
    skipLibCheck: true,
    noEmit: true,
    types: [],
  };
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['*.tsx'] }));
  writeFileSync(
    path.join(dir, 'vite.config.mjs'),
    "export default { root: import.meta.dirname, logLevel: 'warn', oxc: { jsx: { runtime: 'automatic' } } };\n",
  );
  const node = (bin: string, args: string[]) =>
    exec(process.execPath, [path.join(repoRoot, bin), ...args], { cwd: dir });
  await node('node_modules/typescript/bin/tsc', ['-p', dir]); // the snippet typechecks as it is
  await node('node_modules/vite/bin/vite.js', ['build', '--config', path.join(dir, 'vite.config.mjs')]);

  // The server as docs/ui.md shows it: loopctl/http under /api, the page's files beside it.
  model = await startHeldModel();
  const client = new OpenAI({ apiKey: 'test', baseURL: model.baseURL, maxRetries: 0 });
  const helper = defineAgent({
    name: 'helper',
    instructions: 'Be brief.',
    model: openaiChat({ model: 'test-model', client }),
  });
  const runs = localRuns({ agents: { helper } });
  const app = express();
  app.use('/api', createHandler({ runs, authorize: () => 'me' }));
  app.use(express.static(path.join(dir, 'dist')));
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 10_000, interval: 25 });
const output = (page: Page) => page.locator('output').innerText();
const userTexts = (n: number) => model.requests[n]!.messages.filter((m) => m.role === 'user').map((m) => m.content);

describe('docs/ui.md: a React page in ~30 lines', () => {
  it('asks and streams, takes steering mid-run to the next model request, and Stop stops the run', async () => {
    const page = await browser.newPage();
    await page.goto(url);
    await withScreenshot(page, 'react-example', async () => {
      model.enqueue({ chunks: ['loopctl runs ', 'agent loops'], held: '.' }, { chunks: ['Checked the tests too.'] });
      await page.getByLabel('Ask').fill('What is loopctl?');
      await page.getByLabel('Ask').press('Enter');
      await poll(() => output(page)).toBe('loopctl runs agent loops'); // streamed: the model still holds the rest
      await page.getByLabel('Steer').fill('also check the tests');
      await page.getByLabel('Steer').press('Enter');
      await poll(() => page.getByLabel('Steer').inputValue()).toBe('');
      model.release(0);
      await poll(() => page.locator('small').innerText()).toBe('done');
      expect(await output(page)).toBe('Checked the tests too.');
      expect(userTexts(1)).toEqual(['What is loopctl?', 'also check the tests']);

      model.enqueue({ chunks: ['Once upon'], held: ' NEVER SENT' });
      await page.getByLabel('Ask').fill('Write a long story.');
      await page.getByLabel('Ask').press('Enter');
      await poll(() => output(page)).toBe('Once upon');
      await page.getByRole('button', { name: 'Stop' }).click();
      await poll(() => page.locator('small').innerText()).toBe('stopped');
      expect(await page.getByRole('button', { name: 'Stop' }).isDisabled()).toBe(true);
      await model.requests[2]!.done;
      expect([model.requests[2]!.closedEarlyAt !== undefined, model.requests[2]!.heldSent]).toEqual([true, false]);
      expect(userTexts(2)).toEqual(['What is loopctl?', 'also check the tests', 'Write a long story.']);
    });
  });
});
