import { concat, defer, NEVER, of, throwError, type Observable } from 'rxjs';
import { z } from 'zod';
import { defineAgent } from '../../engine/define-agent.js';
import type { Agent } from '../../engine/types.js';
import { ModelCallError } from '../../errors.js';
import type { ModelEvent, ModelProvider, ModelRequest } from '../../model/types.js';
import { tool } from '../../tools/tool.js';

/** The name `runsContract` starts its runs with: the implementation under test must serve {@link runsContractAgent}. */
export const RUNS_CONTRACT_AGENT = 'runs-contract';

/**
 * What a run of {@link runsContractAgent} does, by its input (the last user text that is one of these;
 * steering such as `more` changes nothing):
 * - `complete`: streams `one `, `two `, `three` and answers `one two three` (`run_completed`);
 * - `fail`: its model request fails, not retryable (`run_failed`);
 * - `hold`: streams `held ` and then waits forever (live until cancelled);
 * - `approve`: calls the tool `guarded`, which needs approval; once it has a result, answers `result: <output>`.
 * Anything else is answered `echo: <text>`.
 */
export type RunsContractDirective = 'complete' | 'fail' | 'hold' | 'approve';

const answer = (text: string): ModelEvent => ({
  type: 'response',
  response: { text, toolCalls: [], finishReason: 'stop' },
});

const delta = (text: string): ModelEvent => ({ type: 'text_delta', delta: text });

/** The directive model: what each request answers depends only on the request, so any process runs it alike. */
const directiveModel: ModelProvider = {
  id: 'runs-contract',
  stream: true,
  call(request: ModelRequest): Observable<ModelEvent> {
    return defer((): Observable<ModelEvent> => {
      const users = request.items.flatMap((i) => (i.type === 'user' ? [i.text] : []));
      const known = [...users].reverse().find((t) => ['complete', 'fail', 'hold', 'approve'].includes(t));
      const directive = known ?? users.at(-1) ?? '';
      switch (directive) {
        case 'complete':
          return of(delta('one '), delta('two '), delta('three'), answer('one two three'));
        case 'fail':
          return throwError(() => new ModelCallError('the contract model refuses', { status: 400, retryable: false }));
        case 'hold':
          return concat(of(delta('held ')), NEVER);
        case 'approve': {
          const result = [...request.items].reverse().find((i) => i.type === 'tool_result');
          if (result?.type === 'tool_result') return of(answer(`result: ${result.output}`));
          const toolCall = { callId: 'guarded-1', name: 'guarded', arguments: '{}' };
          return of<ModelEvent>({
            type: 'response',
            response: { text: '', toolCalls: [toolCall], finishReason: 'tool_calls' },
          });
        }
        default:
          return of(answer(`echo: ${directive}`));
      }
    });
  },
};

const guarded = tool({
  name: 'guarded',
  description: 'Runs only once a person approved it',
  parameters: z.object({}),
  needsApproval: true,
  execute: () => 'guarded ran',
});

/**
 * The agent `runsContract` drives (name {@link RUNS_CONTRACT_AGENT}): a model steered by the run's input (see
 * {@link RunsContractDirective}), so a run in another process (a queue worker) behaves as one here. Give it to
 * the implementation under test (`localRuns({ agents })`, each worker's `agents`).
 */
export function runsContractAgent(): Agent<string> {
  return defineAgent({
    name: RUNS_CONTRACT_AGENT,
    instructions: 'Follow the directive.',
    model: directiveModel,
    tools: [guarded],
  });
}
