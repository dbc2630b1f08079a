import type { Observable } from 'rxjs';
import type { CancelSignal } from '../cancel/cancel-signal.js';
import type { GuardrailKind } from '../events.js';
import type { Item } from '../items.js';

/**
 * A guardrail's verdict (docs/guardrails.md): `tripwire: true` refuses what it checked; `output` is anything the
 * guardrail wants to report (its reasons, a score), carried by `guardrail_tripped.output` and
 * `GuardrailTrippedError.output`.
 */
export interface GuardrailVerdict {
  readonly tripwire: boolean;
  readonly output?: unknown;
}

/** What a guardrail's `check` may return: a verdict, a Promise of one, or an Observable (its first value counts). */
export type GuardrailReturn = GuardrailVerdict | PromiseLike<GuardrailVerdict> | Observable<GuardrailVerdict>;

/** What a guardrail's `check` gets besides what it checks. */
export interface GuardrailContext<C = unknown> {
  readonly runId: string;
  /** The agent's name. */
  readonly agent: string;
  /** The turn the run is in (1 for the first). */
  readonly turn: number;
  /** The guardrail's own name. */
  readonly guardrail: string;
  readonly kind: GuardrailKind;
  /**
   * Aborted when the check is no longer wanted: the run ended (cancelled, failed, or another guardrail tripped) or
   * the guardrail's `timeoutMs` passed. Pass it to the fetch or model call the check makes.
   */
  readonly signal: AbortSignal;
  /** The run token: a check may cancel its run (`cancel.cancel(reason)`), which ends it `run_cancelled`. */
  readonly cancel: CancelSignal;
  /** `RunOptions.context`. */
  readonly context: C;
}

/** The fields every guardrail has. */
export interface GuardrailBase {
  /** Names the guardrail in events and in `GuardrailTrippedError.guardrail`; non-empty. */
  readonly name: string;
  /**
   * The check's deadline in ms (a timer on the run's scheduler). Default `DEFAULT_GUARDRAIL_TIMEOUT_MS` (30 000);
   * `false` for none. A check that passes it is treated as `onError` says.
   */
  readonly timeoutMs?: number | false;
  /**
   * What a check that throws, rejects, errors, ends without a verdict, returns a malformed verdict or passes its
   * deadline counts as: `'trip'` (default: a guardrail fails closed) or `'pass'`.
   */
  readonly onError?: 'trip' | 'pass';
}

/** What an input guardrail checks: the `user` Items of the run's input, or the steering injected in a turn. */
export interface InputSubject {
  /** The Items checked: the first turn's user Items (input and steering), later a turn's injected steering. */
  readonly items: readonly Item[];
  /** Their text, one Item a line. */
  readonly text: string;
  /** True when the Items are steering injected after the first turn. */
  readonly steering: boolean;
}

/**
 * An input guardrail (docs/guardrails.md, "Input guardrails"): checks the run's input and each turn's injected
 * steering. `mode: 'parallel'` (default) checks beside the turn's model request (a trip cancels the request at
 * once); `'before'` checks before the request is sent (no tokens spent on a refused input).
 */
export interface InputGuardrail<C = unknown> extends GuardrailBase {
  readonly mode?: 'parallel' | 'before';
  check(input: InputSubject, ctx: GuardrailContext<C>): GuardrailReturn;
}

/** What an output guardrail checks: the final answer's text (in `'hold'` mode, the text up to a chunk's end). */
export interface OutputSubject {
  /** The answer's text so far (the whole answer once `final`). */
  readonly text: string;
  /** True for the whole answer; false for a prefix checked while it streams (`'hold'`, `'parallel'`). */
  readonly final: boolean;
}

/**
 * An output guardrail (docs/guardrails.md, "Output guardrails"): checks the final answer before the run commits.
 * `mode`: `'after'` (default: the answer streams as usual and is judged once complete; a trip retracts it),
 * `'hold'` (the text is held back and released chunk by chunk, each only after the guardrails passed the text up to
 * its end; no character of a chunk they refused, nor anything after it, reaches the subscriber), `'parallel'` (the
 * text streams; each chunk is checked as it completes, and a trip cancels the model mid-stream).
 */
export interface OutputGuardrail<C = unknown> extends GuardrailBase {
  readonly mode?: 'after' | 'hold' | 'parallel';
  /**
   * What a trip does (docs/guardrails.md, "Refusing instead of failing"): `'fail'` (default: the run ends
   * `run_failed`, `stopReason: 'guardrail'`, committing nothing) or `'refuse'` (the run ends `run_completed` with
   * `output` the `refusal` text and `finishReason: 'refusal'`, and commits its history with the refused answer
   * replaced by an assistant Item carrying that text; `guardrail_tripped.action` is `'refuse_answer'`).
   */
  readonly onTrip?: 'fail' | 'refuse';
  /**
   * `onTrip: 'refuse'` only: the text of the assistant Item that replaces the answer (non-empty). Default
   * `DEFAULT_GUARDRAIL_REFUSAL`.
   */
  readonly refusal?: string;
  check(output: OutputSubject, ctx: GuardrailContext<C>): GuardrailReturn;
}

/** What a tool guardrail checks: a call, its parsed arguments and (`'after'`) the tool's result. */
export interface ToolSubject {
  readonly callId: string;
  /** The tool's name. */
  readonly name: string;
  /** The call's arguments, parsed and validated by the tool's schema. */
  readonly args: unknown;
  /** `'after'` only: the value the tool gave, before the model sees it. */
  readonly result?: unknown;
}

/**
 * A tool guardrail (docs/guardrails.md, "Tool guardrails"): `when: 'before'` checks a call's arguments before the
 * tool runs, `'after'` its result before the model sees it. `tools`: the tool names it applies to (default: every
 * tool). `onTrip`: `'reject'` (default: the tool does not run, or its result is dropped, and the model reads the
 * `GuardrailTrippedError` as the call's error result; the run goes on) or `'end_run'` (the run ends `run_failed`,
 * `stopReason: 'guardrail'`, committing nothing).
 */
export interface ToolGuardrail<C = unknown> extends GuardrailBase {
  readonly when: 'before' | 'after';
  readonly tools?: readonly string[];
  readonly onTrip?: 'reject' | 'end_run';
  check(call: ToolSubject, ctx: GuardrailContext<C>): GuardrailReturn;
}

/** The agent option `guardrails` (docs/guardrails.md). */
export interface Guardrails<C = unknown> {
  readonly input?: readonly InputGuardrail<C>[];
  readonly output?: readonly OutputGuardrail<C>[];
  readonly tool?: readonly ToolGuardrail<C>[];
  /**
   * Where `'hold'` and `'parallel'` output guardrails cut the streaming text into chunks: `'sentence'` (default: after
   * `.`, `!`, `?` or `…` followed by white space, and at a line break) or a number of characters (a positive
   * integer).
   */
  readonly chunk?: 'sentence' | number;
}

/** The refusal text of an output guardrail with `onTrip: 'refuse'` that gives no `refusal` of its own. */
export const DEFAULT_GUARDRAIL_REFUSAL = "Sorry, I can't give that answer.";

/** `timeoutMs` of a guardrail that gives none, in ms. */
export const DEFAULT_GUARDRAIL_TIMEOUT_MS = 30_000;
