import { describeReason, serializeError, type RunEvent, type TerminalEvent, type Usage } from '../index.js';
import { isInstance } from '../describe.js';

/** A stream the renderer writes to (`process.stdout`, `process.stderr`, or a test double). */
export interface Output {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

interface RunningTool {
  readonly name: string;
  readonly args: string;
  readonly startedAt: number;
}

/** Redraw period of the live tool status on a terminal, in ms. */
export const STATUS_REDRAW_MS = 100;

/**
 * Shows a run in a terminal: answer text on `out` as it streams; on `err`,
 * a status line per tool (redrawn in place with `\r` while it runs when
 * `err` is a TTY, else one line when it ends), retries, and the final stop
 * reason with turns, tool calls and usage. Feed it every event with
 * {@link on}; it stops its own timer on the terminal event.
 */
export class TerminalRenderer {
  readonly #out: Output;
  readonly #err: Output;
  readonly #now: () => number;
  #outAtLineStart = true;
  #turns = 0;
  #toolCalls = 0;
  #textThisTurn = false;
  #running = new Map<string, RunningTool>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #statusShown = false;

  constructor(out: Output, err: Output, now: () => number = () => performance.now()) {
    this.#out = out;
    this.#err = err;
    this.#now = now;
  }

  /** Writes a `[loopctl] …` line on `err`. */
  note(text: string): void {
    this.line(`[loopctl] ${text}`);
  }

  /** Writes a whole line on `err`, first ending the answer's line and taking the live status away. */
  line(text: string): void {
    this.#clearStatus();
    if (!this.#outAtLineStart) this.#write('\n');
    this.#err.write(`${text}\n`);
    this.#drawStatus();
  }

  /** Renders one event. */
  on(event: RunEvent): void {
    switch (event.type) {
      case 'turn_started':
        this.#turns = event.turn;
        this.#textThisTurn = false;
        break;
      case 'user_message_injected':
        this.line(`[injected] ${event.content}`);
        break;
      case 'text_delta':
        if (event.delta === '') break;
        this.#clearStatus();
        this.#out.write(event.delta);
        this.#outAtLineStart = event.delta.endsWith('\n');
        this.#textThisTurn = true;
        this.#drawStatus();
        break;
      case 'model_response_completed':
        if (event.refusal) this.note(`the model refused: ${event.refusal}`);
        break;
      case 'tool_call_started':
        this.#toolCalls++;
        this.#running.set(event.callId, { name: event.name, args: clip(event.arguments, 60), startedAt: this.#now() });
        this.#startStatus();
        break;
      case 'tool_call_completed':
        this.#toolEnded(event.callId, 'ok');
        break;
      case 'tool_call_failed': {
        const outcome = event.interrupted ? 'interrupted' : `failed: ${clip(event.error.message, 120)}`;
        // A call that never started (unknown tool, bad arguments, denied by a hook) gets its line here.
        if (this.#running.has(event.callId)) this.#toolEnded(event.callId, outcome);
        else this.line(`[tool] ${event.name} · ${outcome}`);
        break;
      }
      case 'retry_scheduled':
        this.note(`model error, retrying in ${(event.delayMs / 1000).toFixed(1)}s (attempt ${event.attempt}): ${clip(event.error.message, 120)}`);
        break;
      case 'model_request_started':
        // A retry, rescue or fallback starts the answer over: say so rather than splice two attempts.
        if (event.attempt > 1 && this.#textThisTurn) {
          this.note('the answer starts over');
          this.#textThisTurn = false;
        }
        break;
      case 'fallback_activated':
        this.note(`falling back from ${event.from} to ${event.to}: ${event.reason}`);
        break;
      case 'run_completed':
        if (!this.#textThisTurn && event.output) this.#write(event.output);
        this.#finish(event);
        break;
      case 'run_cancelled':
      case 'run_failed':
        this.#finish(event);
        break;
      // Shown through the events above: a turn's end, progress and a sub-run's own events add no line.
      case 'run_started':
      case 'turn_completed':
      case 'tool_call_progress':
      case 'subrun_event':
        break;
      default:
        unhandled(event);
    }
  }

  /** Stops the status timer (idempotent). */
  dispose(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #write(text: string): void {
    this.#out.write(text);
    this.#outAtLineStart = text.endsWith('\n');
  }

  #toolEnded(callId: string, outcome: string): void {
    const tool = this.#running.get(callId);
    if (!tool) return;
    this.#running.delete(callId);
    if (this.#running.size === 0) this.dispose();
    this.line(`[tool] ${tool.name} ${tool.args} · ${seconds(this.#now() - tool.startedAt)} · ${outcome}`);
  }

  #startStatus(): void {
    if (!this.#err.isTTY) return;
    if (!this.#outAtLineStart) this.#write('\n');
    this.#drawStatus();
    this.#timer ??= setInterval(() => this.#drawStatus(), STATUS_REDRAW_MS);
    this.#timer.unref?.();
  }

  #drawStatus(): void {
    if (!this.#err.isTTY || this.#running.size === 0) return;
    const [first] = this.#running.values();
    const more = this.#running.size > 1 ? ` (+${this.#running.size - 1} more)` : '';
    this.#err.write(`\r\x1b[K⏵ ${first!.name} ${first!.args} · ${seconds(this.#now() - first!.startedAt)}${more}`);
    this.#statusShown = true;
  }

  #clearStatus(): void {
    if (!this.#statusShown) return;
    this.#err.write('\r\x1b[K');
    this.#statusShown = false;
  }

  #finish(event: TerminalEvent): void {
    for (const callId of [...this.#running.keys()]) this.#toolEnded(callId, 'interrupted');
    this.dispose();
    const calls = `${this.#toolCalls} tool call${this.#toolCalls === 1 ? '' : 's'}`;
    const stats = `${this.#turns} turn${this.#turns === 1 ? '' : 's'} · ${calls} · ${usage(event.usage)}`;
    this.note(`${stopReason(event)} · ${stats}`);
  }
}

/** A new event type in RunEventSchema that this renderer does not know fails to compile here. */
function unhandled(event: never): void {
  void event;
}

/**
 * The stop reason as the summary line shows it: `completed`, `cancelled (…)` or `failed (<stopReason>): …`.
 * A `session_error` adds that nothing of the run was saved (the run's session write failed).
 */
export function stopReason(event: TerminalEvent): string {
  switch (event.type) {
    case 'run_completed':
      return event.finishReason === 'stop' || event.finishReason === 'tool_calls'
        ? 'completed'
        : `completed (finish reason: ${event.finishReason})`;
    case 'run_cancelled':
      return `cancelled (reason: ${describe(event.reason)}, phase: ${event.phase})`;
    case 'run_failed': {
      const line = `failed (${event.stopReason}): ${event.error.name}: ${event.error.message}`;
      return event.stopReason === 'session_error' ? `${line} (nothing of this run was saved)` : line;
    }
  }
}

/** Total: a reason the caller made is shown however hostile it is ("[unprintable reason]" at worst). */
function describe(reason: unknown): string {
  if (!isInstance(reason, Error)) return describeReason(reason);
  const { name, message } = serializeError(reason);
  return `${name}: ${message}`;
}

/** Token usage; when some response reported none, "usage unknown" and what was counted as a lower bound. */
function usage(u: Usage): string {
  const counted = `${u.inputTokens} in + ${u.outputTokens} out = ${u.totalTokens} tokens`;
  if (u.reported) return `usage ${counted}`;
  const none = u.totalTokens === 0 && u.inputTokens === 0 && u.outputTokens === 0;
  return none ? 'usage unknown' : `usage unknown (at least ${counted})`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
