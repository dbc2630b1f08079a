/**
 * Click-to-close latency (issue 20): the web app in Chromium against `loopctl serve` (the measured build, the
 * web app of dist/web) talking to a local model server that streams one chunk and holds the next until the
 * socket closes. Per round the page sends a task; once its first text shows, Stop is clicked, and:
 *  - click → model request closed: from just before Playwright sends the mouse press and release at the
 *    button (so it includes their DevTools round trips) to the model server's `close` of that response, both
 *    on this process's clock: what a user's Stop costs until the provider's request is gone;
 *  - click → cancel answered: page clock, from the click event to the cancel request's answer, which the
 *    server sends once the run's `run_cancelled` was emitted;
 *  - click → "cancelled" shown: page clock, from the click event to the outcome line in the page.
 * BENCH_CLICKS rounds (default 30) after 3 warm-up rounds; quantiles in ms. Needs /usr/bin/chromium.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { launchChromium } from '../test/services/support/browser.js';
import { startHeldModel } from '../test/services/support/held-model.js';
import { BUILD_DIR, repoRoot } from './lib/loopctl.js';
import { fmt, printTable, quantile } from './lib/stats.js';

const ROUNDS = Number(process.env['BENCH_CLICKS'] ?? 30);
const WARMUP = 3;

/** Page-side probes: when Stop was clicked, when the cancel request was answered, when "cancelled" showed. */
const PROBES = `
  window.__clicks = [];
  document.addEventListener('click', (e) => {
    const stop = e.target instanceof HTMLElement && e.target.matches('button.stop');
    if (stop) window.__clicks.push({ click: performance.now() });
  }, true);
  const fetch0 = window.fetch;
  window.fetch = async (...args) => {
    const answer = await fetch0(...args);
    const last = window.__clicks.at(-1);
    if (String(args[0]).endsWith('/cancel') && last) last.answered = performance.now();
    return answer;
  };
  new MutationObserver(() => {
    const last = window.__clicks.at(-1);
    if (!last || last.shown !== undefined) return;
    if (document.querySelector('[data-outcome="cancelled"]')) last.shown = performance.now();
  }).observe(document, { subtree: true, childList: true });
`;

/** Starts the measured `loopctl serve`; resolves with the printed address. */
async function serve(baseURL: string): Promise<{ child: ChildProcess; address: string }> {
  const fromSource = process.env['BENCH_LIB'] === 'src';
  const bin = fromSource
    ? ['--import', 'tsx', path.join(repoRoot, 'src/cli/main.ts')]
    : [path.join(BUILD_DIR, 'cli/main.js')];
  const args = [...bin, 'serve', '--port', '0', '--base-url', baseURL, '--api-key', 'bench', '--model', 'bench'];
  const child = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  while (!/\?token=\S+/.test(out)) {
    if (child.exitCode !== null) throw new Error(`loopctl serve exited ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { child, address: /http:\/\/\S+/.exec(out)![0] };
}

export async function clickToClose(): Promise<void> {
  if (!existsSync(path.join(repoRoot, 'dist/web/index.html'))) {
    const vite = spawnSync(process.execPath, [path.join(repoRoot, 'node_modules/vite/bin/vite.js'), 'build'], {
      cwd: repoRoot,
      stdio: 'inherit',
    });
    if (vite.status !== 0) throw new Error('vite build failed');
  }
  const model = await startHeldModel();
  const { child, address } = await serve(model.baseURL);
  const browser = await launchChromium();
  try {
    const page: Page = await browser.newPage();
    await page.addInitScript(PROBES);
    await page.goto(address);
    const closed: number[] = [];
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      const n = model.requests.length;
      model.enqueue({ chunks: ['First words'], held: ' never sent' });
      await page.getByRole('button', { name: 'New chat' }).click();
      await page.getByLabel('Message').fill(`task ${round}`);
      await page.getByLabel('Message').press('Enter');
      await page.locator('[data-entry="answer"] .text', { hasText: 'First words' }).waitFor();
      const request = await model.request(n);
      // Where Stop is, found first: the timed click is one mouse press and release at that point.
      const box = (await page.getByRole('button', { name: 'Stop', exact: true }).boundingBox())!;
      const t0 = performance.now();
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      await request.done;
      await page.locator('[data-outcome="cancelled"]').waitFor();
      if (request.heldSent || request.closedEarlyAt === undefined) throw new Error(`round ${round}: not closed`);
      if (round >= WARMUP) closed.push(request.closedEarlyAt - t0);
    }
    type Probe = { click: number; answered?: number; shown?: number };
    const probes = ((await page.evaluate('window.__clicks')) as Probe[]).slice(WARMUP);
    const answered = probes.map((p) => (p.answered ?? NaN) - p.click);
    const shown = probes.map((p) => (p.shown ?? NaN) - p.click);
    const row = (what: string, xs: number[]) => [
      what,
      ...[0.5, 0.9, 1].map((q) => fmt(quantile(xs, q), 1)),
      fmt(Math.min(...xs), 1),
    ];
    printTable(`click-to-close latency in Chromium, ${ROUNDS} rounds (ms)`, [
      ['from the Stop click to', 'p50', 'p90', 'max', 'min'],
      row('the model request closed (Node clock)', closed),
      row('the cancel answered (page clock)', answered),
      row('"cancelled" shown (page clock)', shown),
    ]);
  } finally {
    await browser.close();
    child.kill('SIGINT');
    await new Promise((resolve) => child.once('close', resolve));
    await model.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await clickToClose();
