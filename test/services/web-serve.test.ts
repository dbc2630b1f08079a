/**
 * The web app in Chromium against `loopctl serve` (the built bin), with a local OpenAI-compatible model
 * server that holds its next chunk until released, until the socket closes, or for 10 s: a task streams into
 * the page; Stop mid-stream; steering queued → injected, reaching the next model request; withdraw; reload
 * mid-run; two browsers as two principals; refused requests; Stop after this step (a graceful stop); a port in
 * use; Ctrl-C. A failing spec leaves a screenshot in test/services/output. No wall-clock
 * assertion (click-to-close latency is in `npm run bench -- http`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliEnv, ensureBuilt, removeTempFolders, tempFolder } from '../cli-helpers.js';
import { launchChromium, withScreenshot } from './support/browser.js';
import { startServe, type Served } from './support/serve.js';
import { startHeldModel, type HeldModel } from './support/held-model.js';

let model: HeldModel;
let serve: ChildProcess;
let serveIo: Served['io'];
let address: string; // the printed address, with the token
let origin: string;
let port: number;
let browser: Browser;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  await ensureBuilt({ web: true });
  model = await startHeldModel();
  const folder = tempFolder({ 'notes.md': '# notes\n' });
  const args = ['--port', '0', '--base-url', model.baseURL, '--api-key', 'test', '--model', 'test-model'];
  const served = await startServe(args, { cwd: folder });
  serve = served.child;
  address = served.address;
  serveIo = served.io;
  port = Number(new URL(address).port);
  origin = `http://127.0.0.1:${port}`;
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (serve && serve.exitCode === null) serve.kill('SIGKILL');
  await model?.close();
  removeTempFolders();
});

/** A new browser (context: its own cookies and sessionStorage, so its own principal) on the printed address. */
async function openPage(): Promise<Page> {
  const context = await browser.newContext();
  contexts.push(context);
  const page = await context.newPage();
  await page.goto(address);
  expect(new URL(page.url()).search).toBe(''); // the token left the address for a cookie
  await page.getByLabel('Message').waitFor();
  return page;
}

const answers = (page: Page) => page.locator('[data-entry="answer"] .text').allInnerTexts();
const outcomes = (page: Page) => page.locator('[data-entry="outcome"]').allInnerTexts();
const steering = (page: Page) =>
  page
    .locator('.steering li')
    .evaluateAll((lis) =>
      lis.map((li) => `${li.querySelector('.steer-text')?.textContent} · ${li.getAttribute('data-status')}`),
    );
/** The state the page saved (it saves as it changes, 200 ms apart at most), once it names the live run. */
async function savedRun(page: Page): Promise<{ threadId: string; runId: string }> {
  const read = () =>
    page.evaluate(
      () =>
        JSON.parse(sessionStorage.getItem('loopctl.chat') ?? 'null')?.state as {
          threadId: string;
          run?: { runId?: string };
        },
    );
  await poll(async () => (await read())?.run?.runId).toBeDefined();
  const state = await read();
  return { threadId: state.threadId, runId: state.run!.runId! };
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message').fill(text);
  await page.getByLabel('Message').press('Enter');
}

async function steer(page: Page, text: string): Promise<void> {
  await page.getByLabel('Steer the run').fill(text);
  await page.getByRole('button', { name: 'Steer' }).click();
}

/** The texts the model was sent as user messages in request `n`. */
const userTexts = (n: number) => model.requests[n]!.messages.filter((m) => m.role === 'user').map((m) => m.content);

const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 10_000, interval: 25 });

describe('loopctl serve in Chromium', () => {
  it('a task streams into the page: the text so far while the model holds, then the rest and "Done."', async () => {
    const page = await openPage();
    await withScreenshot(page, 'streams', async () => {
      const n = model.requests.length;
      model.enqueue({ chunks: ['Hello', ' from'], held: ' the model.' });
      await send(page, 'say hello');
      await poll(() => answers(page)).toEqual(['Hello from']);
      expect(await page.locator('[data-entry="answer"]').getAttribute('aria-busy')).toBe('true');
      expect(await page.getByRole('button', { name: 'Stop', exact: true }).isEnabled()).toBe(true);
      expect(userTexts(n)).toEqual(['say hello']);
      model.release(n);
      await poll(() => outcomes(page)).toEqual(['Done.']);
      expect(await answers(page)).toEqual(['Hello from the model.']);
      expect(await page.getByRole('button', { name: 'Stop', exact: true }).count()).toBe(0);
    });
  });

  it('a tool call shows as a card with its arguments and its result', async () => {
    const page = await openPage();
    await withScreenshot(page, 'tool-card', async () => {
      model.enqueue(
        { toolCalls: [{ id: 'call_1', name: 'read_file', args: { path: 'notes.md' } }] },
        { chunks: ['It holds notes.'] },
      );
      await send(page, 'what is in notes.md?');
      await poll(() => outcomes(page)).toEqual(['Done.']);
      const card = page.getByRole('article', { name: 'Tool call read_file' });
      expect(await card.locator('.tool-status').innerText()).toBe('done');
      // Both are in closed <details> once the call is done: a click opens them.
      await card.getByText('Arguments').click();
      expect(await card.locator('.tool-args').innerText()).toBe('path: notes.md');
      await card.getByText('Result').click();
      expect(await card.locator('.tool-result').innerText()).toBe('# notes\n');
      expect(await answers(page)).toEqual(['It holds notes.']);
    });
  });

  it('Stop mid-stream: cancel answered after run_cancelled, page says cancelled, held chunk never sent', async () => {
    const page = await openPage();
    await withScreenshot(page, 'stop', async () => {
      const n = model.requests.length;
      model.enqueue({ chunks: ['Partial'], held: ' NEVER SENT' });
      await send(page, 'write a long answer');
      await poll(() => answers(page)).toEqual(['Partial']);
      const cancel = page.waitForResponse((r) => r.url().endsWith('/cancel'));
      await page.getByRole('button', { name: 'Stop', exact: true }).click();
      const answer = await cancel;
      // {cancelled: true} is only answered once the run's terminal event was run_cancelled.
      expect([answer.status(), await answer.json()]).toEqual([200, { cancelled: true }]);
      // Right after that answer the run has ended: its replay is finite and ends cancelled.
      const runId = decodeURIComponent(/\/runs\/([^/]+)\/cancel$/.exec(answer.url())![1]!);
      const threadId = await page.evaluate(() => JSON.parse(sessionStorage.getItem('loopctl.chat')!).state.threadId);
      const replay = await page.evaluate(
        async ([run, thread]) => (await fetch(`/api/runs/${encodeURIComponent(run)}/events?threadId=${thread}`)).text(),
        [runId, threadId] as const,
      );
      expect(replay).toMatch(
        /"name":"loopctl\.cancelled","value":\{"phase":"model_stream","reason":"stopped by the user"/,
      );
      expect(replay.trimEnd()).toMatch(/"type":"RUN_FINISHED".*"outcome":\{"type":"cancelled"\}.*\}$/);
      await poll(() => outcomes(page)).toEqual(['Stopped. You pressed Stop while the model was answering.']);
      expect(await answers(page)).toEqual(['Partial']);
      const request = model.requests[n]!;
      await request.done;
      expect(request.closedEarlyAt).toBeDefined(); // the model server saw the socket close…
      expect([request.heldSent, request.watchdog]).toEqual([false, false]); // …and never sent the held chunk
    });
  });

  it('steering typed mid-run shows queued, then injected, and reaches the next model request once', async () => {
    const page = await openPage();
    await withScreenshot(page, 'steering', async () => {
      const n = model.requests.length;
      model.enqueue({ chunks: ['Looking'], held: ' around.' }, { chunks: ['Checked'], held: ' the tests too.' });
      await send(page, 'look around');
      await poll(() => answers(page)).toEqual(['Looking']);
      await steer(page, 'also check the tests');
      await poll(() => steering(page)).toEqual(['also check the tests · queued']);
      model.release(n); // the answer ends; the final-answer check finds the steering and runs one more turn
      await model.request(n + 1);
      await poll(() => steering(page)).toEqual(['also check the tests · injected']);
      expect(await page.locator('[data-entry="user"] .who').allInnerTexts()).toEqual(['You', 'You (steering)']);
      expect(await page.locator('[data-entry="user"] .text').allInnerTexts()).toEqual([
        'look around',
        'also check the tests',
      ]);
      expect(userTexts(n + 1)).toEqual(['look around', 'also check the tests']);
      model.release(n + 1);
      await poll(() => outcomes(page)).toEqual(['Done.']);
      expect(await answers(page)).toEqual(['Looking around.', 'Checked the tests too.']);
      expect(model.requests.length).toBe(n + 2);
    });
  });

  it('a queued steer withdrawn never reaches the model', async () => {
    const page = await openPage();
    await withScreenshot(page, 'withdraw', async () => {
      const n = model.requests.length;
      model.enqueue({ chunks: ['Working'], held: ' done.' });
      await send(page, 'work on it');
      await poll(() => answers(page)).toEqual(['Working']);
      await steer(page, 'drop this');
      await poll(() => steering(page)).toEqual(['drop this · queued']);
      await page.getByRole('button', { name: 'Withdraw "drop this"' }).click();
      await poll(() => steering(page)).toEqual(['drop this · withdrawn']);
      model.release(n);
      await poll(() => outcomes(page)).toEqual(['Done.']);
      expect(model.requests.length).toBe(n + 1); // no extra turn for it
      expect(model.requests.flatMap((r) => r.messages).some((m) => String(m.content).includes('drop this'))).toBe(
        false,
      );
    });
  });

  it('a reload mid-run resumes the stream with Last-Event-ID: no text twice, none missing', async () => {
    const page = await openPage();
    await withScreenshot(page, 'reload', async () => {
      const n = model.requests.length;
      model.enqueue({ chunks: ['one ', 'two '], held: 'three' });
      await send(page, 'count');
      await poll(() => answers(page)).toEqual(['one two ']);
      const attach = page.waitForRequest((r) => r.url().includes('/events?'));
      await page.reload();
      const request = await attach;
      expect(request.headers()['last-event-id']).toMatch(/^\d+(:\d+)?$/);
      await poll(() => answers(page)).toEqual(['one two ']); // restored, and the run still works
      await page.getByRole('button', { name: 'Stop', exact: true }).waitFor();
      model.release(n);
      await poll(() => outcomes(page)).toEqual(['Done.']);
      expect(await answers(page)).toEqual(['one two three']);
      expect(await page.locator('[data-entry="user"] .text').allInnerTexts()).toEqual(['count']);
    });
  });

  it("two browsers are two principals: neither sees nor cancels the other one's run", async () => {
    const alice = await openPage();
    const bob = await openPage();
    await withScreenshot(alice, 'principals', async () => {
      const n = model.requests.length;
      model.enqueue({ chunks: ['Alice’s'], held: ' answer.' });
      await send(alice, 'mine');
      await poll(() => answers(alice)).toEqual(['Alice’s']);
      const { threadId, runId } = await savedRun(alice);
      const statuses = await bob.evaluate(
        async ([runId, thread]) => {
          const path = `/api/runs/${encodeURIComponent(runId)}`;
          const post = { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' };
          return [
            (await fetch(`${path}/events?threadId=${thread}`)).status,
            (await fetch(`${path}/cancel`, post)).status,
            (await fetch(`${path}/steering`, { ...post, body: '{"text":"x"}' })).status,
          ];
        },
        [runId, threadId] as const,
      );
      expect(statuses).toEqual([404, 404, 404]);
      expect(await answers(bob)).toEqual([]);
      model.release(n);
      await poll(() => outcomes(alice)).toEqual(['Done.']);
      expect(await answers(alice)).toEqual(['Alice’s answer.']);
    });
  });

  it('Stop after this step: the step finishes (its tool call too), the run ends stopped, no further request', async () => {
    const page = await openPage();
    await withScreenshot(page, 'stop-after-step', async () => {
      const n = model.requests.length;
      const call = { id: 'call_step', name: 'read_file', args: { path: 'notes.md' } };
      model.enqueue({ chunks: ['Step one'], toolCalls: [call], held: ' done.' });
      await send(page, 'two steps');
      await poll(() => answers(page)).toEqual(['Step one']);
      await page.getByRole('button', { name: 'Stop after this step' }).click();
      await poll(() => page.locator('[data-entry="note"]').allInnerTexts()).toContain('Stopping after this step…');
      expect(await page.getByRole('button', { name: 'Stop after this step' }).isEnabled()).toBe(false);
      model.release(n);
      await poll(() => outcomes(page)).toEqual(['Stopped after its step, as you asked.']);
      const card = page.getByRole('article', { name: 'Tool call read_file' });
      expect(await card.locator('.tool-status').innerText()).toBe('done');
      expect(model.requests).toHaveLength(n + 1); // no request after the step
    });
  });
});

describe('loopctl serve refuses', () => {
  it('a browser without the token (401)', async () => {
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    const response = await page.goto(`${origin}/`);
    expect(response!.status()).toBe(401);
    expect((await page.locator('body').innerText()).trimEnd()).toBe(
      'loopctl serve: open the address loopctl serve printed (it carries the token)',
    );
  });

  it("a page of another origin posting with the user's cookies (403), and nothing runs", async () => {
    const page = await openPage(); // this browser has the cookies
    const evil: Server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<!doctype html><title>elsewhere</title>');
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      await withScreenshot(page, 'foreign-origin', async () => {
        await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
        const n = model.requests.length;
        const refused = page.waitForResponse((r) => r.url().startsWith(`${origin}/api/`));
        await page.evaluate(async (url) => {
          const body = JSON.stringify({
            threadId: 't',
            runId: 'r',
            messages: [{ id: 'u', role: 'user', content: 'rm -rf' }],
            tools: [],
            context: [],
            state: {},
            forwardedProps: {},
          });
          await fetch(url, {
            method: 'POST',
            mode: 'no-cors',
            credentials: 'include',
            body,
            headers: { 'Content-Type': 'text/plain' },
          });
        }, `${origin}/api/agents/loopctl/runs`);
        expect((await refused).status()).toBe(403);
        expect(model.requests.length).toBe(n);
      });
    } finally {
      await new Promise((resolve) => evil.close(resolve));
    }
  });

  it('a name other than 127.0.0.1 or localhost in Host, even with the token (403: DNS rebinding)', async () => {
    const rebound = await launchChromium(['--host-resolver-rules=MAP rebound.test 127.0.0.1']);
    try {
      const page = await rebound.newPage();
      const response = await page.goto(address.replace('127.0.0.1', 'rebound.test'));
      expect(response!.status()).toBe(403);
      expect((await page.locator('body').innerText()).trimEnd()).toBe(
        `loopctl serve: Host "rebound.test:${port}" is not 127.0.0.1:${port} or localhost:${port}`,
      );
    } finally {
      await rebound.close();
    }
  });
});

describe('loopctl serve as a process', () => {
  it('a port in use exits 2 naming the port', async () => {
    const second = spawn(process.execPath, [BIN, 'serve', '--port', String(port)], {
      env: cliEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    second.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    const code = await new Promise<number | null>((resolve) => second.on('close', resolve));
    expect([code, err]).toEqual([2, `loopctl: port ${port} on 127.0.0.1 is in use; choose another with --port\n`]);
  });

  it('Ctrl-C cancels the live run (shown with reason SIGINT), closes its model request, exits 130', async () => {
    const page = await openPage();
    await withScreenshot(page, 'sigint', async () => {
      const n = model.requests.length;
      model.enqueue({ chunks: ['Until'], held: ' NEVER' });
      await send(page, 'keep going');
      await poll(() => answers(page)).toEqual(['Until']);
      const exited = new Promise<number | null>((resolve) => serve.on('close', resolve));
      serve.kill('SIGINT');
      await poll(() => outcomes(page)).toEqual([
        'Stopped. The server was stopped (Ctrl-C) while the model was answering.',
      ]);
      expect(await exited).toBe(130);
      expect(serveIo.stderr).toContain('[loopctl serve] SIGINT: cancelling the live runs, closing the server\n');
      await model.requests[n]!.done;
      expect([model.requests[n]!.closedEarlyAt !== undefined, model.requests[n]!.heldSent]).toEqual([true, false]);
    });
  });
});
