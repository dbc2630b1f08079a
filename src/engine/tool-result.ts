import { Observable, Subscriber, from } from 'rxjs';
import { z } from 'zod';
import { isObservableTotal, isThenable, toJsonText, type JsonTextResult } from '../describe.js';
import { ToolExecutionError } from '../errors.js';
import type { ToolCall, ToolResultItem } from '../items.js';
import { isZodSchema, type Tool, type ToolReturn } from '../tools/tool.js';
import { Relay } from './relay.js';

/** A tool's return as an Observable of its result: the last value; an empty Observable is a tool error. */
export function toolResult$(name: string, callId: string, ret: ToolReturn<unknown>): Observable<unknown> {
  if (isObservableTotal(ret)) return lastValue$(ret, name, callId);
  if (isThenable(ret)) return from(ret);
  return from([ret]); // not of(): it would probe the value as a scheduler
}

/**
 * The source's last value, emitted when it completes; a {@link ToolExecutionError} ("tool `name` returned an empty
 * Observable") as the error when it completes without one; its error as it is. One subscriber: `last()` with
 * `catchError` keeps four alive (and a buffer) for as long as a tool waits, ≈ 2 KiB per idle run, and an observer
 * object three closures and two wrappers more; the tool's name and call id are its fields, not a closure's
 * (BENCHMARKS.md, memory).
 */
function lastValue$<T>(source: Observable<T>, name: string, callId: string): Observable<T> {
  return new Observable<T>((subscriber) => source.subscribe(new LastValue(subscriber, name, callId)));
}

/** The source's subscriber of {@link lastValue$}: its error goes on as {@link Relay} passes it. */
class LastValue<T> extends Relay<T> {
  #seen = false;
  #value: T | undefined;

  constructor(
    out: Subscriber<T>,
    private readonly name: string,
    private readonly callId: string,
  ) {
    super(out);
  }

  protected override _next(value: T): void {
    this.#seen = true;
    this.#value = value;
  }

  protected override _complete(): void {
    try {
      if (!this.#seen) return this.out.error(emptyResultError(this.name, this.callId));
      this.out.next(this.#value as T);
      this.out.complete();
    } finally {
      this.unsubscribe();
    }
  }
}

/** The tool error of an Observable tool that completed without a value. */
export function emptyResultError(name: string, callId: string): ToolExecutionError {
  return new ToolExecutionError(name, callId, `tool ${name} returned an empty Observable`);
}

/**
 * The text the model sees for a tool's value: strings as they are, `undefined` as '', anything else as
 * faithful JSON text (cycles marked, BigInt as decimal strings, Map/Set as arrays: `toJsonText`).
 * Not ok, with the reason, for a value that has no text form (a function, a symbol, an unreadable value).
 */
export function outputText(value: unknown): JsonTextResult {
  if (typeof value === 'string') return { ok: true, text: value };
  if (value === undefined) return { ok: true, text: '' };
  return toJsonText(value);
}

/** The result Item of a call that ended in a tool error ("unusable output is a tool error"). */
export function errorResult(callId: string, message: string): ToolResultItem {
  return { type: 'tool_result', callId, output: `Error: ${message}`, isError: true };
}

/**
 * Parses and validates a call's arguments ("unusable output is a tool
 * error", never a crash). Empty arguments mean `{}`.
 */
export function parseArguments(
  tool: Tool,
  call: ToolCall,
): { ok: true; args: unknown } | { ok: false; message: string } {
  let parsed: unknown;
  try {
    parsed = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (err) {
    const raw = call.arguments.slice(0, 200);
    const why = (err as Error).message;
    return { ok: false, message: `the arguments of ${tool.name} are not valid JSON (${why}): ${raw}` };
  }
  if (isZodSchema(tool.parameters)) {
    const result = tool.parameters.safeParse(parsed);
    if (result.success) return { ok: true, args: result.data };
    return { ok: false, message: `invalid arguments for ${tool.name}:\n${z.prettifyError(result.error)}` };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    return { ok: false, message: `the arguments of ${tool.name} must be a JSON object` };
  return { ok: true, args: parsed };
}
