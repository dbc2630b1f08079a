/** What the parts of `providerContract` share: a server per test, a run recorder, bounded waits, the answers. */
import { defineAgent } from '../../engine/define-agent.js';
import { run } from '../../engine/run.js';
import type { RunOptions } from '../../engine/types.js';
import type { RunEvent } from '../../events.js';
import type { ModelProvider } from '../../model/types.js';
import { tool, type Tool } from '../../tools/tool.js';
import type { ContractFramework } from './kit.js';
import type { ProviderKit, ScriptedAnswer } from './provider-kit.js';
import { startWireServer, type WireServer } from './wire-server.js';

/** The timeout of each test of the suite (ms): generous, since sockets are real and machines are loaded. */
export const TEST_TIMEOUT_MS = 60_000;
/** The bound on any single wait of the suite (ms): "it happened", never "it was fast". */
export const WAIT_BOUND_MS = 20_000;

/** Resolves as `promise` does, or rejects naming `what` after {@link WAIT_BOUND_MS}. */
export function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${WAIT_BOUND_MS} ms`)), WAIT_BOUND_MS);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

/** A fresh server and provider per test; the server is closed whatever happens. */
export async function withWire(
  kit: ProviderKit,
  body: (server: WireServer, provider: ModelProvider) => Promise<void>,
): Promise<void> {
  const server = await startWireServer(kit.wire);
  try {
    await body(server, kit.provider({ origin: server.origin }));
  } finally {
    await server.close();
  }
}

/** The events of one run as they arrive, with a wait for the first that matches and for the end. */
export interface Recorded {
  readonly events: RunEvent[];
  /** True once the run's Observable completed (after its terminal event). */
  readonly completed: () => boolean;
  /** Resolves with the first event (seen or to come) of `type`. */
  next<T extends RunEvent['type']>(type: T): Promise<Extract<RunEvent, { type: T }>>;
  /** Resolves with every event once the run's Observable completed. */
  readonly done: Promise<RunEvent[]>;
}

/** Runs `agent` on `input` and records its events. */
export function record(model: ModelProvider, tools: readonly Tool[], options: RunOptions = {}): Recorded {
  const agent = defineAgent({ name: 'conformance', instructions: 'Answer briefly.', model, tools: [...tools] });
  const events: RunEvent[] = [];
  const waiters: { type: string; wake: (e: RunEvent) => void }[] = [];
  let completed = false;
  const done = new Promise<RunEvent[]>((resolve, reject) => {
    run(agent, 'What is the weather in Paris?', options).subscribe({
      next: (event) => {
        events.push(event);
        for (const w of waiters.filter((w) => w.type === event.type)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.wake(event);
        }
      },
      error: reject,
      complete: () => {
        completed = true;
        resolve(events);
      },
    });
  });
  return {
    events,
    completed: () => completed,
    done,
    next: <T extends RunEvent['type']>(type: T) => {
      const seen = events.find((e) => e.type === type);
      if (seen) return Promise.resolve(seen as Extract<RunEvent, { type: T }>);
      return new Promise<Extract<RunEvent, { type: T }>>((wake) =>
        waiters.push({ type, wake: wake as (e: RunEvent) => void }),
      );
    },
  };
}

/** The last event, which must be the terminal one. */
export const terminal = (events: readonly RunEvent[]): RunEvent => events[events.length - 1]!;

/** Fails unless the server accepted every request (`validateRequest` and the route). */
export function expectAllAccepted({ expect }: ContractFramework, server: WireServer): void {
  expect(server.requests.map((r) => r.rejected ?? 'accepted')).toEqual(server.requests.map(() => 'accepted'));
}

/** How each request asked for its answer, in order (`'stream'` or `'json'`). */
export const routes = (server: WireServer): (string | undefined)[] => server.requests.map((r) => r.route);

/** `error.name`, and the given fields of a serialised error, for one exact comparison. */
export function errorFields(error: unknown, fields: readonly string[]): Record<string, unknown> {
  const e = (error ?? {}) as Record<string, unknown>;
  return Object.fromEntries(['name', ...fields].map((f) => [f, e[f]]));
}

/** The answer of the text checks: three deltas, `stop`, usage 12 + 3. */
export const TEXT: ScriptedAnswer = {
  text: ['The weather', ' in Paris', ' is sunny.'],
  toolCalls: [],
  finishReason: 'stop',
  usage: { inputTokens: 12, outputTokens: 3 },
};

/** A short final answer (the rescue's, the retry's). */
export const FINAL: ScriptedAnswer = {
  text: ['Sunny, 21 °C.'],
  toolCalls: [],
  finishReason: 'stop',
  usage: { inputTokens: 20, outputTokens: 4 },
};

/** The answer of the tool-call checks: a text, then two parallel calls whose arguments stream in pieces. */
export const TOOLS: ScriptedAnswer = {
  text: ['Let me check.'],
  toolCalls: [
    { callId: 'call_weather_1', name: 'get_weather', argumentChunks: ['{"city":', '"Paris",', '"unit":"C"}'] },
    { callId: 'call_time_2', name: 'get_time', argumentChunks: ['{"zone":"Europe/Paris"}'] },
  ],
  finishReason: 'tool_calls',
  usage: { inputTokens: 30, outputTokens: 15 },
};

/**
 * The counts every provider reports, of a `Usage` (`reported` too) or `TokenCounts`: cache counts are left
 * out, since a provider may report zeros for them.
 */
export function counts(usage: {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  reported?: boolean;
}): Record<string, unknown> {
  const { inputTokens, outputTokens, totalTokens, reported } = usage;
  return { inputTokens, outputTokens, totalTokens, ...(reported === undefined ? {} : { reported }) };
}

/** The whole text of an answer. */
export const textOf = (answer: ScriptedAnswer): string => answer.text.join('');

const OBJECT_SCHEMA = { type: 'object', properties: {}, additionalProperties: true };

/** A tool answering `output` whatever its arguments; `calls` records the arguments it got. */
export function fixedTool(name: string, output: string, calls: unknown[] = []): Tool {
  return tool({
    name,
    description: `the ${name} tool`,
    parameters: OBJECT_SCHEMA,
    execute: (args: unknown) => (calls.push(args), output),
  });
}

/** A tool that reports it started (`started`) and only ends when its signal aborts. */
export function blockingTool(name: string): { tool: Tool; started: Promise<void> } {
  let mark!: () => void;
  const started = new Promise<void>((resolve) => (mark = resolve));
  const blocking = tool({
    name,
    description: `the ${name} tool`,
    parameters: OBJECT_SCHEMA,
    execute: (_args: unknown, ctx) =>
      new Promise<string>((_resolve, reject) => {
        ctx.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        mark();
      }),
  });
  return { tool: blocking, started };
}
