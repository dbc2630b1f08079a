/**
 * The CLI's terminal renderer, in-process with fake streams and clock:
 * terminal safety, feedback while waiting, answers written once
 * into a pipe and restarts named on a terminal, errors and usage that
 * name their cause.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunEvent } from '../src/events.js';
import { TerminalRenderer, type Output } from '../src/cli/render.js';
import { toJsonLine } from '../src/cli/json-line.js';

const base = { runId: 'r', seq: 0, turn: 1, at: 0 };
const usage = { inputTokens: 3, outputTokens: 2, totalTokens: 5, reported: true };
const ev = (e: Record<string, unknown>) => ({ ...base, ...e }) as RunEvent;
const started = (attempt = 1, extra: Record<string, unknown> = {}) =>
  ev({ type: 'model_request_started', model: 'm', attempt, stream: true, ...extra });
const responded = () => ev({ type: 'model_response_completed', finishReason: 'stop', usage });
const completed = (output: string, u: Record<string, unknown> = usage) =>
  ev({ type: 'run_completed', output, usage: u, finishReason: 'stop', undelivered: [] });

function fake(isTTY: boolean): Output & { text: string } {
  const out = { isTTY, columns: 80, text: '', write: (t: string) => void (out.text += t) };
  return out;
}

afterEach(() => vi.useRealTimers());

describe('TerminalRenderer', () => {
  it('run control: a stop is a note, a cancelled call is interrupted, a stopped run says stopped', () => {
    const out = fake(false);
    const err = fake(false);
    let now = 0;
    const r = new TerminalRenderer(out, err, () => now);
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    r.on(responded());
    r.on(ev({ type: 'tool_call_started', callId: 'c', name: 'fetch', arguments: '{}' }));
    r.on(ev({ type: 'stop_requested', stopAt: 'turn_end', graceMs: 30_000 }));
    now = 500;
    const error = { name: 'ToolCallCancelledError', message: 'cancelled by the user: slow' };
    r.on(ev({ type: 'tool_call_failed', callId: 'c', name: 'fetch', error, interrupted: true }));
    r.on(
      ev({
        type: 'run_completed',
        stopReason: 'stopped',
        output: '',
        usage,
        finishReason: 'tool_calls',
        undelivered: [],
      }),
    );
    expect(err.text).toBe(
      '[loopctl] stopping at the end of this turn (cancelled if not there within 30 s)\n' +
        '[tool] fetch · 0.5s · interrupted: cancelled by the user: slow\n' +
        '[loopctl] stopped (a graceful stop reached its boundary) · 1 turn · 1 tool call · ' +
        'usage 3 in + 2 out = 5 tokens\n',
    );
  });

  it('a compaction: no status off a TTY, one note with what was compacted; the summary call adds no line', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'turn_started' }));
    r.on(ev({ type: 'compaction_started', cause: 'threshold', strategy: 'summary', tokensBefore: 9000, items: 40 }));
    r.on(started());
    const usage2 = { inputTokens: 9000, outputTokens: 300, totalTokens: 9300, reported: true };
    const completed = {
      strategy: 'summary',
      summaryId: 's1',
      items: 40,
      tokensBefore: 9000,
      tokensAfter: 1200,
    } as const;
    r.on(ev({ type: 'compaction_completed', ...completed, usage: usage2 }));
    r.on(
      ev({ type: 'compaction_started', cause: 'context_length', strategy: 'summary', tokensBefore: 1300, items: 3 }),
    );
    const error = { name: 'CompactionError', message: 'compaction failed: m gave no summary: the summary was empty' };
    r.on(ev({ type: 'compaction_completed', ...completed, strategy: 'truncate', items: 3, tokensAfter: 900, error }));
    expect(err.text).toBe(
      '[loopctl] compacted: 40 earlier messages summarised · about 9000 → 1200 tokens\n' +
        '[loopctl] compacted: 3 earlier messages left out ' +
        '(compaction failed: m gave no summary: the summary was empty) · about 9000 → 900 tokens\n',
    );
    expect(out.text).toBe('');
  });

  it('on a terminal the status line says compacting… at once, through the summary call', () => {
    const out = fake(true);
    const err = fake(true);
    let now = 0;
    const r = new TerminalRenderer(out, err, () => now);
    r.on(ev({ type: 'turn_started' }));
    r.on(ev({ type: 'compaction_started', cause: 'threshold', strategy: 'summary', tokensBefore: 9000, items: 40 }));
    expect(err.text).toContain('compacting… summarising 40 earlier messages · 0 s');
    now = 2500;
    r.on(started());
    r.dispose();
    expect(err.text).not.toContain('waiting for');
  });

  it('off a TTY: each response on stdout once complete, one line per tool on stderr, then the stop reason', () => {
    const out = fake(false);
    const err = fake(false);
    let now = 0;
    const r = new TerminalRenderer(out, err, () => now);
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    r.on(ev({ type: 'text_delta', delta: 'Let me look' }));
    expect(out.text).toBe('');
    r.on(responded());
    r.on(ev({ type: 'tool_call_started', callId: 'c', name: 'read_file', arguments: '{"path":"a"}' }));
    now = 1500;
    r.on(ev({ type: 'tool_call_completed', callId: 'c', name: 'read_file', output: 'x' }));
    r.on(ev({ type: 'turn_started', turn: 2 }));
    r.on(started());
    r.on(ev({ type: 'text_delta', delta: 'Done.' }));
    r.on(responded());
    r.on(completed('Done.'));
    expect(out.text).toBe('Let me look\nDone.\n');
    expect(err.text).toBe(
      '[tool] read_file path: a · 1.5s · ok\n' +
        '[loopctl] completed · 2 turns · 1 tool call · usage 3 in + 2 out = 5 tokens\n',
    );
  });

  it('a continued run’s summary counts its turns from its start and says its tool calls and usage are since the continue', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'run_resumed', turn: 0, fromTurn: 1 }));
    r.on(ev({ type: 'turn_started', turn: 2 }));
    r.on(started());
    r.on(responded());
    r.on(completed('There are 3 files.'));
    expect(err.text).toBe(
      '[loopctl] continuing the stopped run from its last completed turn (turn 1)\n' +
        '[loopctl] completed · 2 turns, 1 of them before the stop · since the continue: 0 tool calls · ' +
        'usage 3 in + 2 out = 5 tokens\n',
    );
  });

  it('the run after a continued one, on the same renderer, counts its own turns and tool calls alone', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'run_started', turn: 0, runId: 'stopped' }));
    r.on(ev({ type: 'run_resumed', turn: 0, runId: 'stopped', fromTurn: 1 }));
    r.on(ev({ type: 'turn_started', turn: 2, runId: 'stopped' }));
    r.on(ev({ type: 'tool_call_started', turn: 2, runId: 'stopped', callId: 'c0', name: 'list_dir', arguments: '{}' }));
    r.on(ev({ type: 'tool_call_completed', turn: 2, runId: 'stopped', callId: 'c0', name: 'list_dir', result: 'a' }));
    r.on(completed('Done.'));
    err.text = '';
    r.on(ev({ type: 'run_started', turn: 0, runId: 'task' }));
    r.on(ev({ type: 'turn_started', turn: 1, runId: 'task' }));
    r.on(started());
    r.on(responded());
    r.on(completed('There are 3 files.'));
    expect(err.text).toBe('[loopctl] completed · 1 turn · 0 tool calls · usage 3 in + 2 out = 5 tokens\n');
  });

  it('a tool line shows its arguments as "key: value" words, like the page, never as JSON text', () => {
    const out = fake(false);
    const err = fake(false);
    let now = 0;
    const r = new TerminalRenderer(out, err, () => now);
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    r.on(responded());
    const write = '{"path":"SUMMARY.md","content":"# Summary\\n\\n- one"}';
    r.on(ev({ type: 'tool_call_started', callId: 'w', name: 'write_file', arguments: write }));
    r.on(ev({ type: 'tool_call_started', callId: 'l', name: 'list_dir', arguments: '{"recursive":true}' }));
    r.on(ev({ type: 'tool_call_started', callId: 'e', name: 'read_file', arguments: '{"path":"\u202eevil.md"}' }));
    r.on(ev({ type: 'tool_call_started', callId: 'n', name: 'now', arguments: '{}' }));
    now = 200;
    for (const [callId, name] of [
      ['w', 'write_file'],
      ['l', 'list_dir'],
      ['e', 'read_file'],
      ['n', 'now'],
    ]) {
      r.on(ev({ type: 'tool_call_completed', callId, name, output: 'x' }));
    }
    expect(err.text).toBe(
      '[tool] write_file path: SUMMARY.md, content: # Summary - one · 0.2s · ok\n' +
        '[tool] list_dir recursive: true · 0.2s · ok\n' +
        '[tool] read_file path: \\u202eevil.md · 0.2s · ok\n' +
        '[tool] now · 0.2s · ok\n',
    );
  });

  it('a structured answer: plain mode writes the raw text (output_delta adds nothing); --json lines carry value', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, () => 0);
    const value = { city: 'Paris' };
    const done = ev({
      type: 'run_completed',
      output: '{"city": "Paris"}',
      value,
      usage,
      finishReason: 'stop',
      undelivered: [],
    });
    for (const e of [
      ev({ type: 'turn_started' }),
      started(),
      ev({ type: 'text_delta', delta: '{"city": "Pa' }),
      ev({ type: 'output_delta', value: { city: 'Pa' } }),
      ev({ type: 'text_delta', delta: 'ris"}' }),
      ev({ type: 'output_delta', value }),
      responded(),
      done,
    ])
      r.on(e);
    expect(out.text).toBe('{"city": "Paris"}\n');
    expect(err.text).toBe('[loopctl] completed · 1 turn · 0 tool calls · usage 3 in + 2 out = 5 tokens\n');
    expect(JSON.parse(toJsonLine(done))).toMatchObject({ type: 'run_completed', output: '{"city": "Paris"}', value });
    const failed = fake(false);
    const r2 = new TerminalRenderer(fake(false), failed, () => 0);
    r2.on(
      ev({
        type: 'run_failed',
        stopReason: 'output_invalid',
        output: 'nope',
        partial: [],
        undelivered: [],
        usage,
        error: { name: 'OutputValidationError', message: 'the answer is not valid JSON: Unexpected token' },
      }),
    );
    expect(failed.text).toContain('[loopctl] failed (output_invalid): ');
  });

  it('on a TTY: the status line is redrawn in place while the tool runs, and a cancel marks it interrupted', () => {
    vi.useFakeTimers(); // no HTTP here: only the redraw timer
    const out = fake(true);
    const err = fake(true);
    let now = 0;
    const r = new TerminalRenderer(out, err, () => now);
    r.on(ev({ type: 'turn_started' }));
    r.on(ev({ type: 'tool_call_started', callId: 'c', name: 'run_shell', arguments: '{"command":"sleep 9"}' }));
    now = 1200;
    vi.advanceTimersByTime(100);
    expect(err.text).toContain('\r\x1b[K⏵ run_shell command: sleep 9 · 1.2s');
    r.on(ev({ type: 'run_cancelled', reason: 'SIGINT', phase: 'tool_call', partial: [], undelivered: [], usage }));
    expect(
      err.text.endsWith(
        '[loopctl] cancelled (reason: SIGINT, phase: tool_call) · 1 turn · 1 tool call · ' +
          'usage 3 in + 2 out = 5 tokens\n',
      ),
    ).toBe(true);
    expect(err.text).toContain('\r\x1b[K[tool] run_shell command: sleep 9 · 1.2s · interrupted\n');
    expect(vi.getTimerCount()).toBe(0);
  });

  it("loopctl's own typed cancel reasons read in words, never as JSON", () => {
    const cases = [
      [
        { type: 'stop_timeout', graceMs: 25_000 },
        'the server is restarting: the run was stopped after its current step (it waited 25 s for it)',
      ],
      [{ type: 'worker_shutdown' }, 'the worker running it is shutting down'],
      [{ type: 'event_store_unavailable' }, 'the queue (Redis) could not be reached'],
      [{ type: 'some_new_reason' }, 'it was stopped (some new reason)'],
    ] as const;
    const lines = cases.map(([reason]) => {
      const err = fake(false);
      const r = new TerminalRenderer(fake(false), err, () => 0);
      r.on(ev({ type: 'run_cancelled', reason, phase: 'turn_entry', partial: [], undelivered: [], usage }));
      return /\[loopctl\] cancelled \(reason: (.*), phase: turn_entry\)/.exec(err.text)?.[1] ?? err.text;
    });
    expect(lines).toEqual(cases.map(([, words]) => words));
  });

  it('prints a failed run with its error and a non-streamed answer', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'turn_started' }));
    const error = { name: 'ModelCallError', message: '401 bad key', status: 401 };
    r.on(ev({ type: 'run_failed', error, stopReason: 'model_error', partial: [], undelivered: [], usage }));
    expect(err.text).toContain('[loopctl] failed (model_error): 401 bad key · 1 turn');
    const r2 = new TerminalRenderer(out, err, () => 0);
    r2.on(ev({ type: 'run_completed', output: 'whole answer', usage, finishReason: 'length', undelivered: [] }));
    expect(out.text).toBe('whole answer\n');
    expect(err.text).toContain('completed (finish reason: length)');
  });
});

describe('terminal safety in the renderer', () => {
  it.each([true, false])('no control character from the model, a tool or a server gets out (TTY: %s)', (tty) => {
    const out = fake(tty);
    const err = fake(tty);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'turn_started' }));
    r.on(ev({ type: 'user_message_injected', id: 'u', content: 'steer\x1b[2J' }));
    r.on(started());
    r.on(ev({ type: 'text_delta', delta: 'a\x1b]0;title\x07b\r' }));
    r.on(ev({ type: 'text_delta', delta: '\nc\u202ed\u009b31m' }));
    r.on(responded());
    r.on(
      ev({ type: 'tool_call_started', callId: 'c', name: 'read\x1bx', arguments: '{"path":"evil\\u001b[2J\n.md"}' }),
    );
    const error = { name: 'Error', message: 'boom\x1b[31m\nsecond line' };
    r.on(ev({ type: 'tool_call_failed', callId: 'c', name: 'read\x1bx', error, interrupted: false }));
    r.on(completed('ignored'));
    expect(out.text).toBe('a\\x1b]0;title\\x07b\nc\\u202ed\\x9b31m\n');
    const shown = out.text + err.text.replace(/\r\x1b\[K|\x1b\[K|\x1b7|\x1b8/g, ''); // loopctl's own status sequences
    expect(shown).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/);
    expect(err.text).toContain('[injected] steer\\x1b[2J\n');
    expect(err.text).toContain(
      '[tool] read\\x1bx {"path":"evil\\u001b[2J .md"} · 0.0s · failed: boom\\x1b[31m second line\n',
    );
    if (!tty) expect(err.text).not.toContain('\x1b');
  });
});

describe('feedback while waiting, on a terminal only', () => {
  it('a wait shows after 1 s: what it waits for, elapsed seconds, its limit; a silent stream mid-line inline', () => {
    vi.useFakeTimers();
    const out = fake(true);
    const err = fake(true);
    let now = 0;
    const deadlines = { firstEventMs: 60_000, idleMs: 30_000, requestMs: 300_000 };
    const r = new TerminalRenderer(out, err, { now: () => now, deadlines });
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    now = 900;
    vi.advanceTimersByTime(100);
    expect(err.text).toBe('');
    now = 1950;
    vi.advanceTimersByTime(100);
    expect(err.text).toBe('\r\x1b[K⏵ waiting for m to start answering · 1 s (gives up at 60 s)');
    r.on(ev({ type: 'text_delta', delta: 'Half an' }));
    expect(out.text).toBe('Half an');
    expect(err.text.endsWith('\r\x1b[K')).toBe(true);
    now = 4100;
    vi.advanceTimersByTime(100);
    expect(err.text.endsWith('\x1b[K\x1b7  ⏵ stream silent · 2 s (gives up at 30 s)\x1b8')).toBe(true);
    r.on(ev({ type: 'text_delta', delta: ' answer' }));
    expect(err.text.endsWith('\x1b8\x1b[K')).toBe(true);
    expect(out.text).toBe('Half an answer');
    r.on(responded());
    r.on(completed('Half an answer'));
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a retry is announced with its cause and delay; the backoff counts down', () => {
    vi.useFakeTimers();
    const out = fake(true);
    const err = fake(true);
    let now = 0;
    const r = new TerminalRenderer(out, err, { now: () => now, baseURL: 'http://127.0.0.1:9/v1' });
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    const message = 'first_event deadline of 60000 ms expired';
    const error = { name: 'TimeoutError', message, kind: 'first_event', timeoutMs: 60_000 };
    r.on(ev({ type: 'retry_scheduled', attempt: 2, delayMs: 3200, error }));
    expect(err.text).toContain(
      '[loopctl] the model sent nothing within 60 s (first-event deadline): retrying in 3.2 s (attempt 2)\n',
    );
    now = 1100;
    vi.advanceTimersByTime(100);
    expect(err.text.endsWith('\r\x1b[K⏵ retrying in 3 s')).toBe(true);
    r.dispose();
  });

  it("once a retry is announced, the status line never shows the abandoned attempt's wait again", () => {
    vi.useFakeTimers();
    const out = fake(true);
    const err = fake(true);
    let now = 0;
    const deadlines = { firstEventMs: 3000, idleMs: 3000, requestMs: 3000 };
    const r = new TerminalRenderer(out, err, { now: () => now, deadlines });
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    now = 2950;
    vi.advanceTimersByTime(100);
    expect(err.text.endsWith('\r\x1b[K⏵ waiting for m to start answering · 2 s (gives up at 3 s)')).toBe(true);
    now = 3000; // the first-event deadline ends the attempt
    const error = { name: 'TimeoutError', message: 'x', kind: 'first_event', timeoutMs: 3000 };
    r.on(ev({ type: 'retry_scheduled', attempt: 2, delayMs: 1500, error }));
    const announced =
      '[loopctl] the model sent nothing within 3 s (first-event deadline): retrying in 1.5 s (attempt 2)\n';
    expect(err.text.endsWith(announced)).toBe(true); // nothing drawn after the announcement
    now = 3500;
    vi.advanceTimersByTime(100);
    expect(err.text.endsWith(announced)).toBe(true); // the backoff is not a second old yet
    now = 4100;
    vi.advanceTimersByTime(100);
    expect(err.text.endsWith(`${announced}\r\x1b[K⏵ retrying in 1 s`)).toBe(true);
    r.dispose();
  });

  it("nor after a rescue is announced (the silent stream's wait is not redrawn)", () => {
    vi.useFakeTimers();
    const out = fake(true);
    const err = fake(true);
    let now = 0;
    const deadlines = { firstEventMs: 3000, idleMs: 3000, requestMs: 3000 };
    const r = new TerminalRenderer(out, err, { now: () => now, deadlines });
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    r.on(ev({ type: 'text_delta', delta: 'Half\n' }));
    now = 2950;
    vi.advanceTimersByTime(100);
    expect(err.text.endsWith('\r\x1b[K⏵ stream silent · 2 s (gives up at 3 s)')).toBe(true);
    now = 3000;
    const error = { name: 'TimeoutError', message: 'x', kind: 'idle', timeoutMs: 3000 };
    r.on(started(2, { stream: false, cause: 'rescue', error }));
    const announced =
      "[loopctl] the stream broke (the model's stream went silent for 3 s (idle deadline)): " +
      'asking again without streaming; the answer starts over\n';
    expect(err.text.endsWith(announced)).toBe(true);
    now = 3500;
    vi.advanceTimersByTime(100);
    expect(err.text.endsWith(announced)).toBe(true);
    r.dispose();
  });

  it('nor after a fallback is announced', () => {
    vi.useFakeTimers();
    const err = fake(true);
    let now = 0;
    const r = new TerminalRenderer(fake(true), err, { now: () => now, deadlines: { firstEventMs: 3000 } });
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    now = 2950;
    vi.advanceTimersByTime(100);
    expect(err.text.endsWith('\r\x1b[K⏵ waiting for m to start answering · 2 s (gives up at 3 s)')).toBe(true);
    now = 3000;
    r.on(ev({ type: 'fallback_activated', from: 'm', to: 'f', reason: 'breaker open' }));
    expect(err.text.endsWith('[loopctl] falling back from m to f: breaker open\n')).toBe(true);
    r.on(started(2, { model: 'f', cause: 'fallback' }));
    now = 3500;
    vi.advanceTimersByTime(100);
    expect(err.text.endsWith('[loopctl] falling back from m to f: breaker open\n')).toBe(true);
    r.dispose();
  });

  it('off a terminal: no status line and no cursor sequence, ever', () => {
    vi.useFakeTimers();
    const err = fake(false);
    let now = 0;
    const r = new TerminalRenderer(fake(false), err, { now: () => now });
    r.on(started());
    now = 5000;
    vi.advanceTimersByTime(5000);
    expect(err.text).toBe('');
    expect(vi.getTimerCount()).toBe(0);
    r.dispose();
  });
});

describe('a restarted answer', () => {
  const rescue = started(2, {
    stream: false,
    cause: 'rescue',
    error: { name: 'ModelCallError', message: 'terminated', code: 'ECONNRESET', retryable: true },
  });

  it('into a pipe or a file: only the complete answer, once', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, { now: () => 0, baseURL: 'http://127.0.0.1:4000/v1' });
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    r.on(ev({ type: 'text_delta', delta: 'The answer is' }));
    r.on(rescue);
    r.on(ev({ type: 'text_delta', delta: 'The answer is 42.' }));
    r.on(responded());
    r.on(completed('The answer is 42.'));
    expect(out.text).toBe('The answer is 42.\n');
    expect(err.text).toContain(
      '[loopctl] the stream broke (cannot talk to 127.0.0.1:4000: connection reset by the server (ECONNRESET)): ' +
        'asking again without streaming\n',
    );
  });

  it('on a terminal: the answer streams, and the restart is one stderr line naming the cause', () => {
    const out = fake(true);
    const err = fake(true);
    const r = new TerminalRenderer(out, err, { now: () => 0, baseURL: 'http://127.0.0.1:4000/v1' });
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    r.on(ev({ type: 'text_delta', delta: 'The answer is' }));
    r.on(rescue);
    r.on(ev({ type: 'text_delta', delta: 'The answer is 42.' }));
    r.on(responded());
    r.on(completed('The answer is 42.'));
    expect(out.text).toBe('The answer is\nThe answer is 42.\n');
    const lines = err.text.split('\n').filter((l) => l.includes('[loopctl]'));
    expect(lines[0]).toBe(
      '[loopctl] the stream broke (cannot talk to 127.0.0.1:4000: connection reset by the server (ECONNRESET)): ' +
        'asking again without streaming; the answer starts over',
    );
    expect(lines).toHaveLength(2);
  });

  it('a cancelled run into a pipe: the unfinished answer is not written, and stderr says so', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(started());
    r.on(ev({ type: 'text_delta', delta: 'half' }));
    r.on(ev({ type: 'run_cancelled', reason: 'SIGINT', phase: 'model_stream', partial: [], undelivered: [], usage }));
    expect(out.text).toBe('');
    expect(err.text).toContain('[loopctl] the unfinished answer (4 characters) was not written to stdout\n');
  });
});

describe('causes and usage', () => {
  it('a connection error names the address and the errno; a 429 says when to retry', () => {
    const err = fake(false);
    const r = new TerminalRenderer(fake(false), err, { now: () => 0, baseURL: 'http://127.0.0.1:9/v1' });
    const refused = { name: 'ModelCallError', message: 'Connection error.', code: 'ECONNREFUSED', retryable: true };
    r.on(ev({ type: 'run_failed', error: refused, stopReason: 'model_error', partial: [], undelivered: [], usage }));
    expect(err.text).toContain('failed (model_error): cannot talk to 127.0.0.1:9: connection refused (ECONNREFUSED) ·');
    const limited = { name: 'ModelCallError', message: '429 slow down', status: 429, retryAfterMs: 120_000 };
    const r2 = new TerminalRenderer(fake(false), err, () => 0);
    r2.on(ev({ type: 'run_failed', error: limited, stopReason: 'model_error', partial: [], undelivered: [], usage }));
    expect(err.text).toContain('failed (model_error): rate limited, retry after 120 s (HTTP 429: 429 slow down) ·');
  });

  it('missing usage is shown as unknown, partly missing usage as a lower bound', () => {
    const err = fake(false);
    const none = { inputTokens: 0, outputTokens: 0, totalTokens: 0, reported: false };
    new TerminalRenderer(fake(false), err, () => 0).on(completed('x', none));
    expect(err.text).toContain('· usage unknown\n');
    new TerminalRenderer(fake(false), err, () => 0).on(completed('x', { ...usage, reported: false }));
    expect(err.text).toContain('· usage unknown (at least 3 in + 2 out = 5 tokens)\n');
  });

  it('a session_error says the run was not saved; a usage not reported says unknown', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'turn_started' }));
    const error = {
      name: 'TimeoutError',
      message: 'commit deadline of 30000 ms expired',
      kind: 'commit',
      timeoutMs: 30000,
    };
    const unknown = { inputTokens: 0, outputTokens: 0, totalTokens: 0, reported: false };
    r.on(ev({ type: 'run_failed', error, stopReason: 'session_error', partial: [], undelivered: [], usage: unknown }));
    expect(err.text).toBe(
      '[loopctl] failed (session_error): TimeoutError: commit deadline of 30000 ms expired ' +
        '(nothing of this run was saved)' +
        ' · 1 turn · 0 tool calls · usage unknown\n',
    );
  });

  it('a usage some responses did not report shows the counted part as a lower bound', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'turn_started' }));
    r.on(
      ev({
        type: 'run_completed',
        stopReason: 'completed',
        output: 'ok',
        usage: { ...usage, reported: false },
        finishReason: 'stop',
        undelivered: [],
      }),
    );
    expect(err.text).toBe(
      '[loopctl] completed · 1 turn · 0 tool calls · usage unknown (at least 3 in + 2 out = 5 tokens)\n',
    );
  });
});

describe('a steering notice while an answer streams', () => {
  /** One screen for both streams, as a terminal shows them (stderr a terminal too, or redirected). */
  function terminal(errIsTTY: boolean) {
    const screen = { text: '' };
    const stream = (isTTY: boolean): Output => ({ isTTY, columns: 80, write: (t: string) => void (screen.text += t) });
    return { screen, out: stream(true), err: stream(errIsTTY) };
  }

  it('mid-line, the notice waits for the end of the line; the line is never split', () => {
    const { screen, out, err } = terminal(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    r.on(ev({ type: 'text_delta', delta: 'The files are a.md and b' }));
    r.notice('[queued] also count the lines');
    r.notice('[queued] be brief');
    r.on(ev({ type: 'text_delta', delta: '.md, both short.\nThat is ' }));
    r.on(ev({ type: 'text_delta', delta: 'all.' }));
    r.on(responded());
    r.on(completed('ignored: already streamed'));
    expect(screen.text.split('\n')).toEqual([
      'The files are a.md and b.md, both short.',
      '[queued] also count the lines',
      '[queued] be brief',
      'That is all.',
      '[loopctl] completed · 1 turn · 0 tool calls · usage 3 in + 2 out = 5 tokens',
      '',
    ]);
  });

  it('at the start of a line the notice is written at once; mid-line with no newline to come, at the next line', () => {
    const { screen, out, err } = terminal(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    r.notice('[queued] first');
    r.on(ev({ type: 'text_delta', delta: 'Working on it' }));
    r.notice('[queued] second');
    r.on(responded());
    r.on(ev({ type: 'run_cancelled', reason: 'SIGINT', phase: 'model_stream', usage, undelivered: [] }));
    expect(screen.text.split('\n')).toEqual([
      '[queued] first',
      'Working on it',
      '[queued] second',
      '[loopctl] cancelled (reason: SIGINT, phase: model_stream) · 1 turn · 0 tool calls · ' +
        'usage 3 in + 2 out = 5 tokens',
      '',
    ]);
  });

  it('on a terminal, a held notice shows at once on the status line after the partial line, cursor restored', () => {
    const { screen, out, err } = terminal(true);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'turn_started' }));
    r.on(started());
    r.on(ev({ type: 'text_delta', delta: 'Working on it' }));
    r.notice('[queued] be brief');
    // After the text: erase to the end of the line, save the cursor, the status, restore the cursor.
    expect(screen.text).toBe('Working on it\x1b[K\x1b7  ⏵ [queued] be brief\x1b8');
    r.on(ev({ type: 'text_delta', delta: ', done.\n' }));
    expect(screen.text).toBe('Working on it\x1b[K\x1b7  ⏵ [queued] be brief\x1b8\x1b[K, done.\n[queued] be brief\n');
    r.dispose();
  });
});
