import type { RunActivity } from './wording.js';

/**
 * What the page's state is made of: the entries of the conversation (messages, tool call cards, notes,
 * outcomes), the steering messages and the live run, with the list helpers the reducer (state.ts) uses, how an
 * entry settles when its run ends, and what a live run is doing (its status line).
 */

/** A message the user typed; `steering` when it reached a live run through its mailbox. */
export interface UserEntry {
  readonly kind: 'user';
  readonly id: string;
  readonly text: string;
  readonly steering?: boolean;
}

/** An assistant message as it streams (`open` until `TEXT_MESSAGE_END`). */
export interface AnswerEntry {
  readonly kind: 'answer';
  readonly id: string;
  readonly text: string;
  readonly open: boolean;
}

/**
 * A tool call card: its arguments, last progress, result, and an approval while one is asked for. `stopped`:
 * the run ended (Stop, a failure) while the call ran; `not_run`: it ended before the call started (it was
 * waiting for approval, or queued behind others). Once the run has ended no card is `running` or `pending`.
 */
export interface ToolEntry {
  readonly kind: 'tool';
  /** The call id. */
  readonly id: string;
  readonly name: string;
  readonly args: string;
  /** A sub-agent's call: the agent tools from the root down to it (`loopctl.approval_requested.path`). */
  readonly path?: readonly string[];
  /**
   * `rejected` / `expired` / `cancelled`: the result's typed `outcome` (a person rejected it, its approval
   * request expired unanswered, `cancelToolCall`); `failed`: any other tool error.
   */
  readonly status: 'running' | 'done' | 'failed' | 'rejected' | 'expired' | 'cancelled' | 'stopped' | 'not_run';
  readonly progress?: string;
  readonly result?: string;
  /**
   * `pending` while the call waits for a decision (run control's approvals); `closed` when a decision was sent
   * for a call that no longer waited for one (it was decided, expired, or its run ended).
   */
  readonly approval?: 'pending' | 'approved' | 'rejected' | 'closed';
  /** When the call started and ended (the events' `timestamp`, ms since the epoch), for its duration. */
  readonly startedAt?: number;
  readonly endedAt?: number;
}

/** A line about the run itself: a retry, a fallback, a graceful stop requested. */
export interface NoteEntry {
  readonly kind: 'note';
  readonly id: string;
  readonly text: string;
}

/**
 * How a run ended: completed, stopped (a graceful stop reached its boundary), cancelled (with phase and reason),
 * failed (with reason and stop reason), suspended, budget (a limit of the run's budget was reached: `reason` has
 * its figures in words).
 */
export interface OutcomeEntry {
  readonly kind: 'outcome';
  /** The run id. */
  readonly id: string;
  readonly outcome: 'completed' | 'stopped' | 'cancelled' | 'failed' | 'suspended' | 'budget';
  readonly phase?: string;
  readonly reason?: string;
  /** The stop reason of a failed run (`max_turns`, `model_error`, …). */
  readonly code?: string;
}

/** One line of the conversation, in the order the page shows them. */
export type Entry = UserEntry | AnswerEntry | ToolEntry | NoteEntry | OutcomeEntry;

/** A steering message: `queued` in the mailbox, `injected` into a turn, or `withdrawn` before it was. */
export interface Steer {
  readonly id: string;
  /** The run it was pushed to (withdraw goes through that run, also after it ended). */
  readonly runId: string;
  readonly text: string;
  readonly status: 'queued' | 'injected' | 'withdrawn';
}

/** The live run: known by id once the server named it; `lastEventId` is the last frame applied. */
export interface LiveRun {
  readonly runId?: string;
  readonly lastEventId?: string;
  /** The step (turn) now running. */
  readonly step?: string;
  /** Stop was pressed: the page waits for the run's terminal event. */
  readonly stopping?: boolean;
  /** A graceful stop was asked for (Stop after this step). */
  readonly stopRequested?: boolean;
  /** The run waits for a worker to take it (a queue: `loopctl serve --queue`); it has no event yet. */
  readonly waiting?: boolean;
}

/** Everything the page shows; saved in `sessionStorage` so a reload resumes it. */
export interface ChatState {
  readonly threadId: string;
  readonly entries: readonly Entry[];
  /** Present from Send until the run's terminal event. */
  readonly run?: LiveRun;
  readonly steering: readonly Steer[];
  /** One line for the status region: what went wrong with the last action, or what is not available. */
  readonly notice?: string;
  /** The server's queue does not answer ("The queue is unavailable (…)"): shown until the run's stream is back. */
  readonly unavailable?: string;
  /** `serve --queue`: how many workers take its runs, and the command that starts one (from `GET /api/queue`). */
  readonly queue?: { readonly workers: number; readonly start: string };
}

/** What the live run is doing, from its state and its open cards (every card of an ended run is settled). */
export function runActivity(run: LiveRun, entries: readonly Entry[]): RunActivity {
  const running: string[] = [];
  let awaitingApproval = false;
  let writing = false;
  for (const e of entries) {
    if (e.kind === 'tool' && e.status === 'running') {
      if (e.approval === 'pending') awaitingApproval = true;
      else running.push(e.name);
    } else if (e.kind === 'answer' && e.open) writing = true;
  }
  return {
    known: run.runId !== undefined,
    ...(run.stopping ? { stopping: true } : {}),
    ...(run.stopRequested ? { stopRequested: true } : {}),
    ...(run.waiting ? { waiting: true } : {}),
    running,
    awaitingApproval,
    writing,
  };
}

/**
 * An entry once its run has ended: an open answer closed; a call still running `stopped` (the run's end
 * stopped it: a cancel kills a tool's work; it ran until `endedAt`, the run's end), a call still waiting for
 * approval `not_run`, and no decision
 * left to take (a decision the server refused stays said: `closed`).
 */
export function settle(e: Entry, endedAt?: number): Entry {
  if (e.kind === 'answer') return e.open ? { ...e, open: false } : e;
  if (e.kind !== 'tool' || e.status !== 'running') return e;
  const waited = e.approval === 'pending' || e.approval === 'closed';
  const { approval: _dropped, ...rest } = e;
  if (waited) return { ...rest, status: 'not_run', ...(e.approval === 'closed' ? { approval: 'closed' } : {}) };
  // It ran until the run ended: that is how long it took.
  const took = endedAt !== undefined && e.startedAt !== undefined ? { endedAt } : {};
  return { ...rest, status: 'stopped', ...keep(e.approval), ...took };
}

/** An approval that was given stays on the card (it was approved, then the run ended while it ran). */
const keep = (approval: ToolEntry['approval']) =>
  approval === 'approved' || approval === 'rejected' ? { approval } : {};

/** `{ [key]: timestamp }` when the event has one. */
export const at = <K extends string>(key: K, timestamp: number | undefined) =>
  (timestamp === undefined ? {} : { [key]: timestamp }) as Partial<Record<K, number>>;

/** `state` with a note (a line about the run) appended, named by the frame it came with. */
export function note(state: ChatState, text: string): ChatState {
  const id = `note-${state.run?.lastEventId ?? state.entries.length}`;
  return { ...state, entries: [...state.entries, { kind: 'note', id, text }] };
}

/** The entry of `kind` with `id`, if listed. */
export function find<K extends Entry['kind']>(entries: readonly Entry[], kind: K, id: string) {
  return entries.find((e): e is Extract<Entry, { kind: K }> => e.kind === kind && e.id === id);
}

/** `entries` with the entry of `kind` and `id` replaced by `change(it)` (unchanged when it is not listed). */
export function update<K extends Entry['kind']>(
  entries: readonly Entry[],
  kind: K,
  id: string,
  change: (e: Extract<Entry, { kind: K }>) => Extract<Entry, { kind: K }>,
): readonly Entry[] {
  const i = entries.findIndex((e) => e.kind === kind && e.id === id);
  if (i < 0) return entries;
  const next = entries.slice();
  next[i] = change(entries[i] as Extract<Entry, { kind: K }>);
  return next;
}

/** `steering` with the message `id` set to `status`. */
export function setSteer(steering: readonly Steer[], id: string, status: Steer['status']): readonly Steer[] {
  return steering.map((s) => (s.id === id ? { ...s, status } : s));
}

/** True for a plain object (not null, not an array). */
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON value as one line of text. */
export const describe = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v)));
