import type { AGUIEvent, Message } from '@ag-ui/core';
import { LOOPCTL_EVENTS } from '../ag-ui/names.js';
import { retryWords, type RunActivity } from './wording.js';

/**
 * The page's state and how each AG-UI event changes it: a pure reducer, so a reload can restore the state
 * saved with the id of the last frame applied and go on from the next frame (docs/ui.md, "The web app").
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
  readonly status: 'running' | 'done' | 'failed' | 'stopped' | 'not_run';
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
 * failed (with reason and stop reason), suspended.
 */
export interface OutcomeEntry {
  readonly kind: 'outcome';
  /** The run id. */
  readonly id: string;
  readonly outcome: 'completed' | 'stopped' | 'cancelled' | 'failed' | 'suspended';
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
}

/** A new conversation. */
export const initialState = (threadId: string): ChatState => ({ threadId, entries: [], steering: [] });

/** Everything that changes the state. */
export type Action =
  | { readonly type: 'send'; readonly id: string; readonly text: string }
  | { readonly type: 'run'; readonly runId: string }
  | { readonly type: 'frame'; readonly id: string; readonly event: AGUIEvent }
  | { readonly type: 'stopping' }
  | { readonly type: 'steered'; readonly runId: string; readonly id: string; readonly text: string }
  | { readonly type: 'withdrawn'; readonly id: string }
  | { readonly type: 'decided'; readonly callId: string; readonly approve: boolean }
  /** A decision was sent for a call that no longer waits for one (the server answered `decided: false`). */
  | { readonly type: 'undecidable'; readonly callId: string }
  | { readonly type: 'lost'; readonly notice: string }
  | { readonly type: 'notice'; readonly notice: string | undefined };

/** The state after `action`. */
export function reduce(state: ChatState, action: Action): ChatState {
  switch (action.type) {
    case 'send': {
      const entries = [...state.entries, { kind: 'user', id: action.id, text: action.text } as const];
      return { ...state, entries, run: {}, notice: undefined };
    }
    case 'run':
      return state.run ? { ...state, run: { ...state.run, runId: action.runId } } : state;
    case 'frame':
      if (!state.run) return state; // a frame after the run ended (a late reader): already applied
      return applyEvent({ ...state, run: { ...state.run, lastEventId: action.id } }, action.event);
    case 'stopping':
      return state.run ? { ...state, run: { ...state.run, stopping: true } } : state;
    case 'steered':
      // The injected event may have come first (a fast turn): then it is already listed.
      if (state.steering.some((s) => s.id === action.id)) return state;
      return {
        ...state,
        steering: [...state.steering, { id: action.id, runId: action.runId, text: action.text, status: 'queued' }],
      };
    case 'withdrawn':
      return { ...state, steering: setSteer(state.steering, action.id, 'withdrawn') };
    case 'decided':
      return {
        ...state,
        entries: update(state.entries, 'tool', action.callId, (e) => ({
          ...e,
          approval: action.approve ? 'approved' : 'rejected',
        })),
      };
    case 'undecidable':
      return {
        ...state,
        entries: update(state.entries, 'tool', action.callId, (e) => ({ ...e, approval: 'closed' })),
        notice: 'That call no longer waits for a decision: it was decided already, or its run has ended.',
      };
    case 'lost':
      // The run is out of reach: nothing it had open goes on being shown as going on.
      return { ...state, entries: state.entries.map(settle), run: undefined, notice: action.notice };
    case 'notice':
      return { ...state, notice: action.notice };
  }
}

/** The conversation as AG-UI messages for the next run: user messages and loopctl's answers, with their ids. */
export function messagesOf(state: ChatState): Message[] {
  const out: Message[] = [];
  for (const e of state.entries) {
    if (e.kind === 'user') out.push({ id: e.id, role: 'user', content: e.text });
    else if (e.kind === 'answer') out.push({ id: e.id, role: 'assistant', content: e.text });
  }
  return out;
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
    running,
    awaitingApproval,
    writing,
  };
}

/** True for the events that end a run's stream. */
export const isTerminal = (event: AGUIEvent): boolean => event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR';

function applyEvent(state: ChatState, event: AGUIEvent): ChatState {
  const { entries, run } = state;
  switch (event.type) {
    case 'RUN_STARTED':
      return { ...state, run: { ...run, runId: event.runId } };
    case 'STEP_STARTED':
      return { ...state, run: { ...run, step: event.stepName } };
    case 'STEP_FINISHED':
      return { ...state, run: { ...run, step: undefined } };
    case 'TEXT_MESSAGE_START':
      if (find(entries, 'answer', event.messageId)) return state;
      return { ...state, entries: [...entries, { kind: 'answer', id: event.messageId, text: '', open: true }] };
    case 'TEXT_MESSAGE_CONTENT':
      return {
        ...state,
        entries: update(entries, 'answer', event.messageId, (e) => ({ ...e, text: e.text + event.delta })),
      };
    case 'TEXT_MESSAGE_END':
      return { ...state, entries: update(entries, 'answer', event.messageId, (e) => ({ ...e, open: false })) };
    case 'TOOL_CALL_START':
      // A card an approval request made: the call starts now and its arguments stream again (TOOL_CALL_ARGS).
      if (find(entries, 'tool', event.toolCallId))
        return {
          ...state,
          entries: update(entries, 'tool', event.toolCallId, (e) => ({
            ...e,
            args: '',
            ...at('startedAt', event.timestamp),
          })),
        };
      return {
        ...state,
        entries: [
          ...entries,
          {
            kind: 'tool',
            id: event.toolCallId,
            name: event.toolCallName,
            args: '',
            status: 'running',
            ...at('startedAt', event.timestamp),
          },
        ],
      };
    case 'TOOL_CALL_ARGS':
      return {
        ...state,
        entries: update(entries, 'tool', event.toolCallId, (e) => ({ ...e, args: e.args + event.delta })),
      };
    case 'TOOL_CALL_RESULT': {
      const failed = isRecord(event.metadata) && isRecord(event.metadata['loopctl']);
      const result = typeof event.content === 'string' ? event.content : JSON.stringify(event.content);
      return {
        ...state,
        entries: update(entries, 'tool', event.toolCallId, (e) => ({
          ...e,
          result,
          status: failed ? 'failed' : 'done',
          approval: e.approval === 'pending' ? undefined : e.approval,
          ...at('endedAt', event.timestamp),
        })),
      };
    }
    case 'CUSTOM':
      return applyCustom(state, event.name, isRecord(event.value) ? event.value : {}, event.timestamp);
    case 'RUN_FINISHED': {
      const type = event.outcome?.type ?? 'success';
      // A graceful stop (Stop after this step) that reached its boundary: a success with result.stopReason 'stopped'.
      const stopped = isRecord(event.result) && event.result['stopReason'] === 'stopped';
      const success = stopped ? 'stopped' : 'completed';
      const outcome = type === 'success' ? success : type === 'interrupt' ? 'suspended' : 'cancelled';
      return ended(state, { kind: 'outcome', id: event.runId, outcome });
    }
    case 'RUN_ERROR':
      return ended(state, {
        kind: 'outcome',
        id: run?.runId ?? '',
        outcome: 'failed',
        reason: event.message,
        ...(event.code === undefined ? {} : { code: event.code }),
      });
    default:
      return state;
  }
}

/** loopctl's own facts (docs/ui.md, "CUSTOM events"). */
function applyCustom(
  state: ChatState,
  name: string,
  value: Record<string, unknown>,
  timestamp: number | undefined,
): ChatState {
  const { entries } = state;
  const text = (key: string) => (typeof value[key] === 'string' ? (value[key] as string) : '');
  switch (name) {
    case LOOPCTL_EVENTS.steeringInjected: {
      const id = text('id');
      const user: UserEntry = { kind: 'user', id, text: text('content'), steering: true };
      const known = state.steering.some((s) => s.id === id);
      return {
        ...state,
        entries: find(entries, 'user', id) ? entries : [...entries, user],
        steering: known
          ? setSteer(state.steering, id, 'injected')
          : [...state.steering, { id, runId: state.run?.runId ?? '', text: user.text, status: 'injected' }],
      };
    }
    case LOOPCTL_EVENTS.answerRestarted: {
      // A new attempt starts the answer over: the message it replaces is dropped.
      const previous = text('previousMessageId');
      return { ...state, entries: entries.filter((e) => !(e.kind === 'answer' && e.id === previous)) };
    }
    case LOOPCTL_EVENTS.toolProgress:
      return {
        ...state,
        entries: update(entries, 'tool', text('callId'), (e) => ({ ...e, progress: describe(value['progress']) })),
      };
    case LOOPCTL_EVENTS.approvalRequested: {
      const callId = text('callId');
      const args = typeof value['arguments'] === 'string' ? value['arguments'] : JSON.stringify(value['arguments']);
      const card: ToolEntry = {
        kind: 'tool',
        id: callId,
        name: text('name'),
        args,
        status: 'running',
        ...at('startedAt', timestamp),
      };
      const listed = find(entries, 'tool', callId) ? entries : [...entries, card];
      return { ...state, entries: update(listed, 'tool', callId, (e) => ({ ...e, approval: 'pending' })) };
    }
    case LOOPCTL_EVENTS.retryScheduled:
      return note(state, retryWords(value));
    case LOOPCTL_EVENTS.fallbackActivated:
      return note(state, `The model ${text('from')} did not answer; using ${text('to')} instead.`);
    case LOOPCTL_EVENTS.stopRequested:
      return { ...note(state, 'Stopping after this step…'), run: { ...state.run, stopRequested: true } };
    case LOOPCTL_EVENTS.cancelled: {
      // RUN_FINISHED (cancelled) follows; the outcome card gets the phase and reason now.
      const undelivered = Array.isArray(value['undelivered']) ? value['undelivered'] : [];
      const queued = new Set(undelivered.map((u) => (isRecord(u) ? u['id'] : undefined)));
      const runId = state.run?.runId ?? '';
      const card: OutcomeEntry = {
        kind: 'outcome',
        id: runId,
        outcome: 'cancelled',
        phase: text('phase'),
        reason: text('reason'),
      };
      return {
        ...state,
        entries: [...entries, card],
        // Steering the run took is given back to the mailbox: queued again for the next run.
        steering: state.steering.map((s) => (queued.has(s.id) ? { ...s, status: 'queued' } : s)),
      };
    }
    default:
      return state;
  }
}

/**
 * The run ended: its outcome card (unless `loopctl.cancelled` placed it), no live run, and everything it had
 * open settled (see {@link settle}).
 */
function ended(state: ChatState, outcome: OutcomeEntry): ChatState {
  const placed = state.entries.some((e) => e.kind === 'outcome' && e.id === outcome.id && outcome.id !== '');
  const entries = placed ? state.entries : [...state.entries, outcome];
  // Steering still queued stays in the thread's mailbox for the next run; injected steering is history now.
  const steering = state.steering.filter((s) => s.status === 'queued');
  return { ...state, entries: entries.map(settle), steering, run: undefined };
}

/**
 * An entry once its run has ended: an open answer closed; a call still running `stopped` (the run's end
 * stopped it: a cancel kills a tool's work), a call still waiting for approval `not_run`, and no decision
 * left to take (a decision the server refused stays said: `closed`).
 */
export function settle(e: Entry): Entry {
  if (e.kind === 'answer') return e.open ? { ...e, open: false } : e;
  if (e.kind !== 'tool' || e.status !== 'running') return e;
  const waited = e.approval === 'pending' || e.approval === 'closed';
  const { approval: _dropped, ...rest } = e;
  if (waited) return { ...rest, status: 'not_run', ...(e.approval === 'closed' ? { approval: 'closed' } : {}) };
  return { ...rest, status: 'stopped', ...keep(e.approval) };
}

/** An approval that was given stays on the card (it was approved, then the run ended while it ran). */
const keep = (approval: ToolEntry['approval']) =>
  approval === 'approved' || approval === 'rejected' ? { approval } : {};

/** `{ [key]: timestamp }` when the event has one. */
const at = <K extends string>(key: K, timestamp: number | undefined) =>
  (timestamp === undefined ? {} : { [key]: timestamp }) as Partial<Record<K, number>>;

function note(state: ChatState, text: string): ChatState {
  const id = `note-${state.run?.lastEventId ?? state.entries.length}`;
  return { ...state, entries: [...state.entries, { kind: 'note', id, text }] };
}

function find<K extends Entry['kind']>(entries: readonly Entry[], kind: K, id: string) {
  return entries.find((e): e is Extract<Entry, { kind: K }> => e.kind === kind && e.id === id);
}

function update<K extends Entry['kind']>(
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

function setSteer(steering: readonly Steer[], id: string, status: Steer['status']): readonly Steer[] {
  return steering.map((s) => (s.id === id ? { ...s, status } : s));
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON value as one line of text. */
const describe = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v)));
