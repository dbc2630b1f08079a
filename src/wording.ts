import type { CancelPhase, StopReason } from './events.js';

/**
 * What a person reads on the page, in one place: how a run ended (every `stopReason` of src/events.ts), why a
 * cancelled run was cancelled (the reasons a page can be shown), where the cancel landed, and the run's
 * status line. Words, never internals or raw JSON ("What a person reads is in words", docs/ui.md). The
 * tables are `Record`s over the schemas' types, so a new stop reason or phase does not compile until it is
 * worded here; test/web-wording.test.ts walks the schemas' options as well.
 */

/** How a run with each stop reason ended, as the end of "The run …" (completed, failed, stopped, …). */
export const STOP_REASON_WORDS: Readonly<Record<StopReason, string>> = {
  completed: 'Done.',
  stopped: 'Stopped after its step, as you asked.',
  needs_approval: 'Paused: a tool call waits for approval before the run can go on.',
  budget: 'Stopped: the run reached its budget of tokens or cost. What it did so far was kept.',
  cancelled: 'Stopped.',
  max_turns: 'Gave up: the run reached its limit of turns (--max-turns) before it had an answer.',
  model_error: 'Failed: the model could not be reached or answered with an error.',
  configuration_error: 'Failed: loopctl is not set up right for this run (an option or the agent is wrong).',
  internal_error: 'Failed: loopctl ran into a problem of its own. Try again; if it repeats, report it.',
  session_error: 'Failed: the conversation could not be loaded or saved. Nothing of this run was kept.',
  output_invalid: 'Failed: the answer did not have the shape this agent must answer in.',
  worker_lost: 'Failed: the worker running it stopped answering. Nothing of this run was kept.',
  guardrail: 'Refused: a guardrail stopped the run. Nothing of this run was kept.',
};

/** Where a cancel landed (`run_cancelled.phase`), as "while …". */
export const PHASE_WORDS: Readonly<Record<CancelPhase, string>> = {
  turn_entry: 'before its next step',
  hook: 'while a hook ran',
  session_load: 'while the conversation was loading',
  model_request: 'while waiting for the model',
  model_stream: 'while the model was answering',
  stream_gate: 'while the model was answering',
  rescue: 'while the model was retried',
  between_tools: 'between tool calls',
  wave_boundary: 'between tool calls',
  tool_call: 'while a tool was running',
  backoff: 'while waiting to retry the model',
  dispatch: 'before its tool calls started',
  approval: 'while a tool call waited for approval',
  compaction: 'while the conversation was being summarised',
};

/**
 * The cancel reasons loopctl itself gives, by their `type` (src/control/stop.ts, src/engine, src/http,
 * src/bullmq), as a sentence without its full stop; `graceMs` of a stop timeout is in milliseconds.
 */
const REASON_TYPE_WORDS: Readonly<Record<string, (reason: Record<string, unknown>) => string>> = {
  stop_timeout: (r) =>
    `The server is restarting: the run was stopped after its current step${
      typeof r['graceMs'] === 'number' ? ` (it waited ${seconds(r['graceMs'])} for it)` : ''
    }`,
  deadline: () => 'The run took longer than its time limit (--timeout)',
  client_disconnected: () => 'The page that started the run closed its connection',
  worker_shutdown: () => 'The worker running it is shutting down',
  event_store_unavailable: () => 'The queue (Redis) could not be reached',
  run_ended_elsewhere: () => 'The run had already ended on another worker',
  unsubscribed: () => 'Nothing was following the run any more',
  abandoned: () => 'The step it belonged to was abandoned',
  interrupted: () => 'A new message on this conversation interrupted it; what it had done so far was kept',
  rolled_back: () => 'A new message on this conversation replaced it; what it had done was discarded',
  unreadable_reason: () => 'It was stopped for a reason that could not be read',
  budget: (r) => `The run reached its budget${budgetDetail(r) ? ` (${budgetDetail(r)})` : ''}`,
};

/** The cancel reasons that are words of loopctl's own (the page's Stop, the server's signals, the CLI). */
const REASON_TEXT_WORDS: Readonly<Record<string, string>> = {
  'stopped by the user': 'You pressed Stop',
  SIGINT: 'The server was stopped (Ctrl-C)',
  SIGTERM: 'The server was stopped',
  '/cancel': 'Stopped with /cancel',
  cancelled: 'It was cancelled', // loopctl/http's default reason of POST /runs/:runId/cancel
};

/**
 * Why a cancelled run was cancelled, as a sentence without its full stop. `reason` is `loopctl.cancelled`'s
 * text (a value described with `describeValue`: JSON text for an object). A known reason has its own words;
 * an object of an unknown `type` is named by that type in words; any other JSON is "for a reason loopctl did
 * not describe"; other text is someone's words and is quoted as it is.
 */
export function cancelReasonWords(reason: string | undefined): string {
  if (reason === undefined || reason.trim() === '') return 'It was stopped without a reason';
  const known = Object.hasOwn(REASON_TEXT_WORDS, reason) ? REASON_TEXT_WORDS[reason] : undefined;
  if (known !== undefined) return known;
  const json = parseJson(reason);
  if (json === NOT_JSON) return `It was stopped: ${reason.trim()}`;
  if (typeof json === 'string') return cancelReasonWords(json);
  if (isRecord(json) && typeof json['type'] === 'string') {
    const words = Object.hasOwn(REASON_TYPE_WORDS, json['type']) ? REASON_TYPE_WORDS[json['type']] : undefined;
    return words ? words(json) : `It was stopped (${json['type'].replace(/[_-]+/g, ' ').trim()})`;
  }
  return 'It was stopped for a reason loopctl did not describe';
}

/** Where a cancel landed, in words (an unknown phase: nothing). */
export function phaseWords(phase: string | undefined): string | undefined {
  return phase !== undefined && Object.hasOwn(PHASE_WORDS, phase) ? PHASE_WORDS[phase as CancelPhase] : undefined;
}

/** How a failed run ended, in words (`code` is its stop reason; an unknown one: "Failed."). */
export function stopReasonWords(code: string | undefined): string {
  return code !== undefined && Object.hasOwn(STOP_REASON_WORDS, code)
    ? STOP_REASON_WORDS[code as StopReason]
    : 'Failed.';
}

/** How a run ended, as the page's outcome line shows it. */
export interface OutcomeWords {
  /** One short sentence: "Done.", "Stopped.", "Failed: …". */
  readonly headline: string;
  /** More: why and where a cancel landed, the error's message. */
  readonly detail?: string;
}

/** What each budget limit counts, as "… of 10 000 total tokens". */
const LIMIT_WORDS: Readonly<Record<string, string>> = {
  maxInputTokens: 'input tokens',
  maxOutputTokens: 'output tokens',
  maxTotalTokens: 'total tokens',
  maxCost: 'cost',
};

/**
 * A budget's figures (`run_completed.budget`, a `budget` cancel reason: `{ limit, max, used, estimate? }`) in
 * words: "10 230 of 10 000 total tokens used", with "the next request needed about 900 more" when the check
 * before a call stopped it; '' when they are not figures.
 */
export function budgetDetail(figures: Record<string, unknown>): string {
  const { limit, max, used, estimate } = figures;
  if (typeof limit !== 'string' || typeof max !== 'number' || typeof used !== 'number') return '';
  const what = Object.hasOwn(LIMIT_WORDS, limit) ? LIMIT_WORDS[limit]! : limit;
  const n = (v: number) => (limit === 'maxCost' ? String(Math.round(v * 10_000) / 10_000) : v.toLocaleString('en-US'));
  const next = typeof estimate === 'number' ? `; the next request needed about ${n(estimate)} more` : '';
  return `${n(used)} of ${n(max)} ${what} used${next}`;
}

/** The outcome line of a run that ended `outcome` (see `OutcomeEntry` in state.ts). */
export function outcomeWords(o: {
  readonly outcome: 'completed' | 'stopped' | 'cancelled' | 'failed' | 'suspended' | 'budget';
  readonly phase?: string;
  readonly reason?: string;
  readonly code?: string;
}): OutcomeWords {
  switch (o.outcome) {
    case 'completed':
      return { headline: STOP_REASON_WORDS.completed };
    case 'stopped':
      return { headline: STOP_REASON_WORDS.stopped };
    case 'suspended':
      return { headline: STOP_REASON_WORDS.needs_approval };
    case 'budget': {
      const detail = o.reason?.trim();
      return { headline: STOP_REASON_WORDS.budget, ...(detail ? { detail: sentence(detail) } : {}) };
    }
    case 'cancelled': {
      const where = phaseWords(o.phase);
      const why = cancelReasonWords(o.reason);
      return { headline: STOP_REASON_WORDS.cancelled, detail: sentence(where ? `${why} ${where}` : why) };
    }
    case 'failed': {
      const message = o.reason?.trim();
      if (o.code === 'max_turns') {
        // The headline says it all; the engine's message would name the option (`maxTurns`): only the number.
        const limit = /\((\d+)\)/.exec(message ?? '')?.[1];
        return { headline: STOP_REASON_WORDS.max_turns, ...(limit ? { detail: `Its limit is ${limit} turns.` } : {}) };
      }
      // The queue's message names the worker's id, its job and its heartbeat: what happened, in words, instead.
      if (o.code === 'worker_lost') return { headline: STOP_REASON_WORDS.worker_lost, detail: WORKER_LOST_WORDS };
      return { headline: stopReasonWords(o.code), ...(message ? { detail: sentence(message) } : {}) };
    }
  }
}

/** Why a run ended `worker_lost` (`loopctl serve --queue`), after its headline. */
export const WORKER_LOST_WORDS =
  'The worker running this run stopped responding (it was killed, froze, or lost its connection to the queue), ' +
  'so nothing could reach it; the queue declared it lost once its heartbeat expired.';

/** What the page says while a Stop of a queued run's worker has not been answered for a while. */
export const SLOW_STOP_WORDS =
  'Stop is waiting for the worker running this run, which has not answered yet. If it stopped responding, ' +
  "the run ends as lost once the queue notices: within the worker's lock time (30 s with loopctl worker).";

/** While the page cannot reach `loopctl serve` (a connection refused or cut) and tries again to follow its run. */
export const CONNECTION_LOST_WORDS =
  'The connection to loopctl serve was lost; trying to reach it again… The run goes on on the server if the ' +
  'server is still running.';

/** A run the page gave up following because `loopctl serve` could not be reached (every attempt failed). */
export const UNREACHABLE_WORDS =
  'loopctl serve cannot be reached, so this run is out of reach: if the server stopped, start it again and open ' +
  'the address it prints.';

/** A run the page followed, refused by a server that no longer knows this page's token (a new launch). */
export const RELAUNCHED_WORDS =
  'loopctl serve was restarted, so this run is out of reach (the server that ran it is gone): open the address ' +
  'the new launch printed.';

/** A run the server no longer has (it was restarted, or forgot the run once its retention passed). */
export const RUN_GONE_WORDS =
  'loopctl serve no longer has this run (it was restarted, or forgot the run 10 minutes after it ended): what it ' +
  'did after what is shown here is not known.';

/** Steering sent as the run ended: the server took it for no run; the text stays in the box. */
export const STEER_TOO_LATE_WORDS =
  'The run ended before your message reached it, so it was not sent; it is still in the box: press Enter to send ' +
  'it as a new message.';

/** The status line of a run no worker has taken yet (`loopctl serve --queue`). */
export const WAITING_WORDS = 'Waiting for a worker…';

/** What the run is doing, for the status line (aria-live): see {@link statusWords}. */
export interface RunActivity {
  readonly known: boolean;
  readonly stopping?: boolean;
  readonly stopRequested?: boolean;
  /** The run waits for a worker to take it (a queue); Stop ends it at once. */
  readonly waiting?: boolean;
  /** Names of the tool calls running now (not waiting for approval). */
  readonly running: readonly string[];
  /** True when a call waits for the user's decision. */
  readonly awaitingApproval: boolean;
  /** True while an answer streams. */
  readonly writing: boolean;
}

/**
 * "Starting…", "Waiting for a worker…", "Thinking…", "Writing…", "Running read_file…", "Waiting for your
 * approval", "Stopping…".
 */
export function statusWords(a: RunActivity): string {
  if (a.stopping) return 'Stopping…';
  if (a.awaitingApproval) return 'Waiting for your approval';
  if (a.stopRequested) return 'Stopping after this step…';
  if (!a.known) return 'Starting…';
  if (a.waiting) return WAITING_WORDS;
  if (a.running.length === 1) return `Running ${a.running[0]}…`;
  if (a.running.length > 1) return `Running ${a.running.length} tools…`;
  if (a.writing) return 'Writing…';
  return 'Thinking…';
}

/** A retry note (`loopctl.retry_scheduled`'s `{ attempt, delayMs, error: { message } }`), in words. */
export function retryWords(value: Record<string, unknown>): string {
  const error =
    isRecord(value['error']) && typeof value['error']['message'] === 'string' ? value['error']['message'] : '';
  const delay = typeof value['delayMs'] === 'number' ? ` in ${seconds(value['delayMs'])}` : '';
  const attempt = typeof value['attempt'] === 'number' ? ` (attempt ${value['attempt']})` : '';
  return `The model did not answer${error ? ` (${error.trim()})` : ''}; trying again${delay}${attempt}.`;
}

/**
 * The transcript's marker of a compaction (`loopctl.compaction_completed`'s `{ strategy, items, tokensBefore,
 * tokensAfter, error? }`; docs/long-runs.md, "Compaction"), in words: "The earlier conversation was summarised
 * (40 messages; about 9,000 → 1,200 tokens)." or, for a truncation, "… was left out …".
 */
export function compactionWords(value: Record<string, unknown>): string {
  const items = typeof value['items'] === 'number' ? `${value['items'].toLocaleString('en-US')} messages` : '';
  const before = value['tokensBefore'];
  const after = value['tokensAfter'];
  const tokens =
    typeof before === 'number' && typeof after === 'number'
      ? `about ${before.toLocaleString('en-US')} → ${after.toLocaleString('en-US')} tokens`
      : '';
  const detail = [items, tokens].filter((t) => t !== '').join('; ');
  const what = value['strategy'] === 'truncate' ? 'left out to fit the model' : 'summarised to fit the model';
  const failed = isRecord(value['error']) ? ' because the summary could not be written' : '';
  return `The earlier conversation was ${what}${failed}${detail ? ` (${detail})` : ''}.`;
}

/** What the status shows while a compaction runs (`loopctl.compaction_started`). */
export const COMPACTING_WORDS = 'Summarising the earlier conversation…';

/** A duration in ms as "42 ms", "1.2 s", "12 s", "2 min 5 s". */
export function durationWords(ms: number): string {
  if (ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(Math.round(ms / 100) / 10).toFixed(1)} s`;
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** The status of a tool card, in words. */
export const TOOL_STATUS_WORDS = {
  running: 'running',
  done: 'done',
  failed: 'failed',
  rejected: 'rejected',
  expired: 'expired unanswered, not run',
  cancelled: 'cancelled',
  stopped: 'stopped',
  not_run: 'not run',
  awaiting: 'waiting for your approval',
} as const;

/**
 * A tool call's arguments (JSON text as the model wrote it) in full, in words: for a JSON object a key a line
 * (`path: notes.md`), a text of several lines as its lines indented below its key (what a write will write, as
 * it reads), any other value as indented JSON; `no arguments` for `{}`; other JSON indented; not JSON: as it came.
 */
export function argsText(args: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return args;
  }
  if (!isRecord(parsed)) return JSON.stringify(parsed, null, 2);
  const entries = Object.entries(parsed);
  if (entries.length === 0) return 'no arguments';
  const indent = (text: string) => text.replace(/\n/g, '\n  ');
  return entries
    .map(([key, value]) => {
      if (typeof value !== 'string') return `${key}: ${indent(JSON.stringify(value, null, 2) ?? String(value))}`;
      return value.includes('\n') ? `${key}:\n  ${indent(value)}` : `${key}: ${value}`;
    })
    .join('\n');
}

/**
 * Arguments on one line: `path: notes.md, limit: 3` for a JSON object, else the text; at most `max` characters
 * (default 100). Used by the page's tool cards and the CLI's `[tool]` lines.
 */
export function argsLine(args: string, max = 100): string {
  let line = args.replace(/\s+/g, ' ').trim();
  try {
    const parsed: unknown = JSON.parse(args);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      line = Object.entries(parsed)
        .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(', ')
        .replace(/\s+/g, ' ');
    }
  } catch {
    /* not JSON: as it came */
  }
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

const NOT_JSON = Symbol('not JSON');

/** `ms` as "25 s" (whole seconds), or "500 ms" under a second. */
const seconds = (ms: number): string => (ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`);

function parseJson(text: string): unknown {
  const t = text.trim();
  if (!/^[{["]/.test(t)) return NOT_JSON;
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return NOT_JSON;
  }
}

/** `text` with a capital first letter and a full stop. */
function sentence(text: string): string {
  const t = text.trim();
  const capital = t.charAt(0).toUpperCase() + t.slice(1);
  return /[.!?…]$/.test(capital) ? capital : `${capital}.`;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
