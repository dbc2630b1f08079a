/**
 * loopctl/gemini against the bare `@google/genai` SDK on the same local Gemini-shaped server (bench/gemini-server.ts,
 * a child process), in the same process and the same rounds:
 *
 * 1. CPU per streamed chunk: a BENCH_CHUNKS-chunk (default 10 000) `streamGenerateContent` stream consumed by
 *    - `sdk`: the bare SDK (`models.generateContentStream`, iterated, each chunk's text appended, as an app would);
 *    - `adapter`: `gemini().call()` subscribed directly (SDK + loopctl adapter);
 *    - `run`: `run()` of an agent on `gemini()` (SDK + adapter + engine).
 *    Server modes `stream` (frames written in one go) and `paced` (one frame per server loop turn). BENCH_ROUNDS
 *    rounds (default 7, after 2 warm-up rounds) of BENCH_REPEATS (default 3) interleaved requests per variant; a round
 *    keeps each variant's least CPU (contention only adds); ratios are medians of per-round ratios.
 * 2. Cancel → terminal on a stream that has delivered 3 chunks (BENCH_RUNS runs per variant, default 300):
 *    - `sdk`: the time `controller.abort()` of the SDK request's `abortSignal` takes (the SDK's loop learns of it
 *      later, asynchronously: also shown, as "→ loop settles");
 *    - `adapter`: the time `unsubscribe()` takes (the fetch abort is inside it);
 *    - `run`: `cancel()` until `run_cancelled` is delivered (always before `cancel()` returns; checked).
 */
import { GoogleGenAI } from '@google/genai';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ModelProvider } from '../src/index.js';
import type * as GeminiEntry from '../src/model/gemini/index.js';
import { startChildServer } from './lib/child-server.js';
import { LIB_LABEL, lib, loadEntry } from './lib/loopctl.js';
import { cpuSince, fmt, loadAverage, median, medianRange, printTable, quantile, tick } from './lib/stats.js';

const { gemini } = (await loadEntry('model/gemini/index')) as typeof GeminiEntry;
const { CancelSignal } = lib;

const CHUNKS = Number(process.env['BENCH_CHUNKS'] ?? 10_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7);
const REPEATS = Number(process.env['BENCH_REPEATS'] ?? 3);
const RUNS = Number(process.env['BENCH_RUNS'] ?? 300);
const WARMUP = 2;
const HELD = 3;

type Variant = 'sdk' | 'adapter' | 'run';
const VARIANTS: readonly Variant[] = ['sdk', 'adapter', 'run'];
const here = path.dirname(fileURLToPath(import.meta.url));
const REQUEST = { instructions: '', items: [{ type: 'user' as const, id: 'u', text: 'hi' }], tools: [], stream: true };

export async function main(): Promise<void> {
  const server = await startChildServer(path.join(here, 'gemini-server.ts'));
  const baseUrl = server.baseURL.replace(/\/v1$/, '');
  const client = new GoogleGenAI({ apiKey: 'k', httpOptions: { baseUrl } });
  const providers = new Map<string, ModelProvider>();
  const provider = (model: string) => {
    let p = providers.get(model);
    if (!p) providers.set(model, (p = gemini({ model, apiKey: 'k', baseURL: baseUrl })));
    return p;
  };
  const sdkStream = (model: string, signal: AbortSignal) =>
    client.models.generateContentStream({
      model,
      contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
      config: { abortSignal: signal, automaticContinuation: false },
    });

  const consume: Record<Variant, (model: string) => Promise<number>> = {
    async sdk(model) {
      let _text = ''; // the answer, built as an app would (the work counts; the text is not read)
      let n = 0;
      for await (const chunk of await sdkStream(model, new AbortController().signal)) {
        const text = chunk.candidates?.[0]?.content?.parts?.[0]?.text;
        if (text) {
          _text += text;
          n++;
        }
      }
      return n;
    },
    adapter(model) {
      return new Promise((resolve, reject) => {
        let n = 0;
        provider(model)
          .call(REQUEST)
          .subscribe({ next: (e) => void (e.type === 'text_delta' && n++), error: reject, complete: () => resolve(n) });
      });
    },
    run(model) {
      const agent = lib.defineAgent({ name: 'bench', instructions: '', model: provider(model) });
      return new Promise((resolve, reject) => {
        let n = 0;
        lib.run(agent, 'hi').subscribe({
          next: (e) => {
            if (e.type === 'text_delta') n++;
            else if (e.type === 'run_failed') reject(new Error(e.error.message));
          },
          complete: () => resolve(n),
        });
      });
    },
  };

  for (const mode of ['stream', 'paced']) {
    const model = `${mode}-${CHUNKS}`;
    const cpu = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const ratios = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const loads: string[] = [];
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]!);
      const perChunk = new Map<Variant, number>();
      if (round >= WARMUP) loads.push(await loadAverage());
      for (let r = 0; r < REPEATS; r++) {
        for (const variant of order) {
          const c0 = process.cpuUsage();
          const n = await consume[variant](model);
          const us = cpuSince(c0) / CHUNKS;
          if (n !== CHUNKS) throw new Error(`${variant}: saw ${n} deltas, expected ${CHUNKS}`);
          if (us < (perChunk.get(variant) ?? Infinity)) perChunk.set(variant, us);
        }
      }
      if (round < WARMUP) continue;
      for (const v of VARIANTS) {
        cpu.get(v)!.push(perChunk.get(v)!);
        ratios.get(v)!.push(perChunk.get(v)! / perChunk.get('sdk')!);
      }
    }
    const rows: string[][] = [['consumer', 'CPU µs/chunk p50 (min–max)', '× bare SDK: median of rounds (min–max)']];
    for (const v of VARIANTS) {
      rows.push([v, medianRange(cpu.get(v)!, 2), v === 'sdk' ? '1.00' : medianRange(ratios.get(v)!, 3)]);
    }
    printTable(
      `Gemini streaming, server mode "${mode}": ${CHUNKS} chunks, ${ROUNDS} rounds (+${WARMUP} warm-up) of ` +
        `${REPEATS} interleaved requests per variant, CPU of this process — ${LIB_LABEL}; ` +
        `load average per round: ${loads.join(' | ')}`,
      rows,
    );
    const sdk = median(cpu.get('sdk')!);
    const adapter = median(cpu.get('adapter')!);
    console.log(
      `breakdown (p50): SDK ${fmt(sdk, 2)} µs, adapter +${fmt(adapter - sdk, 2)} µs, ` +
        `engine +${fmt(median(cpu.get('run')!) - adapter, 2)} µs per chunk`,
    );
  }

  // 2. cancel → terminal on a held stream (3 chunks delivered, then silence)
  const held = `hold-${HELD}`;
  const cancelUs = new Map<string, number[]>([
    ['sdk', []],
    ['sdk settles', []],
    ['adapter', []],
    ['run', []],
  ]);
  let late = 0;
  for (let i = 0; i < RUNS; i++) {
    for (const variant of VARIANTS) {
      if (variant === 'sdk') {
        const controller = new AbortController();
        const stream = await sdkStream(held, controller.signal);
        let n = 0;
        let settle!: () => void;
        const settled = new Promise<void>((resolve) => (settle = resolve));
        let reached!: () => void;
        const atHeld = new Promise<void>((resolve) => (reached = resolve));
        void (async () => {
          try {
            for await (const _chunk of stream) if (++n === HELD) reached();
          } catch {
            /* the abort */
          }
          settle();
        })();
        await atHeld;
        const t0 = performance.now();
        controller.abort();
        const t1 = performance.now();
        await settled;
        cancelUs.get('sdk')!.push((t1 - t0) * 1000);
        cancelUs.get('sdk settles')!.push((performance.now() - t0) * 1000);
      } else if (variant === 'adapter') {
        let n = 0;
        let reached!: () => void;
        const atHeld = new Promise<void>((resolve) => (reached = resolve));
        const sub = provider(held)
          .call(REQUEST)
          .subscribe((e) => void (e.type === 'text_delta' && ++n === HELD && reached()));
        await atHeld;
        const t0 = performance.now();
        sub.unsubscribe();
        cancelUs.get('adapter')!.push((performance.now() - t0) * 1000);
      } else {
        const agent = lib.defineAgent({ name: 'bench', instructions: '', model: provider(held) });
        const cancel = new CancelSignal();
        let n = 0;
        let reached!: () => void;
        const atHeld = new Promise<void>((resolve) => (reached = resolve));
        let terminalAt: number | undefined;
        lib.run(agent, 'hi', { cancel }).subscribe((e) => {
          if (e.type === 'text_delta' && ++n === HELD) reached();
          if (e.type === 'run_cancelled') terminalAt = performance.now();
        });
        await atHeld;
        const t0 = performance.now();
        cancel.cancel('bench');
        if (terminalAt === undefined) late++;
        cancelUs.get('run')!.push(((terminalAt ?? performance.now()) - t0) * 1000);
      }
      await tick();
    }
  }
  const rows: string[][] = [['what is timed', 'p50 µs', 'p99 µs', 'max µs']];
  const label: Record<string, string> = {
    sdk: 'bare SDK: controller.abort() (sync)',
    'sdk settles': 'bare SDK: abort() → its for-await loop settles (async)',
    adapter: 'adapter: unsubscribe() (sync, fetch abort inside)',
    run: 'run(): cancel() → run_cancelled delivered (sync)',
  };
  for (const [key, values] of cancelUs) {
    rows.push([
      label[key]!,
      fmt(quantile(values, 0.5), 0),
      fmt(quantile(values, 0.99), 0),
      fmt(Math.max(...values), 0),
    ]);
  }
  printTable(
    `Gemini cancel → terminal on a held stream (${HELD} chunks delivered), ${RUNS} runs per variant, interleaved; ` +
      `run_cancelled after cancel() returned: ${late} of ${RUNS}`,
    rows,
  );
  await server.close();
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
