/**
 * AG-UI's own client in Chromium against `loopctl serve` (the built bin): @ag-ui/client's HttpAgent, bundled
 * with Vite and loaded into serve's page (same origin: the launch's cookie admits it), declares a front-end
 * tool in `RunAgentInput.tools`; the model (a local OpenAI-compatible server) calls it; the run ends with the
 * `interrupt` outcome (reason `frontend_tool`), HttpAgent keeps it in `pendingInterrupts`; the page answers it
 * in its next run's `resume` with the tool's result, and that run completes with the model having read it.
 * A second thread cancels its interrupt instead: the model reads the refusal. docs/ui.md, "Front-end tools".
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, removeTempFolders, repoRoot, tempFolder } from '../cli-helpers.js';
import { launchChromium, withScreenshot } from './support/browser.js';
import { startServe, type Served } from './support/serve.js';
import { startHeldModel, type HeldModel } from './support/held-model.js';

// Under node_modules, so the bundle's imports (@ag-ui/client, rxjs) resolve to the repository's packages.
const dir = path.join(repoRoot, 'node_modules/.cache', `loopctl-ag-ui-client-${process.pid}`);

let model: HeldModel;
let serve: ChildProcess;
let serveIo: Served['io'];
let address: string;
let browser: Browser;
let bundle: string;

beforeAll(async () => {
  await ensureBuilt({ web: true });
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'entry.js'), "export { HttpAgent } from '@ag-ui/client';\n");
  await build({
    root: dir,
    configFile: false,
    logLevel: 'warn',
    build: {
      outDir: path.join(dir, 'out'),
      minify: false,
      emptyOutDir: true,
      lib: { entry: path.join(dir, 'entry.js'), formats: ['iife'], name: 'AgUi', fileName: () => 'ag-ui.js' },
    },
  });
  bundle = readFileSync(path.join(dir, 'out/ag-ui.js'), 'utf8');
  model = await startHeldModel();
  const folder = tempFolder({ 'notes.md': '# notes\n' });
  const args = ['--port', '0', '--base-url', model.baseURL, '--api-key', 'test', '--model', 'test-model'];
  const served = await startServe(args, { cwd: folder });
  serve = served.child;
  address = served.address;
  serveIo = served.io;
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (serve && serve.exitCode === null) serve.kill('SIGKILL');
  await model?.close();
  removeTempFolders();
  rmSync(dir, { recursive: true, force: true });
});

/** serve's page with HttpAgent loaded (`window.AgUi`); the launch's token is in its cookie. */
async function openPage(): Promise<Page> {
  // The bundle is added as a script: serve's page forbids inline scripts, which this test context lifts.
  const page = await (await browser.newContext({ bypassCSP: true })).newPage();
  await page.goto(address);
  await page.getByLabel('Message').waitFor();
  await page.addScriptTag({ content: bundle });
  return page;
}

interface Outcome {
  events: { type: string; toolCallId?: string; content?: string; outcome?: unknown; toolCallName?: string }[];
  pending: { id: string; reason: string; toolCallId?: string }[];
  error?: string;
}

/** Runs HttpAgent in the page on `threadId`: the first run, then (with `answer`) the resume answering it. */
function runInPage(page: Page, threadId: string, answer: unknown): Promise<[Outcome, Outcome]> {
  return page.evaluate(
    async ({ threadId, answer }) => {
      const { HttpAgent } = (window as unknown as { AgUi: typeof import('@ag-ui/client') }).AgUi;
      const info = (await (await fetch('/api/info')).json()) as { agent: string };
      const agent = new HttpAgent({ url: `/api/agents/${info.agent}/runs`, threadId });
      const tools = [
        {
          name: 'pick_color',
          description: 'Asks the user to pick a colour.',
          parameters: { type: 'object', properties: { hint: { type: 'string' } } },
        },
      ];
      agent.addMessage({ id: `${threadId}-u1`, role: 'user', content: 'Pick a colour for the banner.' });
      const run = async (params: Parameters<typeof agent.runAgent>[0]): Promise<Outcome> => {
        const events: Outcome['events'] = [];
        try {
          await agent.runAgent(params, { onEvent: ({ event }) => void events.push(event as Outcome['events'][0]) });
        } catch (error) {
          return { events, pending: agent.pendingInterrupts, error: String(error) };
        }
        return { events, pending: agent.pendingInterrupts.map((i) => ({ ...i })) };
      };
      const first = await run({ tools });
      const id = first.pending[0]?.id ?? '';
      const resume = [
        answer === null
          ? { interruptId: id, status: 'cancelled' as const }
          : { interruptId: id, status: 'resolved' as const, payload: answer },
      ];
      const second = await run({ tools, resume });
      return [first, second];
    },
    { threadId, answer },
  );
}

describe('@ag-ui/client HttpAgent against loopctl serve (Chromium)', () => {
  it('a front-end tool call interrupts the run; resuming with its result completes it', async () => {
    const page = await openPage();
    await withScreenshot(page, 'ag-ui-client-frontend-tool', async () => {
      const n = model.requests.length;
      model.enqueue(
        { toolCalls: [{ id: 'call_pick', name: 'pick_color', args: { hint: 'warm' } }] },
        { chunks: ['Amber it is.'] },
      );
      const [first, second] = await runInPage(page, 'fe-answer', { result: 'amber' });
      expect(first.error, serveIo.stderr).toBeUndefined();
      expect(first.events.find((e) => e.type === 'TOOL_CALL_START')).toMatchObject({ toolCallName: 'pick_color' });
      expect(first.events.at(-1)).toMatchObject({
        type: 'RUN_FINISHED',
        outcome: {
          type: 'interrupt',
          interrupts: [{ id: 'call_pick', reason: 'frontend_tool', toolCallId: 'call_pick' }],
        },
      });
      expect(first.pending.map((i) => i.id)).toEqual(['call_pick']);
      expect(second.error, serveIo.stderr).toBeUndefined();
      expect(second.events.find((e) => e.type === 'TOOL_CALL_RESULT')).toMatchObject({
        toolCallId: 'call_pick',
        content: 'amber',
      });
      expect(second.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
      expect(second.pending).toEqual([]);
      // The model was offered the tool next to serve's own, and read the client's result.
      expect(model.requests[n]!.tools).toContain('pick_color');
      expect(model.requests[n + 1]!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'amber' });
    });
  });

  it('cancelling the interrupt refuses the call: the model reads that the client cancelled it', async () => {
    const page = await openPage();
    await withScreenshot(page, 'ag-ui-client-frontend-cancel', async () => {
      const n = model.requests.length;
      model.enqueue(
        { toolCalls: [{ id: 'call_pick2', name: 'pick_color', args: { hint: 'cold' } }] },
        { chunks: ['Fine, no colour.'] },
      );
      const [first, second] = await runInPage(page, 'fe-cancel', null);
      expect(first.pending.map((i) => i.reason)).toEqual(['frontend_tool']);
      expect(second.error, serveIo.stderr).toBeUndefined();
      expect(second.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
      expect(model.requests[n + 1]!.messages.at(-1)).toMatchObject({
        role: 'tool',
        content: 'Error: the call was rejected: the client cancelled the interrupt',
      });
    });
  });
});
