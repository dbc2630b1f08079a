/**
 * The agent the queue specs' worker processes run: a model driven by directives in the run's input, so a test
 * in another process decides what each run does. The directive is the last user Item starting with `!`:
 * - `!stream N D`: N text chunks `wK ` D ms apart, then the answer ends with the steering it saw;
 * - `!tool MS`: a `wait` tool call of MS ms (cancellable), then `done`;
 * - `!turns N MS`: N turns of `wait` MS ms each, then `done`;
 * - `!steps N MS [D]`: as `!turns`, each call's id `step-K` (K: the tool results so far + 1), the same in every
 *   process, so the histories of two runs of it compare equal; with D, each turn's response is streamed first as
 *   D text deltas `tK.J ` 20 ms apart (its text stays ''). Each call prints `model <runId> <turn>` (specs count
 *   a turn's model calls); a `stream` fault armed for the run (./faults.ts) kills this process after the
 *   second delta of its turn;
 * - `!backoff MS`: a retryable error asking to retry after MS ms, then `done`;
 * - `!hold`: one chunk, then a stream that never ends;
 * - `!approve`: a `guarded` tool call (it needs approval), then `done` with what the tool's result said;
 * - `!deploy fail|cancel`: a `deploy` call (it needs approval; `cancel`: it runs 60 s, cancellable); then, after a
 *   result the tool gave, `fail` fails the run (a model error that is not retried), else `done: <result>`;
 * - anything else: `echo: ` and every user text (directives left out), `|`-separated.
 * Every answer ends with ` [seen: …]`: the user texts (steering included) the model saw, in order.
 */
import { Observable, concat, defer, of, timer, NEVER, map, throwError } from 'rxjs';
import { z } from 'zod';
import {
  defineAgent,
  ModelCallError,
  tool,
  type ModelEvent,
  type ModelProvider,
  type ModelRequest,
} from '../../../src/index.js';
import { die, tripFault } from './faults.js';

const userTexts = (request: ModelRequest) =>
  request.items.flatMap((i) => (i.type === 'user' && !i.text.startsWith('!') ? [i.text] : []));

const answer = (text: string, request: ModelRequest): ModelEvent => ({
  type: 'response',
  response: { text: `${text} [seen: ${userTexts(request).join('|')}]`, toolCalls: [], finishReason: 'stop' },
});

/** How many results of tool calls the request's history holds after its directive. */
function toolResultsSinceDirective(request: ModelRequest): number {
  let count = 0;
  for (let i = request.items.length - 1; i >= 0; i--) {
    const item = request.items[i]!;
    if (item.type === 'user' && item.text.startsWith('!')) break;
    if (item.type === 'tool_result') count++;
  }
  return count;
}

let calls = 0;
const retried = new Set<string>();

/** Where the worker process looks for armed faults (./faults.ts), set by it; none: no fault. */
export const faults: { dir?: string } = {};

/** The run and turn of the model call being made (the `beforeModelCall` hook sets it; one run at a time). */
const current = { runId: '-', turn: 0 };

/**
 * A `!steps` turn's `response` (a tool call or the final answer), streamed first as `deltas` text deltas. A
 * `stream` fault armed for the run's turn takes the stream after its second delta: this process dies 300 ms
 * later (the deltas sent to Redis), the stream still open.
 */
function streamed(deltas: number, response: ModelEvent): Observable<ModelEvent> {
  const { runId, turn } = current;
  process.stdout.write(`model ${runId} ${turn}\n`);
  const chunks = Array.from({ length: deltas }, (_, k) =>
    timer(20).pipe(map((): ModelEvent => ({ type: 'text_delta', delta: `t${turn}.${k} ` }))),
  );
  const fault = defer(() => {
    if (!tripFault(faults.dir, runId, 'stream', turn)) return concat(...chunks.slice(2), of(response));
    setTimeout(() => die(`in the stream of ${runId} ${turn}`), 300);
    return NEVER;
  });
  return deltas < 2 ? concat(...chunks, of(response)) : concat(...chunks.slice(0, 2), fault);
}

export const directiveModel: ModelProvider = {
  id: 'directive',
  stream: true,
  call(request) {
    return defer((): Observable<ModelEvent> => {
      const directive = [...request.items].reverse().find((i) => i.type === 'user' && i.text.startsWith('!'));
      const words = directive?.type === 'user' ? directive.text.split(' ') : ['echo'];
      const n = (k: number, d: number) => (words[k] !== undefined ? Number(words[k]) : d);
      const call = ++calls;
      switch (words[0]) {
        case '!stream': {
          const count = n(1, 10);
          const delay = n(2, 0);
          const chunks = Array.from({ length: count }, (_, k) =>
            (delay > 0 ? timer(delay) : of(0)).pipe(map((): ModelEvent => ({ type: 'text_delta', delta: `w${k} ` }))),
          );
          return concat(...chunks, of(answer('streamed', request)));
        }
        case '!approve': {
          const result = [...request.items].reverse().find((i) => i.type === 'tool_result');
          if (result?.type === 'tool_result') return of(answer(`done: ${result.output}`, request));
          const toolCall = { callId: `call-${call}`, name: 'guarded', arguments: '{}' };
          return of<ModelEvent>({
            type: 'response',
            response: { text: '', toolCalls: [toolCall], finishReason: 'tool_calls' },
          });
        }
        case '!deploy': {
          const result = [...request.items].reverse().find((i) => i.type === 'tool_result');
          if (result?.type === 'tool_result') {
            if (words[1] === 'fail' && !result.output.startsWith('Error')) {
              return throwError(() => new ModelCallError('model down', { status: 400, retryable: false }));
            }
            return of(answer(`done: ${result.output}`, request));
          }
          const ms = words[1] === 'cancel' ? 60_000 : 0;
          // Named by the directive's Item id: unique across worker processes (specs count executions by call id).
          const callId = `deploy-${directive?.type === 'user' ? directive.id : call}`;
          const toolCall = { callId, name: 'deploy', arguments: JSON.stringify({ ms }) };
          return of<ModelEvent>({
            type: 'response',
            response: { text: '', toolCalls: [toolCall], finishReason: 'tool_calls' },
          });
        }
        case '!hold':
          return concat(of<ModelEvent>({ type: 'text_delta', delta: 'holding ' }), NEVER);
        case '!tool':
        case '!steps':
        case '!turns': {
          const turns = words[0] === '!tool' ? 1 : n(1, 2);
          const ms = words[0] === '!tool' ? n(1, 1000) : n(2, 100);
          const done = toolResultsSinceDirective(request);
          const callId = words[0] === '!steps' ? `step-${done + 1}` : `call-${call}`;
          const toolCall = { callId, name: 'wait', arguments: JSON.stringify({ ms }) };
          const response: ModelEvent =
            done >= turns
              ? answer('done', request)
              : { type: 'response', response: { text: '', toolCalls: [toolCall], finishReason: 'tool_calls' } };
          return words[0] === '!steps' ? streamed(n(3, 0), response) : of(response);
        }
        case '!backoff': {
          // The first call of this directive fails retryably, asking for a retry after MS ms; the retry answers.
          const id = directive?.type === 'user' ? directive.id : '';
          if (retried.has(id)) return of(answer('done', request));
          retried.add(id);
          return throwError(
            () => new ModelCallError('busy', { status: 503, retryable: true, retryAfterMs: n(1, 5000) }),
          );
        }
        default:
          return of(answer('echo:', request));
      }
    });
  },
};

const wait = tool({
  name: 'wait',
  description: 'Waits ms milliseconds',
  parameters: z.object({ ms: z.number() }),
  execute: ({ ms }, ctx) =>
    new Promise<string>((resolve, reject) => {
      // One line per execution (`exec <runId> <callId>`): the fault specs count executions per call.
      process.stdout.write(`exec ${ctx.runId} ${ctx.callId}\n`);
      const t = setTimeout(() => resolve(`waited ${ms}`), ms);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(t);
        reject(ctx.signal.reason);
      });
    }),
});

const guarded = tool({
  name: 'guarded',
  description: 'Runs only once a person approved it',
  parameters: z.object({}),
  needsApproval: true,
  execute: () => 'guarded ran',
});

/** Needs approval; prints `exec deploy <callId>` on stdout when it runs (specs count executions), then waits ms. */
const deploy = tool({
  name: 'deploy',
  description: 'Deploys once a person approved it',
  parameters: z.object({ ms: z.number() }),
  needsApproval: true,
  execute: ({ ms }, ctx) => {
    process.stdout.write(`exec deploy ${ctx.callId}\n`);
    return new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => resolve('deployed'), ms);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(t);
        reject(ctx.signal.reason);
      });
    });
  },
});

export const queueAgent = defineAgent({
  name: 'queue-agent',
  instructions: 'Follow the directive.',
  model: directiveModel,
  tools: [wait, guarded, deploy],
  hooks: {
    beforeModelCall: ({ runId, turn }) => {
      current.runId = runId;
      current.turn = turn;
    },
  },
});
