import { map, takeLast, filter, type Observable } from 'rxjs';
import { RunFailedError, RunCancelledError } from '../errors.js';
import { isTerminalEvent } from '../events.js';
import { run } from '../engine/run.js';
import type { Agent } from '../engine/types.js';
import type { GuardrailVerdict, InputGuardrail, InputSubject } from './types.js';

/** Options of {@link agentGuardrail}. */
export interface AgentGuardrailOptions {
  /** The guardrail's name. Default: the agent's name. */
  readonly name?: string;
  /** Decides from the judging agent's answer whether the tripwire fires (e.g. `(answer) => /\bYES\b/.test(answer)`). */
  readonly trips: (answer: string) => boolean;
  /** What the agent is asked, from what the guardrail checks. Default: the subject's text. */
  readonly prompt?: (subject: InputSubject) => string;
  readonly mode?: 'parallel' | 'before';
  readonly timeoutMs?: number | false;
  readonly onError?: 'trip' | 'pass';
}

/**
 * An agent as a guardrail (docs/guardrails.md, "Guardrails as agents"): each check is a run of `agent` on the
 * subject's text (or `prompt(subject)`); its final answer is the verdict's `output`, and `trips(answer)` decides the
 * tripwire. The judging run is unsubscribed (so cancelled, its model request aborted) when the check is abandoned;
 * a judging run that fails or is cancelled is a check that cannot judge (`onError`, default: trip).
 */
export function agentGuardrail<C>(agent: Agent<C>, options: AgentGuardrailOptions): InputGuardrail<C> {
  const { trips, prompt } = options;
  const check = (subject: InputSubject): Observable<GuardrailVerdict> =>
    run(agent, prompt ? prompt(subject) : subject.text).pipe(
      filter(isTerminalEvent),
      takeLast(1),
      map((event): GuardrailVerdict => {
        if (event.type === 'run_completed') return { tripwire: trips(event.output), output: event.output };
        if (event.type === 'run_cancelled') throw new RunCancelledError({ ...event });
        throw new RunFailedError({ ...event });
      }),
    );
  return {
    name: options.name ?? agent.name,
    check,
    ...(options.mode !== undefined ? { mode: options.mode } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.onError !== undefined ? { onError: options.onError } : {}),
  };
}
