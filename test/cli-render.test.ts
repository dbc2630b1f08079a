/** The CLI's terminal renderer, in-process with fake streams and clock. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunEvent } from '../src/events.js';
import { TerminalRenderer, type Output } from '../src/cli/render.js';

const base = { runId: 'r', seq: 0, turn: 1, at: 0 };
const usage = { inputTokens: 3, outputTokens: 2, totalTokens: 5, reported: true };
const ev = (e: Record<string, unknown>) => ({ ...base, ...e }) as RunEvent;

function fake(isTTY: boolean): Output & { text: string } {
  const out = { isTTY, text: '', write: (t: string) => void (out.text += t) };
  return out;
}

afterEach(() => vi.useRealTimers());

describe('TerminalRenderer', () => {
  it('off a TTY: text on stdout, one line per tool on stderr, then the stop reason', () => {
    const out = fake(false);
    const err = fake(false);
    let now = 0;
    const r = new TerminalRenderer(out, err, () => now);
    r.on(ev({ type: 'turn_started' }));
    r.on(ev({ type: 'text_delta', delta: 'Let me look' }));
    r.on(ev({ type: 'tool_call_started', callId: 'c', name: 'read_file', arguments: '{"path":"a"}' }));
    now = 1500;
    r.on(ev({ type: 'tool_call_completed', callId: 'c', name: 'read_file', output: 'x' }));
    r.on(ev({ type: 'turn_started', turn: 2 }));
    r.on(ev({ type: 'text_delta', delta: 'Done.' }));
    r.on(ev({ type: 'run_completed', output: 'Done.', usage, finishReason: 'stop', undelivered: [] }));
    expect(out.text).toBe('Let me look\nDone.\n');
    expect(err.text).toBe(
      '[tool] read_file {"path":"a"} · 1.5s · ok\n[loopctl] completed · 2 turns · 1 tool call · usage 3 in + 2 out = 5 tokens\n',
    );
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
    expect(err.text).toContain('\r\x1b[K⏵ run_shell {"command":"sleep 9"} · 1.2s');
    r.on(ev({ type: 'run_cancelled', reason: 'SIGINT', phase: 'tool_call', partial: [], undelivered: [], usage }));
    expect(err.text.endsWith('[loopctl] cancelled (reason: SIGINT, phase: tool_call) · 1 turn · 1 tool call · usage 3 in + 2 out = 5 tokens\n')).toBe(true);
    expect(err.text).toContain('\r\x1b[K[tool] run_shell {"command":"sleep 9"} · 1.2s · interrupted\n');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('prints a failed run with its error and a non-streamed answer', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'turn_started' }));
    r.on(ev({ type: 'run_failed', error: { name: 'ModelCallError', message: '401 bad key' }, stopReason: 'model_error', partial: [], undelivered: [], usage }));
    expect(err.text).toContain('[loopctl] failed (model_error): ModelCallError: 401 bad key · 1 turn');
    const r2 = new TerminalRenderer(out, err, () => 0);
    r2.on(ev({ type: 'run_completed', output: 'whole answer', usage, finishReason: 'length', undelivered: [] }));
    expect(out.text).toBe('whole answer\n');
    expect(err.text).toContain('completed (finish reason: length)');
  });

  it('a retry says which attempt comes and that the answer starts over', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'turn_started' }));
    r.on(ev({ type: 'model_request_started', model: 'm', attempt: 1, stream: true }));
    r.on(ev({ type: 'text_delta', delta: 'Hel' }));
    r.on(ev({ type: 'retry_scheduled', attempt: 2, delayMs: 500, error: { name: 'TimeoutError', message: 'idle deadline of 100 ms expired' } }));
    r.on(ev({ type: 'model_request_started', model: 'm', attempt: 2, stream: true }));
    r.on(ev({ type: 'text_delta', delta: 'Hello' }));
    expect(err.text).toContain('retrying in 0.5s (attempt 2): idle deadline of 100 ms expired');
    expect(err.text).toContain('the answer starts over');
    expect(out.text).toBe('Hel\nHello');
  });

  it('a session_error says the run was not saved; a usage not reported says unknown', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'turn_started' }));
    const error = { name: 'TimeoutError', message: 'commit deadline of 30000 ms expired', kind: 'commit', timeoutMs: 30000 };
    const unknown = { inputTokens: 0, outputTokens: 0, totalTokens: 0, reported: false };
    r.on(ev({ type: 'run_failed', error, stopReason: 'session_error', partial: [], undelivered: [], usage: unknown }));
    expect(err.text).toBe(
      '[loopctl] failed (session_error): TimeoutError: commit deadline of 30000 ms expired (nothing of this run was saved)'
        + ' · 1 turn · 0 tool calls · usage unknown\n',
    );
  });

  it('a usage some responses did not report shows the counted part as a lower bound', () => {
    const out = fake(false);
    const err = fake(false);
    const r = new TerminalRenderer(out, err, () => 0);
    r.on(ev({ type: 'turn_started' }));
    r.on(ev({ type: 'run_completed', stopReason: 'completed', output: 'ok', usage: { ...usage, reported: false }, finishReason: 'stop', undelivered: [] }));
    expect(err.text).toBe('[loopctl] completed · 1 turn · 0 tool calls · usage unknown (at least 3 in + 2 out = 5 tokens)\n');
  });
});
