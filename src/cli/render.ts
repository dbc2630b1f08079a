import {
  describeReason,
  serializeError,
  type ModelRequestStarted,
  type RunEvent,
  type SerializedError,
  type TerminalEvent,
} from '../index.js';
import { isInstance, readProp } from '../describe.js';
import { argsLine, cancelReasonWords } from '../wording.js';
import { budgetText, costText, describeError, durationText, usageText } from './describe-error.js';
import type { Output } from './output.js';
import { sanitize, sanitizeLine, StreamSanitizer } from './sanitize.js';
import { StatusLine } from './status-line.js';
import { waitText, type Wait } from './wait-text.js';

/**
 * A finished tool call's line in the terminal (`[tool] name · …`), by its typed outcome: the error's
 * message follows. `failed` is any other tool error.
 */
export const TOOL_OUTCOME_WORDS = {
  failed: (message: string) => `failed: ${message}`,
  rejected: (message: string) => `rejected: ${message}`,
  expired: (message: string) => `approval expired unanswered, not run: ${message}`,
  cancelled: (message: string) => `interrupted: ${message}`,
} as const;

/** A stream the renderer writes to; its own file, so the status line can use it without importing this one. */
export type { Output } from './output.js';

/** Redraw period of the live status on a terminal, in ms. */
export const STATUS_REDRAW_MS = 100;
/** A wait (for the model, a silent stream, a backoff) shows on the status line once it is this old, in ms. */
export const STATUS_DELAY_MS = 1000;

/** What the renderer knows of the run's settings, to say what a wait is bounded by. */
export interface RenderSettings {
  /** Clock in ms (default `performance.now`). */
  readonly now?: () => number;
  /** The run's model deadlines in ms, shown next to a wait. */
  readonly deadlines?: { readonly firstEventMs?: number; readonly idleMs?: number; readonly requestMs?: number };
  /** The model server's URL, named by connection errors. */
  readonly baseURL?: string;
  /**
   * Whether a completed run is saved (a stored conversation) or kept in memory only (`--no-save`, or no SQLite
   * driver): the budget stop line says which. Unknown: it says what it did was kept.
   */
  readonly saved?: boolean;
}

interface RunningTool {
  /** The tool's name and its arguments in words (`read_file path: a.md`), sanitised and clipped. */
  readonly label: string;
  readonly startedAt: number;
}

/**
 * Shows a run in a terminal. The answer goes to `out`: on a terminal it
 * streams as it arrives; into a pipe or a file each model response is
 * written once it is complete, so a restarted answer (retry, rescue,
 * fallback) is never written twice. Everything else goes to `err` as whole
 * lines: a line per tool, retries and restarts with their cause, the stop
 * reason with turns, tool calls and usage. On a terminal `err` also gets a
 * live status line (see {@link StatusLine}): running tools, and any wait
 * older than {@link STATUS_DELAY_MS} with its elapsed seconds. All text that
 * loopctl did not write itself is sanitised ("terminal safety").
 * Feed it every event with {@link on}; it stops its own timer on the
 * terminal event.
 */
export class TerminalRenderer {
  readonly #out: Output;
  readonly #err: Output;
  readonly #now: () => number;
  readonly #settings: RenderSettings;
  readonly #status: StatusLine;
  readonly #streamed: boolean;
  readonly #sanitizer = new StreamSanitizer();
  #outAtLineStart = true;
  #column = 0;
  #turns = 0;
  /** The turn a continued run went on from (`run_resumed`): its tool calls and usage are not this process's. */
  #resumedFrom: number | undefined;
  #toolCalls = 0;
  #textThisTurn = false;
  /** Text of the current attempt: shown (streamed) or held (buffered). */
  #attemptText = '';
  #running = new Map<string, RunningTool>();
  /** Lines held by {@link notice} until the answer's line ends. */
  readonly #notices: string[] = [];
  #wait: Wait | undefined;
  /** Between `compaction_started` and `compaction_completed`: the summary call's requests keep the compaction wait. */
  #compacting = false;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(out: Output, err: Output, settings: RenderSettings | (() => number) = {}) {
    this.#out = out;
    this.#err = err;
    this.#settings = typeof settings === 'function' ? { now: settings } : settings;
    this.#now = this.#settings.now ?? (() => performance.now());
    this.#status = new StatusLine(err);
    this.#streamed = out.isTTY === true;
  }

  /** Writes a `[loopctl] …` line on `err` (`text` is loopctl's own: sanitise what it quotes). */
  note(text: string): void {
    this.line(`[loopctl] ${text}`);
  }

  /** Writes a whole line on `err`, first ending the answer's line and taking the live status away. */
  line(text: string): void {
    this.#status.clear();
    if (!this.#outAtLineStart) this.#write('\n');
    this.#err.write(`${text}\n`);
    this.#draw();
  }

  /**
   * A line that must not split the answer (the prompt loop's `[queued]`): written at once when the
   * answer is at the start of a line, else held and written as soon as the answer's line ends (a
   * newline in the stream, or the next {@link line}, or the run's end), so a streamed line is never
   * broken by it. While held it shows on the live status line, after the partial line (see
   * `StatusLine.drawInline`; stderr a terminal only).
   */
  notice(text: string): void {
    if (this.#outAtLineStart) return this.line(text);
    this.#notices.push(text);
    this.#draw(); // meanwhile on the status line, after the partial line (a terminal only)
    this.#ensureTimer();
  }

  /** Renders one event. */
  on(event: RunEvent): void {
    switch (event.type) {
      case 'turn_started':
        this.#turns = event.turn;
        this.#textThisTurn = false;
        break;
      case 'user_message_injected':
        this.line(`[injected] ${sanitizeLine(event.content)}`);
        break;
      case 'model_request_started':
        this.#requestStarted(event);
        break;
      case 'text_delta':
        this.#text(event.delta);
        break;
      case 'model_response_completed':
        this.#responseCompleted();
        if (event.refusal) this.note(`the model refused: ${sanitizeLine(event.refusal)}`);
        break;
      case 'tool_call_started': {
        this.#setWait(undefined);
        this.#toolCalls++;
        // The arguments as the page shows them (`path: a.md, limit: 3`), never JSON text; none: no words.
        const args = clip(argsLine(event.arguments), 60);
        const tool = { label: sanitizeLine(event.name) + (args === '' ? '' : ` ${args}`), startedAt: this.#now() };
        this.#running.set(event.callId, tool);
        this.#startStatus();
        break;
      }
      case 'tool_call_completed':
        this.#toolEnded(event.callId, 'ok');
        break;
      case 'tool_call_failed': {
        // interrupted: cancelled on its own (RunControl.cancelToolCall); the run goes on.
        const message = clip(String(event.error.message), 120);
        const outcome = TOOL_OUTCOME_WORDS[event.outcome ?? (event.interrupted ? 'cancelled' : 'failed')](message);
        // A call that never started (unknown tool, bad arguments, denied by a hook) gets its line here.
        if (this.#running.has(event.callId)) this.#toolEnded(event.callId, outcome);
        else this.line(`[tool] ${sanitizeLine(event.name)} · ${outcome}`);
        break;
      }
      case 'tool_approval_requested':
        // The question itself is asked by --confirm (`[confirm] name args` then `allow? [y/N]`): no line here.
        this.#setWait(undefined);
        break;
      case 'retry_scheduled':
        // The backoff replaces the abandoned attempt's wait before the line is written (which redraws the status).
        this.#setWait({ kind: 'backoff', since: this.#now(), until: this.#now() + event.delayMs });
        this.note(
          `${this.#describe(event.error)}: retrying in ${durationText(event.delayMs)} ` +
            `(attempt ${event.attempt})${this.#startsOver()}`,
        );
        break;
      case 'fallback_activated':
        this.#setWait(undefined); // the abandoned request's wait ends here; the fallback's request brings its own
        this.note(
          `falling back from ${sanitizeLine(event.from)} to ${sanitizeLine(event.to)}: ` +
            `${sanitizeLine(event.reason)}${this.#startsOver()}`,
        );
        break;
      case 'compaction_started':
        this.#responseCompleted();
        this.#compacting = true;
        this.#setWait({ kind: 'compaction', since: this.#now(), items: event.items });
        this.#startStatus();
        break;
      case 'compaction_completed': {
        this.#compacting = false;
        this.#setWait(undefined);
        const what = event.strategy === 'summary' ? 'summarised' : 'left out';
        const failed = event.error === undefined ? '' : ` (${sanitizeLine(String(event.error.message))})`;
        this.note(
          `compacted: ${event.items} earlier messages ${what}${failed} · ` +
            `about ${event.tokensBefore} → ${event.tokensAfter} tokens`,
        );
        break;
      }
      case 'stop_requested': {
        const where = event.stopAt === 'turn_end' ? 'the end of this turn' : 'the end of the running tool calls';
        const grace =
          event.graceMs === undefined ? '' : ` (cancelled if not there within ${durationText(event.graceMs)})`;
        this.note(`stopping at ${where}${grace}`);
        break;
      }
      case 'run_resumed':
        this.#resumedFrom = event.fromTurn;
        this.note(
          event.fromTurn === 0
            ? 'continuing the stopped run in its first turn, from the tool calls it had asked for'
            : `continuing the stopped run from its last completed turn (turn ${event.fromTurn})`,
        );
        break;
      case 'run_completed':
        if (!this.#textThisTurn && event.output) this.#write(sanitize(event.output));
        this.#finish(event);
        break;
      case 'run_cancelled':
      case 'run_failed':
        this.#finish(event);
        break;
      case 'guardrail_tripped': {
        const what = event.retracted ? '; the answer above is withdrawn' : '';
        this.note(`guardrail ${sanitizeLine(event.name)} refused the ${guardKindWords(event.kind)}${what}`);
        break;
      }
      // A guardrail that starts or passes adds no line: only a refusal is news.
      case 'guardrail_started':
      case 'guardrail_passed':
        break;
      // Shown through the events above: a turn's end, progress and a sub-run's own events add no line.
      // The answer's text is shown as it streams; its partial value adds nothing (`--json` has it).
      case 'run_started':
        // One renderer may show several runs (a stopped run continued, then the task): each counts its own.
        this.#turns = 0;
        this.#toolCalls = 0;
        this.#resumedFrom = undefined;
        break;
      case 'output_delta':
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

  #describe(error: SerializedError): string {
    return describeError(error, this.#settings.baseURL === undefined ? {} : { baseURL: this.#settings.baseURL });
  }

  /** `; the answer starts over` when text of the attempt being abandoned was shown. */
  #startsOver(): string {
    return this.#streamed && this.#attemptText !== '' ? '; the answer starts over' : '';
  }

  #requestStarted(event: ModelRequestStarted): void {
    if (this.#compacting) return; // the summary's request: the status line says "compacting…"
    // The new request's wait replaces the old one first: the lines below redraw the status.
    this.#setWait({ kind: 'model', since: this.#now(), model: sanitizeLine(event.model), stream: event.stream });
    if (event.cause === 'rescue') {
      const why = event.error ? this.#describe(event.error) : 'the stream broke';
      this.note(`the stream broke (${why}): asking again without streaming${this.#startsOver()}`);
    } else if (event.attempt > 1 && event.cause === undefined && this.#startsOver() !== '') {
      this.note('the answer starts over');
    }
    this.#attemptText = ''; // a pipe or a file never gets the abandoned attempt's text
    this.#sanitizer.reset();
  }

  #text(delta: string): void {
    if (delta === '') return;
    this.#attemptText += delta;
    if (this.#streamed) {
      this.#status.clear();
      this.#write(this.#sanitizer.push(delta));
      this.#textThisTurn = true;
    }
    this.#setWait({ kind: 'silence', since: this.#now() });
  }

  #responseCompleted(): void {
    this.#setWait(undefined);
    if (this.#streamed) this.#write(this.#sanitizer.flush());
    else if (this.#attemptText !== '') {
      this.#write(sanitize(this.#attemptText));
      this.#textThisTurn = true;
    }
    this.#attemptText = '';
  }

  #write(text: string): void {
    if (text === '') return;
    const first = this.#notices.length > 0 ? text.indexOf('\n') : -1;
    if (first >= 0 && first < text.length - 1) {
      // The held notices go right after the line that ends here, before the rest of the text.
      this.#write(text.slice(0, first + 1));
      return this.#write(text.slice(first + 1));
    }
    this.#out.write(text);
    const nl = text.lastIndexOf('\n');
    this.#column = nl < 0 ? this.#column + text.length : text.length - nl - 1;
    this.#outAtLineStart = text.endsWith('\n');
    if (this.#outAtLineStart && this.#notices.length > 0) {
      this.#status.clear();
      for (const notice of this.#notices.splice(0)) this.#err.write(`${notice}\n`);
    }
  }

  #toolEnded(callId: string, outcome: string): void {
    const tool = this.#running.get(callId);
    if (!tool) return;
    this.#running.delete(callId);
    this.line(`[tool] ${tool.label} · ${seconds1(this.#now() - tool.startedAt)} · ${outcome}`);
    this.#ensureTimer();
  }

  #setWait(wait: Wait | undefined): void {
    this.#wait = wait;
    if (wait === undefined && this.#running.size === 0) this.#status.clear();
    this.#ensureTimer();
  }

  #startStatus(): void {
    if (!this.#status.enabled) return;
    if (!this.#outAtLineStart) this.#write('\n');
    this.#draw();
    this.#ensureTimer();
  }

  /** Runs the redraw timer while there is something to show on a terminal. */
  #ensureTimer(): void {
    const waiting = this.#running.size > 0 || this.#wait !== undefined || this.#notices.length > 0;
    const needed = this.#status.enabled && waiting;
    if (!needed) return this.dispose();
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.#draw(), STATUS_REDRAW_MS);
    this.#timer.unref?.();
  }

  #draw(): void {
    if (!this.#status.enabled) return;
    const now = this.#now();
    if (this.#running.size > 0) {
      const [first] = this.#running.values();
      const more = this.#running.size > 1 ? ` (+${this.#running.size - 1} more)` : '';
      return this.#status.drawLine(`${first!.label} · ${seconds1(now - first!.startedAt)}${more}`);
    }
    if (this.#notices.length > 0 && !this.#outAtLineStart) {
      return this.#status.drawInline(this.#notices.join(' · '), this.#column);
    }
    const wait = this.#wait;
    if (wait === undefined || (wait.kind !== 'compaction' && now - wait.since < STATUS_DELAY_MS)) return;
    const text = waitText(wait, now, this.#settings.deadlines ?? {});
    if (this.#streamed && !this.#outAtLineStart) this.#status.drawInline(text, this.#column);
    else this.#status.drawLine(text);
  }

  #finish(event: TerminalEvent): void {
    for (const callId of [...this.#running.keys()]) this.#toolEnded(callId, 'interrupted');
    this.#wait = undefined;
    this.#status.clear();
    this.dispose();
    if (this.#streamed) this.#write(this.#sanitizer.flush());
    else if (this.#attemptText !== '') {
      const n = this.#attemptText.length;
      this.note(`the unfinished answer (${n} character${n === 1 ? '' : 's'}) was not written to stdout`);
    }
    this.#attemptText = '';
    const calls = `${this.#toolCalls} tool call${this.#toolCalls === 1 ? '' : 's'}`;
    const cost = event.cost === undefined ? '' : ` · ${costText(event.cost)}`;
    const turns = `${this.#turns} turn${this.#turns === 1 ? '' : 's'}`;
    // A continued run: its turns count from its start, its tool calls and usage from the continue (the stopped
    // process's are not journalled), and the line says so.
    const from = this.#resumedFrom;
    const stats =
      from === undefined
        ? `${turns} · ${calls} · ${usageText(event.usage)}${cost}`
        : `${turns}, ${from} of them before the stop · since the continue: ${calls} · ${usageText(event.usage)}${cost}`;
    this.note(`${this.stopReason(event)} · ${stats}`);
  }

  /** The stop reason as the summary line shows it (see {@link stopReason}). */
  stopReason(event: TerminalEvent): string {
    const { baseURL, saved } = this.#settings;
    return stopReason(event, {
      ...(baseURL === undefined ? {} : { baseURL }),
      ...(saved === undefined ? {} : { saved }),
    });
  }
}

/**
 * The stop reason as the summary line shows it: `completed`, `stopped (…)`, `budget (…)`,
 * `cancelled (reason: …, phase: …)` or `failed (<stopReason>): <cause>`; a `session_error` adds that nothing of
 * the run was saved. A budget stop says where what it did went: saved (`context.saved` true), kept in memory and
 * not saved (false), or kept (unknown). Total: a hostile cancel reason is described, never thrown on ("foreign
 * values are never trusted").
 */
export function stopReason(
  event: TerminalEvent,
  context: { readonly baseURL?: string; readonly saved?: boolean } = {},
): string {
  switch (event.type) {
    case 'run_completed':
      if (event.stopReason === 'needs_approval') {
        const n = event.suspended?.pending.length ?? 0;
        return `needs_approval (suspended: ${n} call${n === 1 ? '' : 's'} awaiting a decision; nothing was saved)`;
      }
      if (event.stopReason === 'stopped') return 'stopped (a graceful stop reached its boundary)';
      if (event.stopReason === 'budget') {
        const figures = event.budget === undefined ? '' : `: ${budgetText(event.budget)}`;
        const kept =
          context.saved === undefined ? 'was kept' : context.saved ? 'was saved' : 'was kept in memory, not saved';
        return `budget (the run reached a limit of its budget${figures}; what it did ${kept})`;
      }
      return event.finishReason === 'stop' || event.finishReason === 'tool_calls'
        ? 'completed'
        : `completed (finish reason: ${event.finishReason})`;
    case 'run_cancelled':
      return `cancelled (reason: ${sanitizeLine(describeCancel(event.reason))}, phase: ${event.phase})`;
    case 'run_failed': {
      const line = `failed (${event.stopReason}): ${describeError(event.error, context)}`;
      if (event.stopReason === 'worker_lost') return `${line} (the worker running it was lost)`;
      return event.stopReason === 'session_error' ? `${line} (nothing of this run was saved)` : line;
    }
  }
}

/** A new event type in RunEventSchema that this renderer does not know fails to compile here. */
function unhandled(event: never): void {
  void event;
}

/**
 * A cancel reason in words: an Error as `name: message`; one of loopctl's own typed reasons
 * (`{ type: 'stop_timeout', graceMs }`, `worker_shutdown`, …) in the words the page uses (src/wording.ts),
 * never as JSON; any other value described.
 */
function describeCancel(reason: unknown): string {
  const type = readProp(reason, 'type');
  if (typeof type === 'string' && !isInstance(reason, Error)) {
    const words = cancelReasonWords(describeReason(reason));
    return words.charAt(0).toLowerCase() + words.slice(1);
  }
  if (!isInstance(reason, Error)) return describeReason(reason);
  const { name, message } = serializeError(reason);
  return `${name}: ${message}`;
}

function seconds1(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

/** One sanitised line of at most `max` characters (whitespace runs folded). */
function clip(text: string, max: number): string {
  const flat = sanitizeLine(text.replace(/[ \t\r\n]+/g, ' '));
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** What a guardrail of `kind` checked, in words. */
function guardKindWords(kind: 'input' | 'output' | 'tool_before' | 'tool_after'): string {
  if (kind === 'input') return 'input';
  if (kind === 'output') return 'answer';
  return kind === 'tool_before' ? "tool call's arguments" : "tool call's result";
}
