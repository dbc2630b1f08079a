import { EMPTY, Observable, concat, concatMap, defer, from, mergeMap, of, type ObservableInput } from 'rxjs';
import type { ToolCall } from '../items.js';
import type { Tool } from '../tools/tool.js';
import { describeValue, readProp } from '../describe.js';
import { HookError, callHooks$ } from './hooks.js';
import { refusedFor } from './repair.js';
import type { RunController, Step } from './run-controller.js';
import { BatchPhase, errorResult, parseArguments, toolCall$ } from './tool-call.js';

interface Runnable {
  readonly call: ToolCall;
  readonly tool: Tool;
  readonly args: unknown;
}

/**
 * Runs the tool calls of one model response (checkpoint 6: between tools,
 * checkpoint 7: wave boundary, checkpoint 10: dispatch).
 * First the batch is prepared, in call order: arguments validated (an
 * unknown tool or bad arguments become a tool error for the model) and every
 * `beforeToolCall` hook run (a deny becomes a tool error; a malformed verdict fails the run), all before any
 * tool starts (guarantee 2: nothing starts after a cancel). Then the calls run: sequentially, each stage
 * polling the token first (checkpoint 6, phase `between_tools`), or in a pool of
 * `maxConcurrency` that polls before each start (checkpoint 7, phase `wave_boundary`).
 * Results enter history in call order; on cancel, finished calls keep their
 * results and the rest are paired as interrupted in `partial` (checkpoint 10: dispatch). The
 * run's phase follows the batch ({@link BatchPhase}): `tool_call` while any
 * call executes, and `turn_entry` once the batch is over.
 */
export function dispatch$(rc: RunController<any>, calls: readonly ToolCall[]): Observable<Step> {
  const runnables: Runnable[] = [];
  const tools = new Map(rc.agent.tools.map((t) => [t.name, t] as const));
  const refuse = (call: ToolCall, name: string, message: string): Observable<Step> => {
    const item = errorResult(call.callId, message);
    rc.scratch.addResult(item);
    return of({ type: 'tool_call_failed', callId: call.callId, name: call.name, error: { name, message }, interrupted: false });
  };

  const prepare$ = from(calls).pipe(
    concatMap((call): ObservableInput<Step> => {
      // Unusable arguments or a duplicate id, found when the response was recorded: never run
      // ("the history is valid on the wire").
      const refused = refusedFor(call);
      if (refused) return refuse(call, refused.name, refused.message);
      const tool = tools.get(call.name);
      if (!tool) {
        const known = [...tools.keys()].join(', ') || 'none';
        return refuse(call, 'UnknownToolError', `unknown tool "${call.name}"; available tools: ${known}`);
      }
      const parsed = parseArguments(tool, call);
      if (!parsed.ok) return refuse(call, 'InvalidArgumentsError', parsed.message);
      let denied: string | undefined;
      const hooks$ = callHooks$(rc.hookSets, 'beforeToolCall', () => rc.hookContext({ call }), rc.enterHook);
      return concat(
        hooks$.pipe(concatMap((verdict) => {
          const reason = denialOf(verdict); // a malformed verdict errors here: the batch never starts
          if (denied === undefined) denied = reason;
          return EMPTY;
        })),
        defer(() => {
          if (denied !== undefined) return refuse(call, 'ToolCallDenied', `the call was denied: ${denied}`);
          runnables.push({ call, tool, args: parsed.args });
          return EMPTY;
        }),
      );
    }),
  );

  const parallel = rc.agent.parallelToolCalls;
  const run$ = defer(() => {
    const batch = new BatchPhase(rc, parallel ? 'wave_boundary' : 'between_tools', runnables.length);
    // Each start is a stage (one hop, then poll); while a sibling still runs, a cancel there is a `tool_call` one.
    const start = (r: Runnable): Observable<Step> => rc.stage(batch.current(), () => toolCall$(rc, r.call, r.tool, r.args, batch));
    return parallel ? from(runnables).pipe(mergeMap(start, parallel.maxConcurrency)) : from(runnables).pipe(concatMap(start));
  });

  return concat(
    rc.stage('dispatch', () => prepare$),
    run$,
    defer(() => {
      rc.scratch.endBatch();
      // The batch is over: a cancel from here on is observed at the next turn's entry.
      rc.phase = 'turn_entry';
      return EMPTY;
    }),
  );
}

const UNREADABLE = Symbol('unreadable');

/**
 * A `beforeToolCall` verdict; a security hook fails closed. `undefined` or `null` allows (returns
 * `undefined`). An object with a truthy `deny` denies: returns the reason the model reads (`true` →
 * "denied by beforeToolCall", an Error → its message, anything else described totally). Any other
 * value (`{ deny: false }` included) throws a {@link HookError}: the run fails and no tool of the batch runs.
 */
function denialOf(verdict: unknown): string | undefined {
  if (verdict === undefined || verdict === null) return undefined;
  const deny = typeof verdict === 'object' ? readProp(verdict, 'deny', UNREADABLE) : undefined;
  if (deny !== UNREADABLE && deny) {
    return deny === true ? 'denied by beforeToolCall' : describeValue(deny, 'deny reason');
  }
  const shown = typeof verdict === 'string' ? JSON.stringify(verdict) : describeValue(verdict);
  const why = `it returned ${shown}, which is neither undefined (allow) nor { deny: reason } (deny); ` +
    'return undefined to allow the call';
  throw new HookError('beforeToolCall', new TypeError(why));
}
