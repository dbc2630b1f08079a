/**
 * What the page says (src/web/wording.ts): every stop reason of StopReasonSchema and every cancel phase of
 * CancelPhaseSchema has words (walked from the schemas, so a new one cannot be forgotten), every cancel
 * reason loopctl gives reads as a sentence — as the page receives it, described by the AG-UI mapper — and
 * nothing a person reads is raw JSON or an internal name.
 */
import { describe, expect, it } from 'vitest';
import { describeValue } from '../src/describe.js';
import { CancelPhaseSchema, StopReasonSchema } from '../src/events.js';
import { DISCONNECTED_REASON } from '../src/http/index.js';
import { stopTimeoutReason } from '../src/control/stop.js';
import { DEADLINE_REASON } from '../src/engine/link-cancel.js';
import { budgetReason } from '../src/engine/budget/meter.js';
import { UNREADABLE_REASON } from '../src/cancel/abort-reason.js';
import { EVENT_STORE_UNAVAILABLE_REASON, WORKER_SHUTDOWN_REASON } from '../src/bullmq/worker.js';
import { RUN_ENDED_ELSEWHERE } from '../src/bullmq/worker-run.js';
import { runLine } from '../src/cli/worker/run-line.js';
import {
  PHASE_WORDS,
  argsLine,
  argsText,
  STOP_REASON_WORDS,
  cancelReasonWords,
  durationWords,
  outcomeWords,
  phaseWords,
  stopReasonWords,
} from '../src/web/wording.js';

/** Text with no internal name (snake_case), no JSON braces or quotes. */
const inWords = (text: string) => {
  expect(text).not.toMatch(/[a-z]+_[a-z]+/);
  expect(text).not.toMatch(/[{}[\]"]/);
  expect(text.trim()).not.toBe('');
};

describe('page wording', () => {
  it('every stop reason of StopReasonSchema has its own words, none the bare reason', () => {
    const reasons = StopReasonSchema.options;
    expect(Object.keys(STOP_REASON_WORDS).sort()).toEqual([...reasons].sort());
    for (const reason of reasons) {
      inWords(STOP_REASON_WORDS[reason]);
      expect(stopReasonWords(reason)).toBe(STOP_REASON_WORDS[reason]);
    }
    console.log(`${reasons.length} stop reasons worded: ${reasons.join(', ')}`);
    expect(stopReasonWords('a_reason_from_a_newer_server')).toBe('Failed.');
  });

  it('every cancel phase of CancelPhaseSchema has words', () => {
    const phases = CancelPhaseSchema.options;
    expect(Object.keys(PHASE_WORDS).sort()).toEqual([...phases].sort());
    for (const phase of phases) inWords(phaseWords(phase)!);
    expect(phaseWords('not_a_phase')).toBeUndefined();
  });

  it('the cancel reasons loopctl gives, as the page gets them (describeValue), read as sentences', () => {
    const cases: [unknown, string][] = [
      ['stopped by the user', 'You pressed Stop'],
      ['SIGINT', 'The server was stopped (Ctrl-C)'],
      ['SIGTERM', 'The server was stopped'],
      [
        stopTimeoutReason(25_000),
        'The server is restarting: the run was stopped after its current step (it waited 25 s for it)',
      ],
      [DISCONNECTED_REASON, 'The page that started the run closed its connection'],
      [{ type: 'deadline' }, 'The run took longer than its time limit (--timeout)'],
      [{ type: 'worker_shutdown' }, 'The worker running it is shutting down'],
      [{ type: 'event_store_unavailable' }, 'The queue (Redis) could not be reached'],
      [{ type: 'run_ended_elsewhere' }, 'The run had already ended on another worker'],
      [{ type: 'some_new_reason', detail: 1 }, 'It was stopped (some new reason)'],
      [{ no: 'type' }, 'It was stopped for a reason loopctl did not describe'],
      [[1, 2], 'It was stopped for a reason loopctl did not describe'],
      ['my own reason', 'It was stopped: my own reason'],
      ['', 'It was stopped without a reason'],
    ];
    for (const [reason, words] of cases) {
      const text = describeValue(reason, 'reason');
      expect([text, cancelReasonWords(text)]).toEqual([text, words]);
      if (typeof reason !== 'string') inWords(cancelReasonWords(text));
    }
    const timeout = describeValue(stopTimeoutReason(25_000));
    console.log(`${cases.length} cancel reasons worded, e.g. ${timeout} → ${cancelReasonWords(timeout)}`);
  });

  it('every cancel reason loopctl gives has words of its own on the page and on the worker line, never JSON', () => {
    // Every `{ type }` reason src/ gives a cancel: src/engine, src/control, src/http, src/cancel, src/bullmq.
    const reasons: unknown[] = [
      DEADLINE_REASON,
      DISCONNECTED_REASON,
      stopTimeoutReason(25_000),
      WORKER_SHUTDOWN_REASON,
      EVENT_STORE_UNAVAILABLE_REASON,
      RUN_ENDED_ELSEWHERE,
      UNREADABLE_REASON,
      budgetReason({ limit: 'maxTotalTokens', max: 10_000, used: 10_230 }),
      { type: 'abandoned' }, // a sub-run's step (src/engine/tool-call.ts, as-tool.ts)
      { type: 'interrupted', by: 'run-2' }, // queueRuns, ifBusy 'interrupt'
      { type: 'rolled_back', by: 'run-2' }, // queueRuns, ifBusy 'rollback'
    ];
    const lines: string[] = [];
    for (const reason of reasons) {
      const words = cancelReasonWords(describeValue(reason, 'reason'));
      inWords(words);
      // Not the fallback for a type loopctl does not know ("It was stopped (some type)").
      expect(words).not.toMatch(/^It was stopped \(/);
      const page = outcomeWords({ outcome: 'cancelled', phase: 'tool_call', reason: describeValue(reason, 'reason') });
      inWords(`${page.headline} ${page.detail}`);
      const line = runLine({
        type: 'ended',
        runId: 'r1',
        agent: 'a',
        terminal: 'run_cancelled',
        stopReason: 'cancelled',
        reason,
      });
      expect(line).toBe(`run r1: ended, Stopped. ${words}.`);
      lines.push(words);
    }
    console.log(`${reasons.length} reason types worded on the page and the worker line, e.g. ${lines.at(-1)}`);
  });

  it("a run whose worker was lost says what happened in words, not the queue's message", () => {
    const reason = 'the worker running this run (w-7f3a) was lost: its job stalled and its heartbeat expired';
    const words = outcomeWords({ outcome: 'failed', code: 'worker_lost', reason });
    expect(words.headline).toBe('Failed: the worker running it stopped answering. Nothing of this run was kept.');
    expect(words.detail).toMatch(/^The worker running this run stopped responding \(it was killed, froze, or lost/);
    expect(words.detail).not.toContain('w-7f3a');
  });

  it('an outcome line: a headline, and where and why for a cancel, the message for a failure', () => {
    expect(outcomeWords({ outcome: 'completed' })).toEqual({ headline: 'Done.' });
    expect(outcomeWords({ outcome: 'cancelled', phase: 'model_stream', reason: 'stopped by the user' })).toEqual({
      headline: 'Stopped.',
      detail: 'You pressed Stop while the model was answering.',
    });
    expect(
      outcomeWords({ outcome: 'cancelled', phase: 'tool_call', reason: '{"type":"stop_timeout","graceMs":25000}' }),
    ).toEqual({
      headline: 'Stopped.',
      detail:
        'The server is restarting: the run was stopped after its current step (it waited 25 s for it) ' +
        'while a tool was running.',
    });
    // The turn limit is said in the headline; of the engine's message only the number is kept, never `maxTurns`.
    const maxTurns = 'the run reached maxTurns (2) without a final answer';
    expect(outcomeWords({ outcome: 'failed', code: 'max_turns', reason: maxTurns })).toEqual({
      headline: STOP_REASON_WORDS.max_turns,
      detail: 'Its limit is 2 turns.',
    });
    expect(outcomeWords({ outcome: 'failed', code: 'max_turns' })).toEqual({ headline: STOP_REASON_WORDS.max_turns });
    expect(outcomeWords({ outcome: 'stopped' }).headline).toBe(STOP_REASON_WORDS.stopped);
    expect(outcomeWords({ outcome: 'suspended' }).headline).toBe(STOP_REASON_WORDS.needs_approval);
  });

  it('durations: milliseconds under 1 s, tenths under 10 s, whole seconds, then minutes', () => {
    expect([durationWords(42), durationWords(1234), durationWords(12_400), durationWords(125_000)]).toEqual([
      '42 ms',
      '1.2 s',
      '12 s',
      '2 min 5 s',
    ]);
  });

  it("a call's arguments: one line of key: value for a card's head (at most 100 characters), a key a line in full", () => {
    expect(argsLine('{"path":"notes.md","limit":3,"deep":{"a":[1]}}')).toBe(
      'path: notes.md, limit: 3, deep: {"a":[1]}',
    );
    expect(argsLine('{"content":"line 1\\nline 2"}')).toBe('content: line 1 line 2');
    expect(argsLine('not json\n at all')).toBe('not json at all');
    const long = argsLine(JSON.stringify({ text: 'x'.repeat(300) }));
    expect([long.length, long.endsWith('…')]).toEqual([100, true]);
    // In full: a key a line in words, never JSON text; a text of several lines as its lines, indented.
    expect(argsText('{"path":"a.md"}')).toBe('path: a.md');
    expect(argsText('{"path":"S.md","content":"# Title\\n\\n- one","deep":{"a":[1]}}')).toBe(
      'path: S.md\ncontent:\n  # Title\n  \n  - one\ndeep: {\n    "a": [\n      1\n    ]\n  }',
    );
    expect(argsText('{}')).toBe('no arguments');
    expect(argsText('[1,2]')).toBe('[\n  1,\n  2\n]');
    expect(argsText('{"path":')).toBe('{"path":'); // cut-off JSON as it came
  });
});
