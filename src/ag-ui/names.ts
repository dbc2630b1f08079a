/**
 * The names loopctl gives things on the AG-UI wire (docs/ui.md, "Event mapping"): the `name` of each
 * `CUSTOM` event it emits, and the message ids it mints. Isomorphic.
 */

/** `CUSTOM` event names. Each payload is documented in docs/ui.md; names marked reserved are not emitted yet. */
export const LOOPCTL_EVENTS = Object.freeze({
  /** `{ id, content }`: a steering message became a `user` Item of this turn (`user_message_injected`). */
  steeringInjected: 'loopctl.steering_injected',
  /** `{ attempt, delayMs, error: { name, message, … } }`: a transient model error will be retried. */
  retryScheduled: 'loopctl.retry_scheduled',
  /** `{ from, to, reason }`: the model call moved to the fallback model. */
  fallbackActivated: 'loopctl.fallback_activated',
  /** `{ phase, reason, undelivered }`: the run was cancelled; `reason` described as text (`describeValue`). */
  cancelled: 'loopctl.cancelled',
  /** `{ callId, name, progress }`: a running tool reported progress (`progress` as JSON). */
  toolProgress: 'loopctl.tool_progress',
  /**
   * `{ previousMessageId, cause }`: the answer starts over (`cause`: `retry`, `rescue`, `fallback`); a client
   * drops that message.
   */
  answerRestarted: 'loopctl.answer_restarted',
  /**
   * `{ messageId, value }`: the structured answer so far (`output_delta`), `value` the partial JSON value of
   * the text of message `messageId` (`null` while nothing parses). A CUSTOM event, not STATE_DELTA: it is
   * one answer's preview, replaced when the answer starts over, not state shared with the client.
   */
  outputDelta: 'loopctl.output_delta',
  /** `{ callId, name, arguments }`: a tool call waits for approval (`tool_approval_requested`). */
  approvalRequested: 'loopctl.approval_requested',
  /**
   * `{ cause, strategy, tokensBefore, contextWindow?, items }`: the history is being compacted before the turn's
   * request (`compaction_started`; docs/long-runs.md, "Compaction").
   */
  compactionStarted: 'loopctl.compaction_started',
  /**
   * `{ strategy, summaryId, items, tokensBefore, tokensAfter, usage?, error? }`: a summary replaced `items`
   * earlier messages (`compaction_completed`); `usage` in AG-UI's token names.
   */
  compactionCompleted: 'loopctl.compaction_completed',
  /** `{ at, graceMs? }`: a graceful stop was requested (`stop_requested`; `at` is its boundary). */
  stopRequested: 'loopctl.stop_requested',
  /**
   * `{ suspended }`: the run suspended for approval (`stopReason: 'needs_approval'`); `RUN_FINISHED` follows
   * with the `interrupt` outcome, one interrupt per pending call (`id` and `toolCallId`: the call id).
   */
  suspended: 'loopctl.suspended',
  /** `{ fromTurn }`: the run continues after its last journalled turn (`run_resumed`; docs/sessions.md). */
  runResumed: 'loopctl.run_resumed',
  /** `{ name, kind, mode, callId? }`: a guardrail began checking (`guardrail_started`; docs/guardrails.md). */
  guardrailStarted: 'loopctl.guardrail_started',
  /** `{ name, kind, callId? }`: a guardrail let what it checked through (`guardrail_passed`). */
  guardrailPassed: 'loopctl.guardrail_passed',
  /**
   * `{ name, kind, action, output, error?, retracted?, messageId? }`: a guardrail tripped (`guardrail_tripped`).
   * With `retracted: true` the answer of message `messageId` was taken back: a client drops that message.
   */
  guardrailTripped: 'loopctl.guardrail_tripped',
});

/** Every message id loopctl mints starts with this, so a client's copy of such a message is recognised. */
export const MINTED_ID_PREFIX = 'loopctl:';

/** The id of the assistant message of the model attempt whose `model_request_started` had `seq`. */
export function assistantMessageId(runId: string, seq: number): string {
  return `${MINTED_ID_PREFIX}${runId}:m${seq}`;
}

/** The id of the tool message a `TOOL_CALL_RESULT` for `callId` mints. */
export function toolResultMessageId(runId: string, callId: string): string {
  return `${MINTED_ID_PREFIX}${runId}:result:${callId}`;
}

/**
 * True for an id loopctl minted: the client got that message from a run's stream, and the server's own
 * record of it (the session, or nothing for a run that did not complete) is what counts, never the copy.
 */
export function isMintedMessageId(id: string): boolean {
  return id.startsWith(MINTED_ID_PREFIX);
}
