import type { AGUIEvent, Message } from '@ag-ui/core';
import { LOOPCTL_EVENTS } from '../ag-ui/names.js';
import {
  at,
  describe,
  find,
  isRecord,
  note,
  setSteer,
  settle,
  update,
  type ChatState,
  type OutcomeEntry,
  type ToolEntry,
  type UserEntry,
} from './entries.js';
import { COMPACTING_WORDS, budgetDetail, compactionWords, retryWords } from './wording.js';

export type {
  AnswerEntry,
  ChatState,
  Entry,
  LiveRun,
  NoteEntry,
  OutcomeEntry,
  Steer,
  ToolEntry,
  UserEntry,
} from './entries.js';
export { runActivity, settle } from './entries.js';

/**
 * The page's state and how each AG-UI event changes it: a pure reducer, so a reload can restore the state
 * saved with the id of the last frame applied and go on from the next frame (docs/ui.md, "The web app").
 */

/** A new conversation. */
export const initialState = (threadId: string): ChatState => ({ threadId, entries: [], steering: [] });

/** Everything that changes the state. */
export type Action =
  | { readonly type: 'send'; readonly id: string; readonly text: string }
  | { readonly type: 'run'; readonly runId: string }
  /** The run's stream says it waits for a worker (no frame yet). */
  | { readonly type: 'waiting' }
  /** The server's queue does not answer (its words); the page keeps attaching until it does. */
  | { readonly type: 'unavailable'; readonly notice: string }
  /** What `GET /api/queue` answered: its workers and the command that starts one. */
  | { readonly type: 'queue'; readonly workers: number; readonly start: string }
  | { readonly type: 'frame'; readonly id: string; readonly event: AGUIEvent }
  | { readonly type: 'stopping' }
  /** The Stop request failed (the run was not reached): it is not stopping, and Stop can be pressed again. */
  | { readonly type: 'stop_failed' }
  | { readonly type: 'steered'; readonly runId: string; readonly id: string; readonly text: string }
  | { readonly type: 'withdrawn'; readonly id: string }
  | { readonly type: 'decided'; readonly callId: string; readonly approve: boolean }
  /** A decision was sent for a call that no longer waits for one (the server answered `decided: false`). */
  | { readonly type: 'undecidable'; readonly callId: string }
  | { readonly type: 'lost'; readonly notice: string | undefined }
  | { readonly type: 'notice'; readonly notice: string | undefined };

/** The state after `action`. */
export function reduce(state: ChatState, action: Action): ChatState {
  switch (action.type) {
    case 'send': {
      const entries = [...state.entries, { kind: 'user', id: action.id, text: action.text } as const];
      return { ...state, entries, run: {}, notice: undefined, unavailable: undefined };
    }
    case 'run':
      // A stream answered: the queue is there again.
      return state.run ? { ...state, run: { ...state.run, runId: action.runId }, unavailable: undefined } : state;
    case 'waiting':
      return state.run ? { ...state, run: { ...state.run, waiting: true } } : state;
    case 'unavailable':
      return { ...state, unavailable: action.notice };
    case 'queue':
      // The queue answered: it is there (a run's stream re-attaches on its own).
      return { ...state, queue: { workers: action.workers, start: action.start }, unavailable: undefined };
    case 'frame':
      if (!state.run) return state; // a frame after the run ended (a late reader): already applied
      return applyEvent({ ...state, run: { ...state.run, lastEventId: action.id } }, action.event);
    case 'stopping':
      return state.run ? { ...state, run: { ...state.run, stopping: true } } : state;
    case 'stop_failed': {
      if (!state.run) return state;
      const { stopping: _s, ...run } = state.run;
      return { ...state, run };
    }
    case 'steered':
      // The injected event may have come first (a fast turn): then it is already listed.
      if (state.steering.some((s) => s.id === action.id)) return state;
      return {
        ...state,
        // A message sent as a new run that steered the thread's live run (another tab's) is not the start of that
        // run: it joins the conversation where its turn takes it (loopctl.steering_injected), listed queued till then.
        entries: state.entries.filter((e) => !(e.kind === 'user' && e.id === action.id && !e.steering)),
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
      return {
        ...state,
        entries: state.entries.map(settle),
        run: undefined,
        notice: action.notice,
        unavailable: undefined,
      };
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

/** True for the events that end a run's stream. */
export const isTerminal = (event: AGUIEvent): boolean => event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR';

function applyEvent(state: ChatState, event: AGUIEvent): ChatState {
  const { entries, run } = state;
  switch (event.type) {
    case 'RUN_STARTED': {
      // A worker took it (or a cancel ended it): it no longer waits.
      const { waiting: _w, ...started } = run ?? {};
      return { ...state, run: { ...started, runId: event.runId } };
    }
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
      const loopctl =
        isRecord(event.metadata) && isRecord(event.metadata['loopctl']) ? event.metadata['loopctl'] : undefined;
      // A tool error carries `error`; a sub-agent's surfaced call carries its `path` whatever its outcome.
      const failed = loopctl?.['error'] !== undefined;
      const outcome = loopctl?.['outcome'];
      const typed = outcome === 'rejected' || outcome === 'expired' || outcome === 'cancelled' ? outcome : undefined;
      // Its run's end cut it short (a terminal settles every open call): stopped if it ran, else not run.
      const cut = loopctl?.['run'] !== undefined ? (loopctl['ran'] === true ? 'stopped' : 'not_run') : undefined;
      const result = typeof event.content === 'string' ? event.content : JSON.stringify(event.content);
      return {
        ...state,
        entries: update(entries, 'tool', event.toolCallId, (e) => {
          const ended: ToolEntry = {
            ...e,
            result,
            status: cut ?? typed ?? (failed ? 'failed' : 'done'),
            approval: e.approval === 'pending' ? undefined : e.approval,
            ...at('endedAt', event.timestamp),
          };
          if (cut !== 'not_run') return ended;
          // It never ran: no duration to show.
          const { startedAt: _s, endedAt: _e, ...rest } = ended;
          return rest;
        }),
      };
    }
    case 'CUSTOM':
      return applyCustom(state, event.name, isRecord(event.value) ? event.value : {}, event.timestamp);
    case 'RUN_FINISHED': {
      const type = event.outcome?.type ?? 'success';
      // A graceful stop (Stop after this step) that reached its boundary: a success with result.stopReason 'stopped'.
      const stopReason = isRecord(event.result) ? event.result['stopReason'] : undefined;
      if (type === 'success' && stopReason === 'budget') {
        // A limit of the run's budget was reached: a success with result.stopReason 'budget' and its figures.
        const figures = isRecord(event.result) && isRecord(event.result['budget']) ? event.result['budget'] : {};
        const reason = budgetDetail(figures);
        const budget: OutcomeEntry = {
          kind: 'outcome',
          id: event.runId,
          outcome: 'budget',
          ...(reason ? { reason } : {}),
        };
        return ended(state, budget, event.timestamp);
      }
      const success = stopReason === 'stopped' ? 'stopped' : 'completed';
      const outcome = type === 'success' ? success : type === 'interrupt' ? 'suspended' : 'cancelled';
      return ended(state, { kind: 'outcome', id: event.runId, outcome }, event.timestamp);
    }
    case 'RUN_ERROR':
      return ended(
        state,
        {
          kind: 'outcome',
          id: run?.runId ?? '',
          outcome: 'failed',
          reason: event.message,
          ...(event.code === undefined ? {} : { code: event.code }),
        },
        event.timestamp,
      );
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
    case LOOPCTL_EVENTS.guardrailTripped: {
      // A guardrail took an answer back (docs/guardrails.md): the message it names is dropped from the page.
      if (value['retracted'] !== true) return state;
      const retracted = text('messageId');
      return { ...state, entries: entries.filter((e) => !(e.kind === 'answer' && e.id === retracted)) };
    }
    case LOOPCTL_EVENTS.toolProgress:
      return {
        ...state,
        entries: update(entries, 'tool', text('callId'), (e) => ({ ...e, progress: describe(value['progress']) })),
      };
    case LOOPCTL_EVENTS.approvalRequested: {
      const callId = text('callId');
      const args = typeof value['arguments'] === 'string' ? value['arguments'] : JSON.stringify(value['arguments']);
      // A sub-agent's call (any depth) carries the path of agent tools down to it.
      const path = Array.isArray(value['path']) ? value['path'].filter((p) => typeof p === 'string') : [];
      const card: ToolEntry = {
        kind: 'tool',
        id: callId,
        name: text('name'),
        args,
        status: 'running',
        ...(path.length > 0 ? { path } : {}),
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
    case LOOPCTL_EVENTS.compactionStarted:
      return note(state, COMPACTING_WORDS);
    case LOOPCTL_EVENTS.compactionCompleted:
      // The transcript's marker: what is above it was summarised (or left out) in what the model is sent.
      return note(state, compactionWords(value));
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
function ended(state: ChatState, outcome: OutcomeEntry, timestamp?: number): ChatState {
  const placed = state.entries.some((e) => e.kind === 'outcome' && e.id === outcome.id && outcome.id !== '');
  const entries = placed ? state.entries : [...state.entries, outcome];
  // Steering still queued stays in the thread's mailbox for the next run; injected steering is history now.
  const steering = state.steering.filter((s) => s.status === 'queued');
  return { ...state, entries: entries.map((e) => settle(e, timestamp)), steering, run: undefined };
}
