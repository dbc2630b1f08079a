import { isInstance } from '../describe.js';
import { LoopctlError } from '../errors.js';
import type { GuardrailKind } from '../events.js';

const WHAT: Readonly<Record<GuardrailKind, string>> = {
  input: 'the input',
  output: 'the answer',
  tool_before: "the call's arguments; the call did not run",
  tool_after: "the call's result",
};

/**
 * A guardrail tripped (docs/guardrails.md): the run ended `run_failed` with `stopReason: 'guardrail'` and
 * committed nothing, or (a tool guardrail with `onTrip: 'reject'`) the call's result is this error, which the
 * model reads. `guardrail`: the guardrail's name; `kind`: what it checked; `output`: what its verdict carried (for
 * a check that failed closed, undefined, and `cause` is what it threw or the `TimeoutError` of its deadline).
 * On `run_failed.error` it is serialised with `guardrail` and `kind`.
 */
export class GuardrailTrippedError extends LoopctlError {
  override readonly name: string = 'GuardrailTrippedError';
  constructor(
    readonly guardrail: string,
    readonly kind: GuardrailKind,
    readonly output: unknown,
    options?: { cause?: unknown },
  ) {
    super(`guardrail ${guardrail} refused ${WHAT[kind]}`, options);
  }
}

/** True for a {@link GuardrailTrippedError} (total: false for a value whose prototype cannot be read). */
export const isGuardrailTrippedError = (e: unknown): e is GuardrailTrippedError => isInstance(e, GuardrailTrippedError);
