import { EMPTY, Observable, concat, defer, expand, filter, ignoreElements, of } from 'rxjs';
import { describeValue } from '../describe.js';
import { MaxTurnsError } from '../errors.js';
import { toJsonSchema } from '../tools/tool.js';
import type { Item } from '../items.js';
import type { MailboxToken } from '../mailbox/mailbox.js';
import type { ModelRequest, ToolSpec } from '../model/types.js';
import type { Agent } from './types.js';
import { dispatch$ } from './dispatch.js';
import { callHooks$, toLastValue } from './hooks.js';
import { attemptDeadlines } from './deadlines.js';
import { callModel$ } from './model-call.js';
import { callIdsOf, repairHistory } from './repair.js';
import type { RunController, Step } from './run-controller.js';

type LoopStep = Step | { readonly type: '@next_turn' };

/**
 * The run loop: load the session (checkpoint 12: session load), then turns,
 * one after another (`expand` over turn numbers, one turn at a time), until
 * an outcome. Each turn: entry stage (checkpoint 1: turn entry) → `turn_started` →
 * `turnStarted` hook → mailbox drain (`user_message_injected`) →
 * `beforeModelCall` → model call → tools → `turn_completed`. A final answer
 * passes one last stage that checks the mailbox: pending steering gets one
 * more turn (within `maxTurns`), else the run completes ("the final-answer
 * check").
 */
export function runLoop$(
  rc: RunController<any>,
  queuedBefore: ReadonlySet<MailboxToken> = NONE,
): Observable<Step> {
  const loaded$ = defer(() => {
    const { session } = rc.opts;
    if (!session) return EMPTY;
    return rc.stage('session_load', () => {
      const load = toLastValue(session.load());
      return new Observable<never>((subscriber) =>
        load.subscribe({
          next: (items) => {
            const history = historyOf(items);
            // Repaired before it is sent ("the history is valid on the wire"); the stored Items stay as they are.
            if (history) rc.history = repairHistory(history, () => rc.nextId());
            else {
              const got = describeValue(items);
              subscriber.error(new TypeError(`session.load() must give an array of Items, got ${got}`));
            }
          },
          error: (e) => subscriber.error(e),
          complete: () => subscriber.complete(),
        }),
      );
    });
  });
  const turns$ = turn$(rc, 1, queuedBefore).pipe(
    expand((step) => (step.type === '@next_turn' ? turn$(rc, rc.turn + 1, NONE) : EMPTY)),
    filter((step): step is Step => step.type !== '@next_turn'),
  );
  return concat(loaded$, defer(() => repairInput(rc)), turns$);
}

/**
 * An `Item[]` input is repaired like a loaded history ("the history is valid
 * on the wire"), its call ids kept apart from the loaded history's; it is what
 * the run sends and commits.
 */
function repairInput(rc: RunController<any>): Observable<never> {
  const input = rc.scratch.items; // only the input so far: nothing else is added before the first turn
  if (input.every((item) => item.type === 'user')) return EMPTY;
  input.splice(0, input.length, ...repairHistory(input, () => rc.nextId(), callIdsOf(rc.history)));
  return EMPTY;
}

function turn$(rc: RunController<any>, n: number, queuedBefore: ReadonlySet<MailboxToken>): Observable<LoopStep> {
  return concat(
    rc.stage('turn_entry', () => {
      rc.turn = n;
      return of<Step>({ type: 'turn_started' });
    }),
    defer(() => callHooks$(rc.hookSets, 'turnStarted', () => rc.hookContext(), rc.enterHook).pipe(ignoreElements())),
    defer(() => drain$(rc, queuedBefore)),
    // The model request is a stage inside callModel$ (one hop, then poll), after beforeModelCall.
    defer(() => {
      const request = buildRequest(rc);
      return concat(
        callHooks$(rc.hookSets, 'beforeModelCall', () => rc.hookContext({ request }), rc.enterHook).pipe(ignoreElements()),
        defer(() => callModel$(rc, request)),
      );
    }),
    defer(() => afterResponse$(rc, n)),
  );
}

/**
 * "Drain after turnStarted": each queued item becomes a `user` Item of the turn's input, with its token's id.
 * "Arrival order": items that were queued before the run started (`queuedBefore`, first turn only) go
 * just before the input's last `user` Item (after the input when it has none); the rest follow the input.
 */
function drain$(rc: RunController<any>, queuedBefore: ReadonlySet<MailboxToken>): Observable<Step> {
  return new Observable<Step>((subscriber) => {
    const tokens = rc.mailbox.take();
    rc.drained.push(...tokens);
    // In the first turn the scratchpad holds exactly the input.
    let at = queuedBefore.size > 0 ? lastUserIndex(rc.scratch.items) : -1;
    for (const token of tokens) {
      if (subscriber.closed) return;
      const item = { type: 'user', id: token.id, text: token.content } as const;
      if (at !== -1 && queuedBefore.has(token)) rc.scratch.insert(at++, item);
      else rc.scratch.add(item);
      subscriber.next({ type: 'user_message_injected', id: token.id, content: token.content });
    }
    subscriber.complete();
  });
}

function lastUserIndex(items: readonly Item[]): number {
  for (let i = items.length - 1; i >= 0; i--) if (items[i]!.type === 'user') return i;
  return -1;
}

/** A copy of what `session.load()` gave; `undefined` unless it is an array (foreign values are never trusted). */
function historyOf(items: unknown): Item[] | undefined {
  if (items === undefined || items === null) return [];
  try {
    return Array.isArray(items) ? [...(items as Item[])] : undefined;
  } catch {
    return undefined; // a revoked Proxy, or an array Proxy whose traps throw
  }
}

const NONE: ReadonlySet<MailboxToken> = new Set();

const specs = new WeakMap<Agent<any>, readonly ToolSpec[]>();

/** The wire form of an agent's tools, computed once per agent (an agent is frozen). */
function toolSpecs(agent: Agent<any>): readonly ToolSpec[] {
  let out = specs.get(agent);
  if (!out) {
    out = Object.freeze(agent.tools.map((t) => Object.freeze({ name: t.name, description: t.description, parameters: toJsonSchema(t.parameters) })));
    specs.set(agent, out);
  }
  return out;
}

function buildRequest(rc: RunController<any>): ModelRequest {
  const stream = rc.opts.stream ?? rc.agent.model.stream ?? true;
  const timeoutMs = attemptDeadlines(rc.opts.deadlines, stream).requestMs;
  return {
    stream,
    instructions: rc.agent.instructions,
    items: rc.history.length === 0 ? rc.scratch.items.slice() : rc.history.concat(rc.scratch.items),
    tools: toolSpecs(rc.agent),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  };
}

function afterResponse$(rc: RunController<any>, n: number): Observable<LoopStep> {
  const response = rc.lastResponse!;
  const maxTurns = rc.agent.maxTurns;
  if (response.toolCalls.length > 0) {
    return concat(
      dispatch$(rc, response.toolCalls),
      defer((): Observable<LoopStep> => {
        const done: Step = { type: 'turn_completed' };
        if (n >= maxTurns) return of(done, outcome({ kind: 'failed', stopReason: 'max_turns', error: new MaxTurnsError(maxTurns) }));
        return of(done, { type: '@next_turn' as const });
      }),
    );
  }
  return concat(
    of<LoopStep>({ type: 'turn_completed' }),
    // The outcome decision is a stage too: a cancel in the same tick wins, and a
    // push during the final answer gets one more turn ("the final-answer check").
    rc.stage('dispatch', (): Observable<LoopStep> => {
      if (rc.mailbox.size > 0 && n < maxTurns) return of({ type: '@next_turn' as const });
      return of(outcome({ kind: 'completed', output: response.text, response }));
    }),
  );
}

const outcome = (o: Extract<Step, { type: '@outcome' }>['outcome']): Step => ({ type: '@outcome', outcome: o });
