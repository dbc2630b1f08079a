import {
  EMPTY,
  Observable,
  asyncScheduler,
  concat,
  concatMap,
  defer,
  from,
  of,
  take,
  throwError,
  timer,
  type ObservableInput,
  type SchedulerLike,
} from 'rxjs';
import { ModelCallError } from '../errors.js';
import type { FinishReason } from '../events.js';
import { checkArguments } from '../engine/repair.js';
import { unpairedToolCalls, type Item, type TokenCounts, type ToolCall } from '../items.js';
import type { ModelEvent, ModelProvider, ModelRequest, ModelResponse } from '../model/types.js';

/** A tool call a scripted step makes; `arguments` may be an object (sent as JSON) or raw text. */
export interface ScriptedToolCall {
  readonly name: string;
  readonly arguments?: unknown;
  readonly callId?: string;
}

/**
 * One model request's scripted answer. Order of what a call emits:
 * `gate` (waits for its first value), `delayMs`, the text deltas (with
 * `deltaDelayMs` before each after the first), `hold` (waits for its first
 * value; `NEVER` hangs the stream), then `error` or the response.
 * Without streaming only the wait steps and the response happen.
 */
export interface ScriptedStep {
  readonly text?: string | readonly string[];
  readonly toolCalls?: readonly ScriptedToolCall[];
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  readonly finishReason?: FinishReason;
  readonly usage?: TokenCounts;
  readonly refusal?: string;
  readonly reasoning?: string;
  readonly gate?: ObservableInput<unknown>;
  readonly delayMs?: number;
  readonly deltaDelayMs?: number;
  readonly hold?: ObservableInput<unknown>;
  /** Fail with this instead of answering (after the deltas, so a streamed failure counts as started). */
  readonly error?: unknown;
  /** Full control: the events of this call, e.g. a cold marble Observable. */
  readonly events?: (request: ModelRequest) => Observable<ModelEvent>;
}

/** What `scriptedModel` records of each call. */
export interface ScriptedCall {
  readonly request: ModelRequest;
  /** Set when the call was unsubscribed before it finished (the request was aborted). */
  tornDown: boolean;
  /** Set when the call emitted its response and completed, or errored. */
  finished: boolean;
}

/** The provider `scriptedModel` returns: a ModelProvider that also records what it was asked. */
export interface ScriptedModel extends ModelProvider {
  /** Every request, in order. */
  readonly requests: ModelRequest[];
  /** Every call with its teardown record. */
  readonly calls: ScriptedCall[];
}

/** Options of `scriptedModel`. */
export interface ScriptedModelOptions {
  readonly id?: string;
  /** The provider's streaming default. Default true. */
  readonly stream?: boolean;
  /** Time source of `delayMs` / `deltaDelayMs`. Default asyncScheduler (virtual inside `TestScheduler.run`). */
  readonly scheduler?: SchedulerLike;
}

/**
 * A deterministic {@link ModelProvider} for tests (docs/testing.md): call `n`
 * answers with `steps[n]` (a string is a text-only answer). It checks each
 * request as a strict API would ("the history is valid on the wire"): every
 * tool call in `items` must be paired with a result, have arguments that are
 * a JSON object and an id no other call has, else the call fails with a 400
 * `ModelCallError`. Running out of steps fails the call with a 500-like
 * non-retryable error.
 *
 * @example
 * const model = scriptedModel([{ toolCalls: [{ name: 'add', arguments: { a: 1, b: 2 } }] }, 'It is 3.']);
 */
export function scriptedModel(
  steps: readonly (ScriptedStep | string)[],
  options: ScriptedModelOptions = {},
): ScriptedModel {
  const requests: ModelRequest[] = [];
  const calls: ScriptedCall[] = [];
  const scheduler = options.scheduler ?? asyncScheduler;
  const id = options.id ?? 'scripted';
  return {
    id,
    stream: options.stream ?? true,
    requests,
    calls,
    call(request: ModelRequest): Observable<ModelEvent> {
      return new Observable<ModelEvent>((subscriber) => {
        const n = requests.length;
        requests.push(request);
        const record: ScriptedCall = { request, tornDown: false, finished: false };
        calls.push(record);
        const raw = steps[n];
        const invalid = wireFault(request.items);
        const events$ =
          invalid !== undefined
            ? throwError(() => new ModelCallError(`invalid request: ${invalid}`, { status: 400 }))
            : raw === undefined
              ? throwError(() => new ModelCallError(`${id}: no scripted step for request ${n + 1}`, { status: 500 }))
              : stepEvents(typeof raw === 'string' ? { text: raw } : raw, request, n, scheduler);
        const sub = events$.subscribe({
          next: (e) => subscriber.next(e),
          error: (e) => {
            record.finished = true;
            subscriber.error(e);
          },
          complete: () => {
            record.finished = true;
            subscriber.complete();
          },
        });
        return () => {
          sub.unsubscribe();
          if (!record.finished) record.tornDown = true;
        };
      });
    },
  };
}

/** What a strict API refuses in a history ("the history is valid on the wire"), or undefined. */
function wireFault(items: readonly Item[]): string | undefined {
  const unpaired = unpairedToolCalls(items);
  if (unpaired.length > 0) return `tool calls without results: ${unpaired.join(', ')}`;
  const ids = new Set<string>();
  for (const item of items) {
    if (item.type !== 'assistant') continue;
    for (const call of item.toolCalls) {
      if (ids.has(call.callId)) return `duplicate tool call id ${call.callId}`;
      ids.add(call.callId);
      const args = checkArguments(call.name, call.arguments);
      if (!args.ok || call.arguments.trim() === '') return `tool call ${call.callId}: arguments must be a JSON object`;
    }
  }
  return undefined;
}

function stepEvents(
  step: ScriptedStep,
  request: ModelRequest,
  n: number,
  scheduler: SchedulerLike,
): Observable<ModelEvent> {
  if (step.events) return step.events(request);
  const deltas =
    step.text === undefined ? [] : typeof step.text === 'string' ? (step.text === '' ? [] : [step.text]) : step.text;
  const toolCalls: ToolCall[] = (step.toolCalls ?? []).map((c, i) => ({
    callId: c.callId ?? `call_${n + 1}_${i + 1}`,
    name: c.name,
    arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}),
  }));
  const response: ModelResponse = {
    text: deltas.join(''),
    toolCalls,
    finishReason: step.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    usage: step.usage ?? { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
    ...(step.refusal !== undefined ? { refusal: step.refusal } : {}),
    ...(step.reasoning !== undefined ? { reasoning: step.reasoning } : {}),
  };
  const wait = (input: ObservableInput<unknown> | undefined): Observable<never> =>
    input === undefined
      ? EMPTY
      : from(input).pipe(
          take(1),
          concatMap(() => EMPTY),
        );
  const text$ = request.stream
    ? from(deltas).pipe(
        concatMap((delta, i) => {
          const event = of<ModelEvent>({ type: 'text_delta', delta });
          return i > 0 && step.deltaDelayMs
            ? concat(timer(step.deltaDelayMs, scheduler).pipe(concatMap(() => EMPTY)), event)
            : event;
        }),
      )
    : EMPTY;
  return concat(
    wait(step.gate),
    step.delayMs ? timer(step.delayMs, scheduler).pipe(concatMap(() => EMPTY)) : EMPTY,
    text$,
    wait(step.hold),
    defer(() =>
      step.error !== undefined ? throwError(() => step.error) : of<ModelEvent>({ type: 'response', response }),
    ),
  );
}
