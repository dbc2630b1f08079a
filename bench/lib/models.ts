import { of, type Observable } from 'rxjs';
import type { ModelEvent, ModelProvider, ModelRequest, ModelResponse } from '../../src/index.js';

const USAGE = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };

/**
 * A stateless, instant {@link ModelProvider} for the engine benchmarks: it
 * answers synchronously on subscribe and records nothing (unlike
 * `scriptedModel`, whose request log grows with every call). Turn `t` of a
 * run (from the request's history length: 1 user Item + 2 Items per finished
 * tool turn) calls `toolName` while `t < turns`, then answers with text.
 */
export function instantToolModel(turns: number, toolName = 'noop', callsPerTurn = 1): ModelProvider {
  const answers = new Map<number, Observable<ModelEvent>>();
  const answer = (t: number): Observable<ModelEvent> => {
    let a = answers.get(t);
    if (!a) {
      const response: ModelResponse =
        t < turns
          ? {
              text: '',
              toolCalls: Array.from({ length: callsPerTurn }, (_, i) => ({
                callId: `call_${t}_${i}`,
                name: toolName,
                arguments: '{}',
              })),
              finishReason: 'tool_calls',
              usage: USAGE,
            }
          : { text: 'done', toolCalls: [], finishReason: 'stop', usage: USAGE };
      answers.set(t, (a = of<ModelEvent>({ type: 'response', response })));
    }
    return a;
  };
  return {
    id: 'instant',
    stream: true,
    call: (request: ModelRequest) => answer(1 + (request.items.length - 1) / (1 + callsPerTurn)),
  };
}
