/**
 * Cancel → terminal event latency at every checkpoint (issue 11, bench 1;
 * guarantee 3: terminal before cancel() returns, docs/cancellation.md). For each checkpoint, the run is
 * brought to the wait, then `performance.now()` is read, `cancel.cancel()` is called, and the latency is
 * the time at which the subscriber receives `run_cancelled`. "sync" counts the runs whose `run_cancelled`
 * arrived before `cancel()` returned (the design says all of them); "phase ok" counts runs whose `phase`
 * is the checkpoint's.
 *
 * How each run is brought to its wait: an event or a call tells the bench the
 * run reached it, then one macrotask (`setImmediate`) passes so the run is
 * idle there, as when a user clicks Stop. Three checkpoints only exist inside
 * one tick (dispatch, between sequential tools, a wave boundary): there the cancel is
 * raised synchronously inside the subscriber's handler for the event that
 * precedes them, the only place a caller can hit them. The HTTP rows
 * use the child-process server (bench/server.ts).
 *
 * Rounds: BENCH_ROUNDS (default 7) rounds; in each, every checkpoint is measured
 * with BENCH_RUNS runs (default 1 000, after a warm-up) on the measured build and,
 * when BENCH_BASELINE_DIR loads one, on the baseline build, in alternating order,
 * then the bare SDK's own abort() on the same HTTP requests. Each round gives a
 * p50 and a p99 per row; the tables show the median of the rounds and their min–max.
 */
import { setImmediate as tick } from 'node:timers/promises';
import OpenAI from 'openai';
import { NEVER, Subject, take } from 'rxjs';
import type { CancelPhase, RunEvent, RunOptions, Agent, AgentDefinition } from '../src/index.js';
import { startChildServer, type ChildServer } from './lib/child-server.js';
import { baseline, builds, LIB_LABEL, type Build } from './lib/loopctl.js';
import { fmt, fullGc, loadAverage, median, medianRange, printTable, summarize } from './lib/stats.js';

const RUNS = Number(process.env['BENCH_RUNS'] ?? 1000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7);
/** Warm-up runs before each row of each round (more in the first round, where the code is cold). */
const WARMUP = Math.max(20, Math.ceil(RUNS / 20));
const FIRST_WARMUP = Math.max(50, Math.ceil(RUNS / 5));
/** The target (issue 17): p99 ≤ 1 ms at every engine checkpoint. */
const TARGET_P99_US = 1000;

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
  /** Goes through HTTP (the child-process server): undici's abort is inside the figure. */
  readonly http?: boolean;
  arm(signal: { reached(): void }): Armed;
}

interface Sample {
  latencyMs: number;
  sync: boolean;
  phaseOk: boolean;
  phase: string;
}

async function once(build: Build, scenario: Scenario): Promise<Sample> {
  const { CancelSignal, run } = build.lib;
  let reach!: () => void;
  const reachedByCall = new Promise<void>((resolve) => (reach = resolve));
  const armed = scenario.arm({ reached: () => reach() });
  const cancel = new CancelSignal();
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

function scenarios(server: ChildServer, build: Build): Scenario[] {
  const { defineAgent, tool, openaiChat, ModelCallError } = build.lib;
  const { scriptedModel } = build.testing;
  const noopTool = tool({
    name: 'noop',
    description: 'instant',
    parameters: { type: 'object', properties: {} },
    execute: () => 'ok',
  });
  const agentOf = (definition: Omit<AgentDefinition, 'name' | 'instructions'>): Agent =>
    defineAgent({ name: 'bench', instructions: '', ...definition });
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
        agent: agentOf({
          model: scriptedModel(['hi']),
          hooks: { beforeModelCall: () => (s.reached(), new Promise<void>(() => {})) },
        }),
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
      http: true,
      arm: (s) => {
        onHeaders = () => s.reached();
        return { agent: agentOf({ model: stalledJson }) };
      },
    },
    {
      name: 'model stream: scriptedModel, mid-stream',
      phase: 'model_stream',
      arm: () => ({
        agent: agentOf({ model: scriptedModel([{ text: ['Hel', 'lo'], hold: NEVER }]) }),
        ...reachOn('text_delta'),
      }),
    },
    {
      name: 'model stream: HTTP (openaiChat), mid-stream',
      phase: 'model_stream',
      http: true,
      arm: () => {
        onHeaders = undefined;
        return { agent: agentOf({ model: holdStream }), ...reachOn('text_delta', 2) };
      },
    },
    {
      name: 'rescue: non-streaming rescue of a failed stream, stalled',
      phase: 'rescue',
      arm: () => ({
        agent: agentOf({
          model: scriptedModel([
            { text: ['par'], error: overloaded() },
            { gate: NEVER, text: 'never' },
          ]),
        }),
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
          agent: agentOf({
            model: scriptedModel([{ error: overloaded() }, 'hi']),
            breaker: { failureThreshold: 1, cooldownMs: 60_000 },
          }),
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
      name: 'dispatch (cancel in the model_response_completed handler)',
      phase: 'dispatch',
      arm: () => ({
        agent: agentOf({ model: scriptedModel([{ toolCalls: [{ name: 'noop' }] }, 'done']), tools: [noopTool] }),
        cancelOn: (e) => e.type === 'model_response_completed',
      }),
    },
    {
      name: 'between sequential tools (cancel in the tool_call_completed handler)',
      phase: 'between_tools',
      arm: () => ({
        agent: agentOf({
          model: scriptedModel([{ toolCalls: [{ name: 'noop' }, { name: 'noop' }] }, 'done']),
          tools: [noopTool],
        }),
        cancelOn: (e) => e.type === 'tool_call_completed',
      }),
    },
    {
      name: 'wave boundary, parallel ×2 (cancel in the tool_call_completed handler)',
      phase: 'wave_boundary',
      arm: () => ({
        agent: agentOf({
          model: scriptedModel([
            { toolCalls: [{ name: 'noop' }, { name: 'noop' }, { name: 'noop' }, { name: 'noop' }] },
            'done',
          ]),
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
            return new Promise((_resolve, reject) =>
              ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }),
            );
          },
        });
        return {
          agent: agentOf({
            model: scriptedModel([
              { toolCalls: [{ name: 'wait' }, { name: 'wait' }, { name: 'wait' }, { name: 'wait' }] },
              'done',
            ]),
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
        return {
          agent: agentOf({ model: scriptedModel([{ toolCalls: [{ name: 'stubborn' }] }, 'done']), tools: [stubborn] }),
        };
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

interface Row {
  readonly name: string;
  readonly phase: string;
  readonly build: string;
  readonly http: boolean;
  readonly p50: number[];
  readonly p99: number[];
  max: number;
  runs: number;
  sync: number;
  phaseOk: number;
  readonly wrong: Set<string>;
}

export async function main(): Promise<void> {
  const server = await startChildServer();
  const t0 = performance.now();
  const only = process.env['BENCH_ONLY'];
  const perBuild = builds.map((build) => ({
    build,
    scenarios: scenarios(server, build).filter((x) => !only || x.name.includes(only)),
  }));
  const rows = new Map<string, Row>();
  const row = (name: string, phase: string, build: string, http: boolean): Row => {
    const key = `${name}\0${build}`;
    let r = rows.get(key);
    if (!r)
      rows.set(
        key,
        (r = { name, phase, build, http, p50: [], p99: [], max: 0, runs: 0, sync: 0, phaseOk: 0, wrong: new Set() }),
      );
    return r;
  };
  const loads: string[] = [];
  const refs = [false, true].filter(
    (stream) => !only || `reference, bare SDK ${stream ? 'mid-stream' : 'non-streaming'}`.includes(only),
  );
  for (let round = 0; round < ROUNDS; round++) {
    loads.push(await loadAverage());
    const warmup = round === 0 ? FIRST_WARMUP : WARMUP;
    for (let i = 0; i < perBuild[0]!.scenarios.length; i++) {
      // Alternate which build goes first, so drift in the machine's load hits both alike.
      const order = round % 2 === 0 ? perBuild : [...perBuild].reverse();
      for (const { build, scenarios: list } of order) {
        const scenario = list[i]!;
        const samples: Sample[] = [];
        for (let k = 0; k < warmup + RUNS; k++) {
          const sample = await once(build, scenario);
          if (k >= warmup) samples.push(sample);
        }
        await fullGc();
        const s = summarize(samples.map((x) => x.latencyMs * 1000));
        const r = row(scenario.name, scenario.phase, build.name, scenario.http === true);
        r.p50.push(s.p50);
        r.p99.push(s.p99);
        r.max = Math.max(r.max, s.max);
        r.runs += s.n;
        r.sync += samples.filter((x) => x.sync).length;
        r.phaseOk += samples.filter((x) => x.phaseOk).length;
        for (const x of samples) if (!x.phaseOk) r.wrong.add(x.phase);
      }
    }
    for (const stream of refs) {
      const abort: number[] = [];
      const settle: number[] = [];
      for (let k = 0; k < warmup + RUNS; k++) {
        const r = await sdkAbort(server, stream);
        if (k >= warmup) {
          abort.push(r.abortMs * 1000);
          settle.push(r.settleMs * 1000);
        }
      }
      for (const [label, xs, phase] of [
        [
          `reference, bare SDK: controller.abort() ${stream ? 'mid-stream' : 'non-streaming'} (HTTP)`,
          abort,
          'abort() call',
        ],
        [`reference, bare SDK: abort() → its loop settles ${stream ? 'mid-stream' : 'non-streaming'}`, settle, 'async'],
      ] as const) {
        const s = summarize(xs);
        const r = row(label, phase, 'openai SDK', true);
        r.p50.push(s.p50);
        r.p99.push(s.p99);
        r.max = Math.max(r.max, s.max);
        r.runs += s.n;
      }
    }
    console.log(
      `round ${round + 1}/${ROUNDS} done (${fmt((performance.now() - t0) / 1000, 0)} s, load average ${loads.at(-1)})`,
    );
  }
  const all = [...rows.values()];
  const isRef = (r: Row) => r.build === 'openai SDK';
  printTable(
    `cancel → run_cancelled latency, µs: ${ROUNDS} rounds × ${RUNS} runs per row ` +
      `(after ${WARMUP}–${FIRST_WARMUP} warm-up runs); ` +
      `p50 and p99 are the median (min–max) of the rounds' values — ${LIB_LABEL}`,
    [
      ['checkpoint', 'phase', 'build', 'runs', 'p50 µs', 'p99 µs', 'max µs', 'sync', 'phase ok'],
      ...all.map((r) => [
        r.name,
        r.phase,
        r.build,
        String(r.runs),
        medianRange(r.p50),
        medianRange(r.p99),
        fmt(r.max, 0),
        isRef(r) ? '-' : `${r.sync}/${r.runs}`,
        isRef(r) ? '-' : `${r.phaseOk}/${r.runs}${r.wrong.size ? ` (${[...r.wrong].join(',')})` : ''}`,
      ]),
    ],
  );
  // The verdict: p99 (median of the rounds) ≤ 1 ms, and not above the baseline's worst round.
  const verdict: string[][] = [
    ['checkpoint', 'phase', 'loopctl p99 µs', 'baseline p99 µs', '≤ 1 ms', "vs the baseline's min–max", 'all sync'],
  ];
  for (const r of all.filter((x) => x.build === 'loopctl')) {
    const base = baseline && rows.get(`${r.name}\0${baseline.name}`);
    const p99 = median(r.p99);
    const where = !base
      ? '-'
      : p99 < Math.min(...base.p99)
        ? 'below'
        : p99 <= Math.max(...base.p99)
          ? 'within'
          : 'ABOVE';
    verdict.push([
      r.name,
      r.phase,
      medianRange(r.p99),
      base ? medianRange(base.p99) : '-',
      p99 <= TARGET_P99_US ? 'yes' : 'NO',
      where,
      r.sync === r.runs ? 'yes' : 'NO',
    ]);
  }
  printTable(
    `verdict (target: p99 ≤ ${TARGET_P99_US} µs at every engine checkpoint, and within the ` +
      `${baseline?.name ?? 'baseline'} build's ` +
      `min–max); load average per round: ${loads.join(' | ')}`,
    verdict,
  );
  console.log(`${fmt((performance.now() - t0) / 1000, 1)} s`);
  await server.close();
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
