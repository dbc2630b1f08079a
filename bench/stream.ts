/**
 * Streaming cost per chunk (issue 11, bench 2): a 20 000-chunk Chat
 * Completions stream served by the child-process server, consumed by
 *  - `sdk`: the bare `openai` SDK (`chat.completions.create({ stream: true })`, iterated, text appended);
 *  - `adapter`: `openaiChat().call()` subscribed directly (SDK + loopctl adapter);
 *  - `run`: `run()` of an agent on `openaiChat` (SDK + adapter + engine);
 *  - `fetch`: a minimal fetch + SSE line reader + `JSON.parse` (what the transport alone costs);
 *  - `engine`: `run()` on a synthetic provider that emits the same number of
 *    text deltas synchronously (no I/O, no SDK): the engine's own cost per event.
 * Same server, same process, variants alternated (order rotated each round).
 * Measures `process.cpuUsage()` of this process (user + system) per request
 * / chunks: µs CPU per chunk. Ratios are medians of per-round ratios.
 *
 * Server modes: `stream` (every frame its own write in one go: the client
 * reads them in large batches) and `paced` (one frame per server loop turn:
 * small reads, closer to a live model).
 */
import OpenAI from 'openai';
import { Observable } from 'rxjs';
import type { ModelEvent, ModelProvider } from '../src/index.js';
import { startChildServer } from './lib/child-server.js';
import { LIB_LABEL, lib } from './lib/loopctl.js';
import { cpuSince, fmt, median, printTable } from './lib/stats.js';

const { defineAgent, openaiChat, run } = lib;

const CHUNKS = Number(process.env['BENCH_CHUNKS'] ?? 20_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7);
const WARMUP = 2;

type Variant = 'fetch' | 'sdk' | 'adapter' | 'run' | 'engine';
const VARIANTS: readonly Variant[] = ['sdk', 'adapter', 'run', 'fetch', 'engine'];

/** A provider that emits `n` text deltas synchronously, then its response. */
const synthetic = (n: number): ModelProvider => ({
  id: 'synthetic',
  stream: true,
  call: () =>
    new Observable<ModelEvent>((subscriber) => {
      for (let i = 0; i < n && !subscriber.closed; i++) subscriber.next({ type: 'text_delta', delta: ' word' });
      subscriber.next({ type: 'response', response: { text: 'x', toolCalls: [], finishReason: 'stop' } });
      subscriber.complete();
    }),
});

export async function main(): Promise<void> {
  const server = await startChildServer();
  const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 });
  const providers = new Map<string, ModelProvider>();
  const provider = (model: string) => {
    let p = providers.get(model);
    if (!p) providers.set(model, (p = openaiChat({ model, baseURL: server.baseURL, apiKey: 'k' })));
    return p;
  };

  /** One consumption of the stream; resolves with the text deltas it saw. */
  const consume: Record<Variant, (model: string, direct?: ModelProvider) => Promise<number>> = {
    async fetch(model) {
      const res = await fetch(`${server.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], stream: true }),
      });
      const decoder = new TextDecoder();
      let buffer = '';
      let n = 0;
      let text = '';
      const reader = res.body!.getReader();
      for (let r = await reader.read(); !r.done; r = await reader.read()) {
        buffer += decoder.decode(r.value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame.startsWith('data: ') ? frame.slice(6) : '';
          if (data === '' || data === '[DONE]') continue;
          const chunk = JSON.parse(data) as { choices: { delta?: { content?: string } }[] };
          const delta = chunk.choices[0]?.delta?.content;
          if (delta) (text += delta), n++;
        }
      }
      return n;
    },
    async sdk(model) {
      const stream = await client.chat.completions.create(
        { model, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } },
        { signal: new AbortController().signal, maxRetries: 0, timeout: 600_000 },
      );
      let text = '';
      let n = 0;
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta?.content;
        if (delta) (text += delta), n++;
      }
      return n;
    },
    adapter(model) {
      return new Promise((resolve, reject) => {
        let n = 0;
        provider(model)
          .call({ instructions: '', items: [{ type: 'user', id: 'u', text: 'hi' }], tools: [], stream: true })
          .subscribe({ next: (e) => void (e.type === 'text_delta' && n++), error: reject, complete: () => resolve(n) });
      });
    },
    engine: () => consume.run('', synthetic(CHUNKS)),
    run(model, direct?: ModelProvider) {
      const agent = defineAgent({ name: 'bench', instructions: '', model: direct ?? provider(model) });
      return new Promise((resolve, reject) => {
        let n = 0;
        run(agent, 'hi').subscribe({
          next: (e) => {
            if (e.type === 'text_delta') n++;
            else if (e.type === 'run_failed') reject(new Error(e.error.message));
          },
          complete: () => resolve(n),
        });
      });
    },
  };

  const modes = [
    { mode: 'stream', rounds: ROUNDS },
    { mode: 'paced', rounds: Math.max(3, Math.ceil(ROUNDS / 2)) },
  ];
  for (const { mode, rounds } of modes) {
    const model = `${mode}:${CHUNKS}`;
    const cpu = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const wall = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const ratios = { adapter: [] as number[], run: [] as number[], fetch: [] as number[], engine: [] as number[] };
    for (let round = 0; round < WARMUP + rounds; round++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]!);
      const perChunk = new Map<Variant, number>();
      for (const variant of order) {
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const n = await consume[variant](model);
        const us = cpuSince(c0) / CHUNKS;
        const ms = performance.now() - t0;
        if (n !== CHUNKS) throw new Error(`${variant}: saw ${n} deltas, expected ${CHUNKS}`);
        if (round < WARMUP) continue;
        perChunk.set(variant, us);
        cpu.get(variant)!.push(us);
        wall.get(variant)!.push(ms);
      }
      if (round < WARMUP) continue;
      const sdk = perChunk.get('sdk')!;
      ratios.adapter.push(perChunk.get('adapter')! / sdk);
      ratios.run.push(perChunk.get('run')! / sdk);
      ratios.fetch.push(perChunk.get('fetch')! / sdk);
      ratios.engine.push(perChunk.get('engine')! / sdk);
    }
    const rows: string[][] = [['consumer', 'CPU µs/chunk p50', 'min', 'max', 'wall ms p50', '× bare SDK (p50 of rounds)']];
    for (const v of VARIANTS) {
      const xs = cpu.get(v)!;
      rows.push([v, fmt(median(xs), 2), fmt(Math.min(...xs), 2), fmt(Math.max(...xs), 2), fmt(median(wall.get(v)!), 0), v === 'sdk' ? '1.00' : fmt(median(ratios[v as Exclude<Variant, 'sdk'>]), 3)]);
    }
    printTable(`streaming, server mode "${mode}": ${CHUNKS} chunks, ${rounds} rounds (+${WARMUP} warm-up), CPU of this process — ${LIB_LABEL}`, rows);
    const sdk = median(cpu.get('sdk')!);
    const adapter = median(cpu.get('adapter')!);
    const runUs = median(cpu.get('run')!);
    console.log(`breakdown (p50): SDK ${fmt(sdk, 2)} µs, adapter +${fmt(adapter - sdk, 2)} µs, engine +${fmt(runUs - adapter, 2)} µs per chunk (engine alone, no I/O: ${fmt(median(cpu.get('engine')!), 2)} µs per event); run/SDK ${fmt(median(ratios.run), 3)}× (target ≤ 1.2×)`);
  }
  await server.close();
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
