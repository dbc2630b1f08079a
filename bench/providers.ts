/**
 * The native adapters against their own bare SDKs (issue 28, item 7), on the same child-process server
 * (bench/server.ts, which speaks each provider's format), in the same process and the same rounds:
 *
 * 1. CPU per streamed chunk: a BENCH_CHUNKS-chunk (default 10 000) text stream consumed by
 *    - `sdk`: the bare SDK (Anthropic: `messages.create({ stream: true })`, iterated, text appended);
 *    - `adapter`: the loopctl adapter's `call()` subscribed directly (SDK + adapter);
 *    - `run`: `run()` of an agent on the adapter (SDK + adapter + engine).
 *    Server modes `stream` (frames in one go) and `paced` (one frame per server loop turn). As bench/stream.ts:
 *    BENCH_REPEATS interleaved requests per variant per round (each keeps its least CPU), ratios per round.
 * 2. Cancel → terminal: a stream that sent its first deltas and went silent (`hold:2`). `sdk`: `abort()` on the
 *    bare SDK's request → its `for await` loop ends; `run`: `cancel()` → `run_cancelled` reaches the subscriber
 *    (and whether it did before `cancel()` returned). BENCH_CANCELS runs per round (default 200).
 *
 * BENCH_ROUNDS rounds (default 7) after 2 warm-up rounds. Gemini has its own benchmark (`npm run bench -- gemini`,
 * bench/gemini.ts): its SDK is measured there against the same kind of local server.
 */
import Anthropic from '@anthropic-ai/sdk';
import { setImmediate as tick } from 'node:timers/promises';
import type * as AnthropicEntry from '../src/anthropic/index.js';
import type { ModelProvider } from '../src/index.js';
import { startChildServer } from './lib/child-server.js';
import { LIB_LABEL, lib, loadEntry } from './lib/loopctl.js';
import { cpuSince, fmt, loadAverage, median, medianRange, printTable, quantile } from './lib/stats.js';

const CHUNKS = Number(process.env['BENCH_CHUNKS'] ?? 10_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7);
const REPEATS = Number(process.env['BENCH_REPEATS'] ?? 3);
const CANCELS = Number(process.env['BENCH_CANCELS'] ?? 200);
const WARMUP = 2;

/** One provider family: its bare SDK's two measured uses, and its adapter. */
interface Family {
  readonly name: string;
  /** Streams `model` with the bare SDK; resolves with the text deltas seen. */
  sdkStream(model: string): Promise<number>;
  /** Starts a bare SDK stream of `model`; `reached` resolves at its first text; `abort()` then ends it. */
  sdkHold(model: string): { reached: Promise<void>; abort(): void; settled: Promise<void> };
  adapter(model: string): ModelProvider;
}

async function anthropicFamily(baseURL: string): Promise<Family> {
  const entry = (await loadEntry('anthropic/index')) as typeof AnthropicEntry;
  const client = new Anthropic({ baseURL, apiKey: 'k', maxRetries: 0, logLevel: 'off' });
  const adapters = new Map<string, ModelProvider>();
  const body = (model: string) => ({
    model,
    max_tokens: 4096,
    messages: [{ role: 'user' as const, content: 'hi' }],
    stream: true as const,
  });
  return {
    name: 'anthropic',
    async sdkStream(model) {
      const stream = await client.messages.create(body(model), {
        signal: new AbortController().signal,
        maxRetries: 0,
        timeout: 600_000,
      });
      let _text = ''; // the answer, built as an app would (the work counts; the text is not read)
      let n = 0;
      for await (const event of stream) {
        if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
          _text += event.delta.text;
          n++;
        }
      }
      return n;
    },
    sdkHold(model) {
      const controller = new AbortController();
      let reach!: () => void;
      const reached = new Promise<void>((resolve) => (reach = resolve));
      const settled = (async () => {
        try {
          const options = { signal: controller.signal, maxRetries: 0, timeout: 600_000 };
          const stream = await client.messages.create(body(model), options);
          for await (const event of stream) if (event.type === 'content_block_delta') reach();
        } catch {
          /* the abort */
        }
      })();
      return { reached, abort: () => controller.abort(), settled };
    },
    adapter(model) {
      let p = adapters.get(model);
      if (!p) adapters.set(model, (p = entry.anthropicMessages({ model, baseURL, apiKey: 'k' })));
      return p;
    },
  };
}

type Variant = 'sdk' | 'adapter' | 'run';
const VARIANTS: readonly Variant[] = ['sdk', 'adapter', 'run'];

function adapterStream(provider: ModelProvider): Promise<number> {
  return new Promise((resolve, reject) => {
    let n = 0;
    provider
      .call({ instructions: '', items: [{ type: 'user', id: 'u', text: 'hi' }], tools: [], stream: true })
      .subscribe({ next: (e) => void (e.type === 'text_delta' && n++), error: reject, complete: () => resolve(n) });
  });
}

function runStream(provider: ModelProvider): Promise<number> {
  const agent = lib.defineAgent({ name: 'bench', instructions: '', model: provider });
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
}

async function streaming(family: Family): Promise<void> {
  for (const mode of ['stream', 'paced']) {
    const model = `${mode}:${CHUNKS}`;
    const consume: Record<Variant, () => Promise<number>> = {
      sdk: () => family.sdkStream(model),
      adapter: () => adapterStream(family.adapter(model)),
      run: () => runStream(family.adapter(model)),
    };
    const cpu = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const ratios = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const loads: string[] = [];
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]!);
      const best = new Map<Variant, number>();
      if (round >= WARMUP) loads.push(await loadAverage());
      for (let r = 0; r < REPEATS; r++) {
        for (const variant of order) {
          const c0 = process.cpuUsage();
          const n = await consume[variant]();
          const us = cpuSince(c0) / CHUNKS;
          if (n !== CHUNKS) throw new Error(`${family.name} ${variant}: saw ${n} deltas, expected ${CHUNKS}`);
          if (us < (best.get(variant) ?? Infinity)) best.set(variant, us);
        }
      }
      if (round < WARMUP) continue;
      for (const v of VARIANTS) {
        cpu.get(v)!.push(best.get(v)!);
        ratios.get(v)!.push(best.get(v)! / best.get('sdk')!);
      }
    }
    const rows = [['consumer', 'CPU µs/chunk p50 (min–max)', '× bare SDK: median of rounds (min–max)']];
    for (const v of VARIANTS) {
      rows.push([
        `${family.name} ${v}`,
        medianRange(cpu.get(v)!, 2),
        v === 'sdk' ? '1.00' : medianRange(ratios.get(v)!, 3),
      ]);
    }
    printTable(
      `${family.name} streaming, server mode "${mode}": ${CHUNKS} chunks, ${ROUNDS} rounds (+${WARMUP} warm-up) of ` +
        `${REPEATS} interleaved requests per variant — ${LIB_LABEL}; load average per round: ${loads.join(' | ')}`,
      rows,
    );
    const sdk = median(cpu.get('sdk')!);
    const adapter = median(cpu.get('adapter')!);
    console.log(
      `breakdown (p50): SDK ${fmt(sdk, 2)} µs, adapter +${fmt(adapter - sdk, 2)} µs, ` +
        `engine +${fmt(median(cpu.get('run')!) - adapter, 2)} µs per chunk`,
    );
  }
}

/** One cancel of a run held mid-stream: µs from `cancel()` to `run_cancelled`, and whether it came first. */
async function cancelRun(provider: ModelProvider): Promise<{ us: number; sync: boolean }> {
  const cancel = new lib.CancelSignal();
  const agent = lib.defineAgent({ name: 'bench', instructions: '', model: provider });
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  let at = 0;
  let returned = false;
  let sync = false;
  const done = new Promise<void>((resolve) =>
    lib.run(agent, 'go', { cancel }).subscribe({
      next: (e) => {
        if (e.type === 'text_delta') reach();
        if (e.type === 'run_cancelled') {
          at = performance.now();
          sync = !returned;
        }
      },
      complete: resolve,
    }),
  );
  await reached;
  await tick();
  const t0 = performance.now();
  cancel.cancel('bench');
  returned = true;
  await done;
  return { us: (at - t0) * 1000, sync };
}

async function cancels(family: Family): Promise<void> {
  const p50 = { sdk: [] as number[], run: [] as number[] };
  const p99 = { sdk: [] as number[], run: [] as number[] };
  let sync = 0;
  let runs = 0;
  const provider = family.adapter('hold:2');
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    const sdk: number[] = [];
    const run: number[] = [];
    for (let i = 0; i < CANCELS; i++) {
      const held = family.sdkHold('hold:2');
      await held.reached;
      await tick();
      const t0 = performance.now();
      held.abort();
      await held.settled;
      sdk.push((performance.now() - t0) * 1000);
      const r = await cancelRun(provider);
      run.push(r.us);
      if (round >= WARMUP) {
        runs++;
        if (r.sync) sync++;
      }
    }
    if (round < WARMUP) continue;
    p50.sdk.push(quantile(sdk, 0.5));
    p50.run.push(quantile(run, 0.5));
    p99.sdk.push(quantile(sdk, 0.99));
    p99.run.push(quantile(run, 0.99));
  }
  printTable(
    `${family.name} cancel mid-stream (hold:2) → terminal, µs: ${CANCELS} runs per round, ${ROUNDS} rounds ` +
      `(+${WARMUP} warm-up); median of the rounds (min–max) — ${LIB_LABEL}`,
    [
      ['what', 'p50 µs', 'p99 µs', 'terminal before cancel() returned'],
      [`${family.name} sdk: abort() → stream loop ends`, medianRange(p50.sdk, 0), medianRange(p99.sdk, 0), '—'],
      [
        `${family.name} run: cancel() → run_cancelled`,
        medianRange(p50.run, 0),
        medianRange(p99.run, 0),
        `${sync} / ${runs}`,
      ],
    ],
  );
}

export async function main(): Promise<void> {
  const server = await startChildServer();
  const families = [await anthropicFamily(server.baseURL.replace(/\/v1$/, ''))];
  for (const family of families) {
    await streaming(family);
    await cancels(family);
  }
  await server.close();
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
