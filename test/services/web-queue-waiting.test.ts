/**
 * `loopctl serve --queue` (the built bin) through a TCP proxy in front of Redis that the spec cuts and restores,
 * and the page in Chromium. With NO worker running: a run no worker has taken shows "Waiting for a worker…" with
 * a working Stop, also after a reload (its event stream answers at once with `Loopctl-Run-State: waiting`); Stop
 * removes its job and the run ends cancelled at once, in words. A Redis outage while serving shows "The queue is
 * unavailable (…)" on the page (with a run or not) and as a 503 in words on HTTP within a few seconds, and the
 * pages recover when Redis is back. A worker SIGKILLed mid-run: Stop ends its run worker_lost within the worker's
 * lock, said in words. serve's first Ctrl-C exits promptly while Redis does not answer. Prints the figures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliEnv, ensureBuilt, removeTempFolders, tempFolder, waitFor } from '../cli-helpers.js';
import { launchChromium, withScreenshot } from './support/browser.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';

const QUEUE = `webwait${process.pid}`;
const WORKER = fileURLToPath(new URL('./support/web-queue-worker.ts', import.meta.url));
const TSX = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
/** The worker's lock: its heartbeat lives this long, so a Stop of its run answers within it once it is killed. */
const LOCK_MS = 4000;
let proxy: TcpProxy;
let serve: ChildProcess;
let exited: Promise<number | null>;
const io = { out: '', err: '' };
let address: string;
let origin: string;
let cookie: string;
let browser: Browser;
const redis = new Redis('redis://127.0.0.1:6379');

beforeAll(async () => {
  await ensureBuilt({ web: true });
  proxy = await startTcpProxy({ host: '127.0.0.1', port: 6379 });
  const url = `redis://127.0.0.1:${proxy.port}/0?queue=${QUEUE}`;
  const folder = tempFolder({ 'notes.md': '# notes\n' });
  serve = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--queue', url], {
    cwd: folder,
    env: cliEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  serve.stdout!.setEncoding('utf8').on('data', (d: string) => (io.out += d));
  serve.stderr!.setEncoding('utf8').on('data', (d: string) => (io.err += d));
  exited = new Promise((resolve) => serve.on('exit', (code) => resolve(code)));
  address = await waitFor('the address loopctl serve prints', () => /http:\/\/\S+\?token=\S+/.exec(io.out)?.[0]);
  origin = new URL(address).origin;
  const opened = await fetch(address, { redirect: 'manual' });
  cookie = opened.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (serve && serve.exitCode === null) serve.kill('SIGKILL');
  await proxy?.close();
  const keys = await redis.keys(`loopctl:${QUEUE}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
  removeTempFolders();
});

async function openPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 900, height: 700 } });
  const page = await context.newPage();
  await page.goto(address);
  await page.getByLabel('Message').waitFor();
  return page;
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message').fill(text);
  await page.getByLabel('Message').press('Enter');
}

const poll = <T>(fn: () => Promise<T> | T, timeout = 10_000) => expect.poll(fn, { timeout, interval: 25 });
const status = (page: Page) => page.locator('.run-state').innerText();
const notice = (page: Page) => page.locator('.notice').innerText();
const outcomes = (page: Page) => page.locator('[data-entry="outcome"]').allInnerTexts();
const stopButton = (page: Page) => page.getByRole('button', { name: 'Stop', exact: true });
const stopAfterStep = (page: Page) => page.getByRole('button', { name: 'Stop after this step' });
/** The run id of the page's live run (saved with the page's state). */
const liveRunId = (page: Page) =>
  page.evaluate(() => {
    for (let i = 0; i < sessionStorage.length; i++) {
      const text = sessionStorage.getItem(sessionStorage.key(i)!) ?? '';
      const match = /"runId":"([0-9a-f-]{36})"/.exec(text);
      if (match) return match[1];
    }
    return undefined;
  });

const startBody = (threadId: string) =>
  JSON.stringify({
    threadId,
    runId: 'client',
    state: {},
    tools: [],
    context: [],
    forwardedProps: {},
    messages: [{ id: `m-${threadId}`, role: 'user', content: 'count the lines of notes.md' }],
  });
const post = (path: string, body: string, accept = 'application/json') =>
  fetch(`${origin}/api${path}`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json', accept },
    body,
  });

describe('serve --queue with no worker: waiting, Stop, and a queue that is not there', () => {
  it('serve names its queue, where it is, the agent, and that no worker takes runs yet; not a model of its own', () => {
    const url = `redis://127.0.0.1:${proxy.port}/0?queue=${QUEUE}`;
    expect(io.err).toContain(
      `[loopctl serve] runs go to queue "${QUEUE}" on ${url}: \`loopctl worker\` processes run them (agent ` +
        `loopctl, each with its own model, tools and folder); none is taking runs yet: start one with ` +
        `\`loopctl worker --queue ${url}\`\n`,
    );
    expect(io.err).not.toContain('offline model');
  });

  it('HTTP: a queued run answers at once with Loopctl-Run-State: waiting; cancel removes its job and ends it', async () => {
    const started = Date.now();
    const answer = await post('/agents/loopctl/runs', startBody('http-wait'), 'text/event-stream');
    const headersMs = Date.now() - started;
    expect(answer.status).toBe(200);
    expect(answer.headers.get('loopctl-run-state')).toBe('waiting');
    const runId = decodeURIComponent(answer.headers.get('loopctl-run-id')!);
    const reader = answer.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain(': waiting for a worker');
    expect(await redis.exists(`loopctl:${QUEUE}:${runId}`)).toBe(1); // BullMQ's job
    const cancelled = await post(`/runs/${runId}/cancel`, JSON.stringify({ reason: 'stopped by the user' }));
    expect(await cancelled.json()).toEqual({ cancelled: true });
    let text = first;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toContain('"type":"RUN_STARTED"');
    expect(text).toContain('"type":"RUN_FINISHED"');
    expect(await redis.exists(`loopctl:${QUEUE}:${runId}`)).toBe(0);
    expect(await redis.hget(`loopctl:${QUEUE}:lc:run:${runId}`, 'terminal')).toBe('run_cancelled');
    console.log(`[web-queue-waiting] http: waiting headers after ${headersMs} ms; terminals 1 (run_cancelled)`);
  });

  it('the page shows "Waiting for a worker…" with a working Stop; Stop ends the run cancelled at once', async () => {
    const page = await openPage();
    await withScreenshot(page, 'queue-waiting-stop', async () => {
      await send(page, 'count the lines of notes.md');
      await poll(() => status(page)).toBe('Waiting for a worker…');
      expect(await stopButton(page).isEnabled()).toBe(true);
      expect(await stopAfterStep(page).isEnabled()).toBe(false);
      const url = `redis://127.0.0.1:${proxy.port}/0?queue=${QUEUE}`;
      await poll(() => page.locator('.run-hint').innerText()).toBe(
        `No worker is taking runs from this queue: start one with loopctl worker --queue ${url}`,
      );
      await poll(() => liveRunId(page)).toMatch(/^[0-9a-f-]{36}$/);
      const runId = await liveRunId(page);
      expect(await redis.exists(`loopctl:${QUEUE}:${runId}`)).toBe(1);
      // A reload re-attaches (GET /runs/:runId/events): the run still says it waits, Stop still works.
      await page.reload();
      await poll(() => status(page)).toBe('Waiting for a worker…');
      expect(await stopButton(page).isEnabled()).toBe(true);
      const pressed = Date.now();
      await stopButton(page).click();
      await poll(() => outcomes(page)).toEqual([expect.stringContaining('Stopped.')]);
      const stoppedMs = Date.now() - pressed;
      expect((await outcomes(page))[0]).toContain('You pressed Stop');
      expect(await page.locator('.run-state').count()).toBe(0);
      // The job is removed right after the terminal is stored (which the page may show first).
      await poll(() => redis.exists(`loopctl:${QUEUE}:${runId}`)).toBe(0);
      expect(await redis.hget(`loopctl:${QUEUE}:lc:run:${runId}`, 'terminal')).toBe('run_cancelled');
      console.log(`[web-queue-waiting] page: Stop of a waiting run shown stopped after ${stoppedMs} ms; terminals 1`);
    });
  });

  it('a Redis outage shows "The queue is unavailable (…)" on the page and as a 503 in words; both recover', async () => {
    const page = await openPage();
    const idle = await openPage(); // no run: it learns of the outage from GET /api/queue
    await withScreenshot(page, 'queue-unavailable', async () => {
      await send(page, 'count the lines of notes.md');
      await poll(() => status(page)).toBe('Waiting for a worker…');
      await poll(() => liveRunId(page)).toMatch(/^[0-9a-f-]{36}$/);
      const runId = (await liveRunId(page))!;
      const cut = Date.now();
      await proxy.cut();
      await poll(() => notice(page)).toMatch(/^The queue is unavailable \(Redis at 127\.0\.0\.1:\d+: .+\)/);
      const shownMs = Date.now() - cut;
      expect(shownMs).toBeLessThan(5000);
      await poll(() => notice(idle)).toMatch(/^The queue is unavailable \(Redis at 127\.0\.0\.1:\d+: .+\)/);
      const idleMs = Date.now() - cut;
      expect(idleMs).toBeLessThan(5000);
      const queue = await fetch(`${origin}/api/queue`, { headers: { cookie } });
      expect([queue.status, ((await queue.json()) as { error: { code: string } }).error.code]).toEqual([
        503,
        'queue_unavailable',
      ]);
      // HTTP answers at once, in words.
      const asked = Date.now();
      const start = await post('/agents/loopctl/runs', startBody('during-outage'), 'text/event-stream');
      const events = await fetch(`${origin}/api/runs/${runId}/events?threadId=x`, { headers: { cookie } });
      const answeredMs = Date.now() - asked;
      const body = (await start.json()) as { error: { code: string; message: string } };
      expect([start.status, body.error.code]).toEqual([503, 'queue_unavailable']);
      expect(body.error.message).toMatch(/^The queue is unavailable \(Redis at 127\.0\.0\.1:\d+: .+\)\./);
      expect(events.status).toBe(503);
      expect(answeredMs).toBeLessThan(2000);
      // A message sent meanwhile is not started: the same words, no run going on.
      await send(idle, 'count the lines of notes.md');
      await poll(() => idle.locator('.run-state').count()).toBe(0);
      expect(await notice(idle)).toMatch(/^The queue is unavailable \(Redis at 127\.0\.0\.1:\d+: .+\)/);
      await proxy.restore();
      const back = Date.now();
      await poll(() => notice(page)).toBe('');
      await poll(() => notice(idle)).toBe('');
      const recoveredMs = Date.now() - back;
      expect(await status(page)).toBe('Waiting for a worker…');
      await stopButton(page).click();
      await poll(() => outcomes(page)).toEqual([expect.stringContaining('Stopped.')]);
      expect(await redis.hget(`loopctl:${QUEUE}:lc:run:${runId}`, 'terminal')).toBe('run_cancelled');
      console.log(
        `[web-queue-waiting] outage: page said unavailable after ${shownMs} ms (a page with no run ${idleMs} ms), ` +
          `HTTP 503 after ${answeredMs} ms, pages back ${recoveredMs} ms after Redis; terminals 1`,
      );
    });
  });

  it("Stop of a run whose worker was killed ends it worker_lost within the worker's lock, said in words", async () => {
    const settings = {
      connection: 'redis://127.0.0.1:6379',
      queue: QUEUE,
      secret: cliEnv()['LOOPCTL_QUEUE_SECRET'],
      lockDurationMs: LOCK_MS,
      stalledIntervalMs: 1000,
    };
    const worker = spawn(process.execPath, ['--import', TSX, WORKER, JSON.stringify(settings)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    worker.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    const gone = new Promise((resolve) => worker.on('exit', resolve));
    try {
      await waitFor('the worker', () => out.includes('ready '));
      const page = await openPage();
      await withScreenshot(page, 'queue-worker-lost', async () => {
        await send(page, '!hold');
        await poll(() => status(page)).toBe('Writing…');
        await poll(() => liveRunId(page)).toMatch(/^[0-9a-f-]{36}$/);
        const runId = (await liveRunId(page))!;
        worker.kill('SIGKILL');
        await gone;
        const pressed = Date.now();
        await stopButton(page).click();
        // Until the queue declares the worker lost, the page says why Stop takes a while.
        await poll(() => notice(page)).toMatch(/^Stop is waiting for the worker running this run, which has not/);
        const saidMs = Date.now() - pressed;
        await poll(() => outcomes(page), 15_000).toEqual([
          expect.stringContaining('Failed: the worker running it stopped answering.'),
        ]);
        const endedMs = Date.now() - pressed;
        await poll(() => notice(page)).toBe(''); // Stop was answered: nothing is waiting any more
        const [outcome] = await outcomes(page);
        expect(outcome).toContain('The worker running this run stopped responding');
        expect(outcome).not.toMatch(/heartbeat expired\)|WorkerLostError|[{}]/);
        expect(await redis.hget(`loopctl:${QUEUE}:lc:run:${runId}`, 'terminal')).toBe('run_failed');
        // The heartbeat's expiry (LOCK_MS after the last one stored) and the 500 ms check, with room for a loaded CI.
        expect(endedMs).toBeLessThan(LOCK_MS + 3000);
        console.log(
          `[web-queue-waiting] worker SIGKILLed: the page said Stop waits after ${saidMs} ms; ` +
            `Stop ended the run worker_lost after ${endedMs} ms ` +
            `(lock ${LOCK_MS} ms); terminals 1, lost 1`,
        );
      });
    } finally {
      if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    }
  });

  it("serve's first Ctrl-C exits promptly while Redis does not answer, a page's run waiting", async () => {
    const page = await openPage();
    await send(page, 'count the lines of notes.md');
    await poll(() => status(page)).toBe('Waiting for a worker…');
    await proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const at = Date.now();
    serve.kill('SIGINT');
    const code = await exited;
    const exitMs = Date.now() - at;
    expect(code).toBe(130);
    expect(exitMs).toBeLessThan(2000);
    console.log(`[web-queue-waiting] Ctrl-C without Redis: serve exited ${code} after ${exitMs} ms`);
  });
});
