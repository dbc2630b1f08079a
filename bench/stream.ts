/**
 * Streaming cost per chunk (issue 11, bench 2; issue 33): a 10 000-chunk stream served by the child-process
 * server, for each wire API (`chat`: Chat Completions chunks; `responses`: Responses API events), consumed by
 *  - `sdk`: the bare `openai` SDK (`chat.completions.create` / `responses.create` with `stream: true`, iterated,
 *    text appended);
 *  - `adapter`: `openaiChat().call()` / `openaiResponses().call()` subscribed directly (SDK request + loopctl adapter);
 *  - `run`: `run()` of an agent on that provider (SDK request + adapter + engine);
 *  - `fetch`: the reference floor — a minimal `fetch` + SSE split on blank lines + `JSON.parse` of each `data:`
 *    line, text appended (what the transport and the JSON alone cost; no event stream parser, no checks);
 *  - `socket`: the transport floor below any HTTP client — the same request written by hand on a raw `node:net`
 *    socket, its bytes read and dropped (no HTTP parser, no text, no JSON): what waking up for each read costs;
 *  - `engine`: `run()` on a synthetic provider that emits the same number of
 *    text deltas synchronously (no I/O, no SDK): the engine's own cost per event.
 * Same server, same process, variants alternated (order rotated each round).
 * Measures `process.cpuUsage()` of this process (user + system) per request
 * / chunks: µs CPU per chunk. Ratios are medians of per-round ratios.
 *
 * Server modes: `stream` (every frame its own write in one go: the client
 * reads them in large batches) and `paced` (one frame per server loop turn:
 * small reads, closer to a live model). BENCH_ROUNDS rounds per mode (default 7,
 * after 2 warm-up rounds); in a round every variant makes BENCH_REPEATS requests
 * (default 3), interleaved, and keeps its least CPU (contention only adds); the
 * ratio is the median of the rounds' ratios, shown with their min–max. BENCH_STREAM_APIS picks the APIs
 * (default `chat,responses`). With BENCH_BASELINE_DIR, `adapter (<name>)`, `run (<name>)` and `engine (<name>)`
 * measure the baseline build in the same rounds (`<name>`: BENCH_BASELINE_NAME, default `pre-reshape`).
 */
import { connect } from 'node:net';
import OpenAI from 'openai';
import { Observable } from 'rxjs';
import type { ModelEvent, ModelProvider } from '../src/index.js';
import { startChildServer } from './lib/child-server.js';
import { baseline, LIB_LABEL, lib, type Build } from './lib/loopctl.js';
import { cpuSince, fmt, loadAverage, median, medianRange, printTable } from './lib/stats.js';

const CHUNKS = Number(process.env['BENCH_CHUNKS'] ?? 10_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7);
/** Requests per variant per round, interleaved; the round's figure is the variant's least-disturbed one. */
const REPEATS = Number(process.env['BENCH_REPEATS'] ?? 3);
const WARMUP = 2;

type Api = 'chat' | 'responses';
const APIS = (process.env['BENCH_STREAM_APIS'] ?? 'chat,responses').split(',') as Api[];
for (const api of APIS) if (api !== 'chat' && api !== 'responses') throw new Error(`BENCH_STREAM_APIS: unknown ${api}`);

type Own = 'fetch' | 'socket' | 'sdk' | 'adapter' | 'run' | 'engine';
/** A variant: one of ours, or `<adapter|run|engine> (<baseline name>)` for the baseline build. */
type Variant = Own | `${'adapter' | 'run' | 'engine'} (${string})`;
const BASE = baseline?.name;
const VARIANTS: readonly Variant[] = [
  'sdk',
  'adapter',
  'run',
  'fetch',
  'socket',
  'engine',
  ...(BASE ? ([`adapter (${BASE})`, `run (${BASE})`, `engine (${BASE})`] as const) : []),
];
/** The targets (issue 33): run() ≤ 0.5× the bare SDK's CPU per chunk in server bursts, ≤ 0.6× paced. */
const TARGET: Record<string, number> = { stream: 0.5, paced: 0.6 };

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

const REQUEST = { instructions: '', items: [{ type: 'user' as const, id: 'u', text: 'hi' }], tools: [], stream: true };

export async function main(): Promise<void> {
  const server = await startChildServer();
  const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 });
  const sdkOptions = () => ({ signal: new AbortController().signal, maxRetries: 0 as const, timeout: 600_000 });
  const providers = new Map<string, ModelProvider>();
  /** The provider of `build` for `api` and `model` (one per combination, reused as an app would). */
  const provider = (build: Build['lib'], api: Api, model: string) => {
    const key = `${build === lib ? 'measured' : 'baseline'} ${api} ${model}`;
    let p = providers.get(key);
    if (!p) {
      const options = { model, baseURL: server.baseURL, apiKey: 'k' };
      providers.set(key, (p = api === 'chat' ? build.openaiChat(options) : build.openaiResponses(options)));
    }
    return p;
  };

  /** The floor: fetch, split frames on blank lines, `JSON.parse` each `data:` line, append the text. */
  async function floor(api: Api, model: string): Promise<number> {
    const body =
      api === 'chat'
        ? { model, messages: [{ role: 'user', content: 'hi' }], stream: true }
        : { model, input: 'hi', stream: true };
    const res = await fetch(`${server.baseURL}/${api === 'chat' ? 'chat/completions' : 'responses'}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
      body: JSON.stringify(body),
    });
    const decoder = new TextDecoder();
    let buffer = '';
    let n = 0;
    let _text = ''; // the answer, built as an app would (the work counts; the text is not read)
    const reader = res.body!.getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      buffer += decoder.decode(r.value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        // The data line: first in a Chat frame, after the `event:` line in a Responses frame.
        const at = frame.startsWith('data: ') ? 0 : frame.indexOf('\ndata: ') + 1;
        if (at === 0 && !frame.startsWith('data: ')) continue;
        const data = frame.slice(at + 6);
        if (data === '[DONE]') continue;
        let delta: string | undefined;
        if (api === 'chat') {
          delta = (JSON.parse(data) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content;
        } else {
          const event = JSON.parse(data) as { type: string; delta?: string };
          if (event.type === 'response.output_text.delta') delta = event.delta;
        }
        if (delta) {
          _text += delta;
          n++;
        }
      }
    }
    return n;
  }

  /**
   * The transport floor: the request written by hand on a fresh `node:net` socket (`connection: close`), every read
   * dropped. Resolves with CHUNKS (it parses nothing, so it cannot count deltas) once the server closes.
   */
  function socketFloor(api: Api, model: string): Promise<number> {
    const url = new URL(`${server.baseURL}/${api === 'chat' ? 'chat/completions' : 'responses'}`);
    const body = JSON.stringify(
      api === 'chat'
        ? { model, messages: [{ role: 'user', content: 'hi' }], stream: true }
        : { model, input: 'hi', stream: true },
    );
    return new Promise((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () =>
        socket.write(
          `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n` +
            `authorization: Bearer k\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        ),
      );
      let bytes = 0;
      socket.on('data', (b: Buffer) => void (bytes += b.length));
      socket.on('error', reject);
      socket.on('close', () => (bytes > 0 ? resolve(CHUNKS) : reject(new Error('socket floor: no bytes read'))));
    });
  }

  /** The bare SDK, iterated as its README shows. */
  async function sdk(api: Api, model: string): Promise<number> {
    let _text = ''; // the answer, built as an app would (the work counts; the text is not read)
    let n = 0;
    if (api === 'chat') {
      const stream = await client.chat.completions.create(
        { model, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } },
        sdkOptions(),
      );
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta?.content;
        if (delta) {
          _text += delta;
          n++;
        }
      }
    } else {
      const stream = await client.responses.create({ model, input: 'hi', stream: true }, sdkOptions());
      for await (const event of stream) {
        if (event.type === 'response.output_text.delta' && event.delta) {
          _text += event.delta;
          n++;
        }
      }
    }
    return n;
  }

  /** `call()` of the provider subscribed directly; resolves with the text deltas seen. */
  function adapterOn(p: ModelProvider): Promise<number> {
    return new Promise((resolve, reject) => {
      let n = 0;
      p.call(REQUEST).subscribe({
        next: (e) => void (e.type === 'text_delta' && n++),
        error: reject,
        complete: () => resolve(n),
      });
    });
  }

  /** `run()` of an agent on `model` with the given build's engine; resolves with the text deltas seen. */
  function runOn(build: Build['lib'], model: ModelProvider): Promise<number> {
    const agent = build.defineAgent({ name: 'bench', instructions: '', model });
    return new Promise((resolve, reject) => {
      let n = 0;
      build.run(agent, 'hi').subscribe({
        next: (e) => {
          if (e.type === 'text_delta') n++;
          else if (e.type === 'run_failed') reject(new Error(e.error.message));
        },
        complete: () => resolve(n),
      });
    });
  }

  /** One consumption of the stream; resolves with the text deltas it saw. */
  const consume = (variant: Variant, api: Api, model: string): Promise<number> => {
    const other = baseline?.lib;
    switch (variant) {
      case 'fetch':
        return floor(api, model);
      case 'socket':
        return socketFloor(api, model);
      case 'sdk':
        return sdk(api, model);
      case 'adapter':
        return adapterOn(provider(lib, api, model));
      case 'run':
        return runOn(lib, provider(lib, api, model));
      case 'engine':
        return runOn(lib, synthetic(CHUNKS));
      default:
        if (!other) throw new Error(`no baseline build for ${variant}`);
        if (variant.startsWith('adapter')) return adapterOn(provider(other, api, model));
        if (variant.startsWith('run')) return runOn(other, provider(other, api, model));
        return runOn(other, synthetic(CHUNKS));
    }
  };

  for (const api of APIS) for (const mode of ['stream', 'paced']) await measure(api, mode);

  /** One table: every variant on `api` with the server in `mode`, WARMUP + ROUNDS rounds. */
  async function measure(api: Api, mode: string): Promise<void> {
    const model = `${mode}:${CHUNKS}`;
    const cpu = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const wall = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const ratios = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const floors = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const overBase: number[] = [];
    const loads: string[] = [];
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]!);
      const perChunk = new Map<Variant, number>();
      const wallOf = new Map<Variant, number>();
      if (round >= WARMUP) loads.push(await loadAverage());
      // Another process on the sibling CPU slows this one for seconds at a time, and only ever adds
      // CPU time: each variant runs REPEATS times, interleaved, and keeps its least-disturbed request.
      for (let r = 0; r < REPEATS; r++) {
        for (const variant of order) {
          const c0 = process.cpuUsage();
          const t0 = performance.now();
          const n = await consume(variant, api, model);
          const us = cpuSince(c0) / CHUNKS;
          const ms = performance.now() - t0;
          if (n !== CHUNKS) throw new Error(`${api} ${variant}: saw ${n} deltas, expected ${CHUNKS}`);
          if (us < (perChunk.get(variant) ?? Infinity)) {
            perChunk.set(variant, us);
            wallOf.set(variant, ms);
          }
        }
      }
      if (round < WARMUP) continue;
      const sdkUs = perChunk.get('sdk')!;
      const floorUs = perChunk.get('fetch')!;
      for (const v of VARIANTS) {
        cpu.get(v)!.push(perChunk.get(v)!);
        wall.get(v)!.push(wallOf.get(v)!);
        ratios.get(v)!.push(perChunk.get(v)! / sdkUs);
        floors.get(v)!.push(perChunk.get(v)! / floorUs);
      }
      if (BASE) overBase.push(perChunk.get('run')! / perChunk.get(`run (${BASE})`)!);
    }
    const rows: string[][] = [
      [
        'consumer',
        'CPU µs/chunk p50 (min–max)',
        'wall ms p50',
        '× bare SDK: median of rounds (min–max)',
        '× fetch floor',
      ],
    ];
    for (const v of VARIANTS) {
      rows.push([
        v,
        medianRange(cpu.get(v)!, 2),
        fmt(median(wall.get(v)!), 0),
        v === 'sdk' ? '1.00' : medianRange(ratios.get(v)!, 3),
        fmt(median(floors.get(v)!), 2),
      ]);
    }
    const wire = api === 'chat' ? 'Chat Completions' : 'Responses API';
    printTable(
      `streaming ${wire}, server mode "${mode}": ${CHUNKS} chunks, ${ROUNDS} rounds (+${WARMUP} warm-up) ` +
        `of ${REPEATS} interleaved requests per variant (a round keeps each variant's least CPU), ` +
        `CPU of this process — ${LIB_LABEL}; ` +
        `load average per round: ${loads.join(' | ')}`,
      rows,
    );
    const sdkUs = median(cpu.get('sdk')!);
    const adapterUs = median(cpu.get('adapter')!);
    const runUs = median(cpu.get('run')!);
    const runRatio = median(ratios.get('run')!);
    const target = TARGET[mode]!;
    console.log(
      `breakdown (p50): bare SDK ${fmt(sdkUs, 2)} µs; adapter ${fmt(adapterUs, 2)} µs, ` +
        `engine +${fmt(runUs - adapterUs, 2)} µs per chunk ` +
        `(engine alone, no I/O: ${fmt(median(cpu.get('engine')!), 2)} µs per event); ` +
        `fetch floor ${fmt(median(cpu.get('fetch')!), 2)} µs; ` +
        `socket floor ${fmt(median(cpu.get('socket')!), 2)} µs (${medianRange(ratios.get('socket')!, 3)}× the SDK); ` +
        `run/SDK ${medianRange(ratios.get('run')!, 3)}× ` +
        `(target ≤ ${target}×: ${runRatio <= target ? 'met' : 'NOT met'})` +
        (BASE ? `; run/run (${BASE}) ${medianRange(overBase, 3)}×` : ''),
    );
  }
  await server.close();
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
