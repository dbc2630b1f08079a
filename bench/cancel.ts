/**
 * Cancel → terminal event latency at every checkpoint (issue 11, bench 1;
 * guarantee 3: terminal before cancel() returns, docs/cancellation.md). For each checkpoint, ≥ 1 000 runs (after a
 * warm-up): the run is brought to the wait, then `performance.now()` is read,
 * `cancel.cancel()` is called, and the latency is the time at which the
 * subscriber receives `run_cancelled`. "sync" counts the runs whose
 * `run_cancelled` arrived before `cancel()` returned (the design says all of
 * them); "phase ok" counts runs whose `phase` is the checkpoint's.
 *
 * How each run is brought to its wait: an event or a call tells the bench the
 * run reached it, then one macrotask (`setImmediate`) passes so the run is
 * idle there, as when a user clicks Stop. Two checkpoints only exist inside
 * one tick (between sequential tools, a wave boundary): there the cancel is
 * raised synchronously inside the subscriber's handler for
 * `tool_call_completed`, the only place a caller can hit them. The HTTP rows
 * use the child-process server (bench/server.ts).
 */
import { setImmediate as tick } from 'node:timers/promises';
import OpenAI from 'openai';
import { NEVER, Subject, take } from 'rxjs';
import type { CancelPhase, CancelSignal as CancelSignalType, RunEvent, RunOptions, Agent, AgentDefinition } from '../src/index.js';
import { startChildServer, type ChildServer } from './lib/child-server.js';
import { lib, testing, LIB_LABEL } from './lib/loopctl.js';
import { fmt, fullGc, printTable, summarize } from './lib/stats.js';

const { CancelSignal, defineAgent, run, tool, openaiChat, ModelCallError } = lib;
const { scriptedModel } = testing;

const RUNS = Number(process.env['BENCH_RUNS'] ?? 1000);
const WARMUP = Math.max(50, Math.ceil(RUNS / 10));

/** How one run of a scenario is built and brought to its wait. */
interface Armed {
  readonly agent: Agent;
  readonly options?: RunOptions;
  /** Resolves once the run waits at the checkpoint (the bench then lets one macrotask pass). */
  readonly reached?: Promise<void>;
  /** Sees each event (to detect the wait). */
  readonly onEvent?: (event: RunEvent) => void;
  /** Called with each event; returning true cancels right there, inside the handler. */
  readonly cancelOn?: (event: RunEvent) => boolean;
  /** Fire the token before subscribing (checkpoint 1 with a pre-fired token). */
  readonly preFired?: boolean;
  /** Cancel right after `subscribe()` returns, before the first stage's hop. */
  readonly atSubscribe?: boolean;
}

interface Scenario {
  readonly name: string;
  readonly phase: CancelPhase;
  arm(signal: { reached(): void }): Armed;
}

interface Sample {
  latencyMs: number;
  sync: boolean;
  phaseOk: boolean;
  phase: string;
}

const noopTool = tool({ name: 'noop', description: 'instant', parameters: { type: 'object', properties: {} }, execute: () => 'ok' });
const agentOf = (definition: Omit<AgentDefinition, 'name' | 'instructions'>): Agent => defineAgent({ name: 'bench', instructions: '', ...definition });

async function once(scenario: Scenario): Promise<Sample> {
  let reach!: () => void;
  const reachedByCall = new Promise<void>((resolve) => (reach = resolve));
  const armed = scenario.arm({ reached: () => reach() });
  const cancel: CancelSignalType = new CancelSignal();
  let terminal: RunEvent | undefined;
  let tTerminal = 0;
  let t0 = 0;
  let returned = false;
  let syncInHandler = false;
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  const fire = (): void => {
    t0 = performance.now();
    cancel.cancel('bench');
    returned = true;
  };
  if (armed.preFired) {
    cancel.cancel('bench');
    t0 = performance.now();
  }
  run(armed.agent, 'go', { ...armed.options, cancel }).subscribe({
    next: (event) => {
      if (event.type === 'run_cancelled' || event.type === 'run_completed' || event.type === 'run_failed') {
        tTerminal = performance.now();
        terminal = event;
        syncInHandler = !returned;
        return;
      }
      armed.onEvent?.(event);
      if (armed.cancelOn?.(event)) fire();
    },
    complete: () => resolveDone(),
  });
  if (armed.preFired) returned = true;
  else if (armed.atSubscribe) fire();
  else if (!armed.cancelOn) {
    await (armed.reached ?? reachedByCall);
    await tick();
    fire();
  }
  if (!terminal) {
    const timeout = setTimeout(() => resolveDone(), 5_000);
    await done;
    clearTimeout(timeout);
  }
  if (!terminal) throw new Error(`${scenario.name}: no terminal event within 5 s after cancel`);
  const phase = terminal.type === 'run_cancelled' ? terminal.phase : terminal.type;
  return { latencyMs: tTerminal - t0, sync: syncInHandler, phaseOk: phase === scenario.phase, phase };
}

function scenarios(server: ChildServer): Scenario[] {
  // One OpenAI client whose fetch reports when response headers arrive (HTTP rows only).
  let onHeaders: (() => void) | undefined;
  const client = new OpenAI({
    baseURL: server.baseURL,
    apiKey: 'k',
    maxRetries: 0,
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      onHeaders?.();
      return res;
    },
  });
  const stalledJson = openaiChat({ model: 'stall-json', client, stream: false });
  const holdStream = openaiChat({ model: 'hold:2', client });
  const overloaded = () => new ModelCallError('overloaded', { status: 503, retryable: true });

  return [
    {
      name: 'turn entry, token fired before subscribe',
      phase: 'turn_entry',
      arm: () => ({ agent: agentOf({ model: scriptedModel(['hi']) }), preFired: true }),
    },
    {
      name: 'turn entry, cancel right after subscribe (in the hop)',
      phase: 'turn_entry',
      arm: () => ({ agent: agentOf({ model: scriptedModel(['hi']) }), atSubscribe: true }),
    },
    {
      name: 'session load (Promise never settles)',
      phase: 'session_load',
      arm: (s) => ({
        agent: agentOf({ model: scriptedModel(['hi']) }),
        options: { session: { load: () => (s.reached(), new Promise<never>(() => {})), append: () => {} } },
      }),
    },
    {
      name: 'hook: beforeModelCall (Promise never settles)',
      phase: 'hook',
      arm: (s) => ({
        agent: agentOf({ model: scriptedModel(['hi']), hooks: { beforeModelCall: () => (s.reached(), new Promise<void>(() => {})) } }),
      }),
    },
    {
      name: 'model request: scriptedModel, non-streaming, stalled',
      phase: 'model_request',
      arm: () => {
        const model = scriptedModel([{ gate: NEVER, text: 'never' }], { stream: false });
        return { agent: agentOf({ model }), ...reachOn('model_request_started') };
      },
    },
    {
      name: 'model request: HTTP, non-streaming, body stalled',
      phase: 'model_request',
      arm: (s) => {
        onHeaders = () => s.reached();
        return { agent: agentOf({ model: stalledJson }) };
      },
    },
    {
      name: 'model stream: scriptedModel, mid-stream',
      phase: 'model_stream',
      arm: () => ({ agent: agentOf({ model: scriptedModel([{ text: ['Hel', 'lo'], hold: NEVER }]) }), ...reachOn('text_delta') }),
    },
    {
      name: 'model stream: HTTP (openaiChat), mid-stream',
      phase: 'model_stream',
      arm: () => {
        onHeaders = undefined;
        return { agent: agentOf({ model: holdStream }), ...reachOn('text_delta', 2) };
      },
    },
    {
      name: 'rescue: non-streaming rescue of a failed stream, stalled',
      phase: 'rescue',
      arm: () => ({
        agent: agentOf({ model: scriptedModel([{ text: ['par'], error: overloaded() }, { gate: NEVER, text: 'never' }]) }),
        ...reachOn('model_request_started', 2),
      }),
    },
    {
      name: 'backoff sleep (10 s retry delay)',
      phase: 'backoff',
      arm: () => ({
        agent: agentOf({ model: scriptedModel([{ error: overloaded() }, 'hi']) }),
        options: { retry: { maxRetries: 1, initialDelayMs: 10_000, maxDelayMs: 10_000 }, random: () => 0.999 },
        ...reachOn('retry_scheduled'),
      }),
    },
    {
      name: 'stream gate (breaker open, no fallback)',
      phase: 'stream_gate',
      arm: () => {
        const reached = new Subject<void>();
        return {
          agent: agentOf({ model: scriptedModel([{ error: overloaded() }, 'hi']), breaker: { failureThreshold: 1, cooldownMs: 60_000 } }),
          options: { retry: { maxRetries: 1, initialDelayMs: 0 }, random: () => 0 },
          // the 0 ms backoff timer runs, then the retry waits at the gate: let two timer turns pass
          reached: new Promise<void>((resolve) => {
            reached.pipe(take(1)).subscribe(() => setTimeout(() => setTimeout(resolve, 1), 1));
          }),
          onEvent: (e) => void (e.type === 'retry_scheduled' && reached.next()),
        };
      },
    },
    {
      name: 'between sequential tools (cancel in the tool_call_completed handler)',
      phase: 'between_tools',
      arm: () => ({
        agent: agentOf({ model: scriptedModel([{ toolCalls: [{ name: 'noop' }, { name: 'noop' }] }, 'done']), tools: [noopTool] }),
        cancelOn: (e) => e.type === 'tool_call_completed',
      }),
    },
    {
      name: 'wave boundary, parallel ×2 (cancel in the tool_call_completed handler)',
      phase: 'wave_boundary',
      arm: () => ({
        agent: agentOf({
          model: scriptedModel([{ toolCalls: [{ name: 'noop' }, { name: 'noop' }, { name: 'noop' }, { name: 'noop' }] }, 'done']),
          tools: [noopTool],
          parallelToolCalls: { maxConcurrency: 2 },
        }),
        cancelOn: (e) => e.type === 'tool_call_completed',
      }),
    },
    {
      name: 'parallel wave in flight (4 tools honouring their signal)',
      phase: 'tool_call',
      arm: (s) => {
        let started = 0;
        const wait = tool({
          name: 'wait',
          description: 'waits for its signal',
          parameters: { type: 'object', properties: {} },
          execute: (_args, ctx) => {
            if (++started === 4) s.reached();
            return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }));
          },
        });
        return {
          agent: agentOf({
            model: scriptedModel([{ toolCalls: [{ name: 'wait' }, { name: 'wait' }, { name: 'wait' }, { name: 'wait' }] }, 'done']),
            tools: [wait],
            parallelToolCalls: { maxConcurrency: 4 },
          }),
        };
      },
    },
    {
      name: 'tool call: tool IGNORES its signal (resolves 10 s later)',
      phase: 'tool_call',
      arm: (s) => {
        const stubborn = tool({
          name: 'stubborn',
          description: 'ignores ctx.signal',
          parameters: { type: 'object', properties: {} },
          execute: () => {
            s.reached();
            return new Promise((resolve) => setTimeout(resolve, 10_000, 'late').unref());
          },
        });
        return { agent: agentOf({ model: scriptedModel([{ toolCalls: [{ name: 'stubborn' }] }, 'done']), tools: [stubborn] }) };
      },
    },
  ];
}

/** `reached` resolves at the n-th event of `type`. */
function reachOn(type: RunEvent['type'], nth = 1): Pick<Armed, 'reached' | 'onEvent'> {
  let seen = 0;
  let resolve!: () => void;
  const reached = new Promise<void>((r) => (resolve = r));
  return { reached, onEvent: (e) => void (e.type === type && ++seen === nth && resolve()) };
}

/**
 * The floor for the HTTP rows: the bare SDK's own `AbortController.abort()`
 * on the same kind of request (the time `abort()` takes; the SDK's loop
 * learns of it later, asynchronously). loopctl must abort synchronously
 * before its terminal event (guarantee 11), so this cost is inside its figure.
 */
async function sdkAbort(server: ChildServer, stream: boolean): Promise<{ abortMs: number; settleMs: number }> {
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  sdkHeaders = stream ? undefined : reach;
  let client = sdkClients.get(server);
  if (!client) {
    // Like the HTTP rows above: a fetch that reports when the response headers are in.
    client = new OpenAI({
      baseURL: server.baseURL,
      apiKey: 'k',
      maxRetries: 0,
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        sdkHeaders?.();
        return res;
      },
    });
    sdkClients.set(server, client);
  }
  const controller = new AbortController();
  const body = { model: stream ? 'hold:2' : 'stall-json', messages: [{ role: 'user' as const, content: 'go' }] };
  const options = { signal: controller.signal, maxRetries: 0, timeout: 600_000 };
  const loop = (async () => {
    try {
      if (stream) {
        const s = await client.chat.completions.create({ ...body, stream: true }, options);
        for await (const chunk of s) if (chunk.choices[0]?.delta?.content) reach();
      } else {
        await client.chat.completions.create({ ...body, stream: false }, options);
      }
    } catch {
      /* the abort */
    }
  })();
  await reached;
  await tick();
  const t0 = performance.now();
  controller.abort();
  const t1 = performance.now();
  await loop;
  return { abortMs: t1 - t0, settleMs: performance.now() - t0 };
}
let sdkHeaders: (() => void) | undefined;
const sdkClients = new Map<ChildServer, OpenAI>();

export async function main(): Promise<void> {
  const server = await startChildServer();
  const rows: string[][] = [['checkpoint', 'phase', 'runs', 'p50 µs', 'p99 µs', 'max µs', 'sync', 'phase ok']];
  let worstP99 = 0;
  const t0 = performance.now();
  const only = process.env['BENCH_ONLY'];
  for (const scenario of scenarios(server).filter((x) => !only || x.name.includes(only))) {
    const samples: Sample[] = [];
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const sample = await once(scenario);
      if (i >= WARMUP) samples.push(sample);
    }
    await fullGc();
    const s = summarize(samples.map((x) => x.latencyMs * 1000));
    worstP99 = Math.max(worstP99, s.p99);
    const sync = samples.filter((x) => x.sync).length;
    const ok = samples.filter((x) => x.phaseOk).length;
    const wrong = [...new Set(samples.filter((x) => !x.phaseOk).map((x) => x.phase))];
    rows.push([scenario.name, scenario.phase, String(s.n), fmt(s.p50, 1), fmt(s.p99, 1), fmt(s.max, 0), `${sync}/${s.n}`, `${ok}/${s.n}${wrong.length ? ` (${wrong.join(',')})` : ''}`]);
  }
  for (const stream of [false, true]) {
    const label = `reference, bare SDK: controller.abort() ${stream ? 'mid-stream' : 'non-streaming'} (HTTP)`;
    if (only && !label.includes(only)) continue;
    const abort: number[] = [];
    const settle: number[] = [];
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const r = await sdkAbort(server, stream);
      if (i >= WARMUP) abort.push(r.abortMs * 1000), settle.push(r.settleMs * 1000);
    }
    const a = summarize(abort);
    const z = summarize(settle);
    rows.push([label, 'abort() call', String(a.n), fmt(a.p50, 1), fmt(a.p99, 1), fmt(a.max, 0), '-', '-']);
    rows.push([`reference, bare SDK: abort() → its loop settles ${stream ? 'mid-stream' : 'non-streaming'}`, 'async', String(z.n), fmt(z.p50, 1), fmt(z.p99, 1), fmt(z.max, 0), '-', '-']);
  }
  printTable(`cancel → run_cancelled latency (${RUNS} runs per row after ${WARMUP} warm-up; target p99 < 1 000 µs) — ${LIB_LABEL}`, rows);
  console.log(`worst p99 ${fmt(worstP99, 1)} µs; ${fmt((performance.now() - t0) / 1000, 1)} s`);
  await server.close();
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
