/**
 * `--json`: every event is one NDJSON line that validates with
 * RunEventSchema, whatever foreign values it carries.
 */
import { describe, expect, it } from 'vitest';
import { RunEventSchema, type RunEvent } from '../src/index.js';
import { toJsonData, toJsonLine } from '../src/cli/json-line.js';

const base = { runId: 'r1', seq: 3, turn: 1, at: 1000 };
const usage = { inputTokens: 1, outputTokens: 2, totalTokens: 3, reported: true };

function hostile(): unknown {
  const cyclic: Record<string, unknown> = { big: 12345678901234567890n, when: new Date(0) };
  cyclic['self'] = cyclic;
  Object.defineProperty(cyclic, 'trap', {
    enumerable: true,
    get: () => {
      throw new Error('no');
    },
  });
  cyclic['map'] = new Map<unknown, unknown>([
    ['k', 1n],
    [{ a: 1 }, new Set([1, 2])],
  ]);
  cyclic['fn'] = function named() {};
  cyclic['sym'] = Symbol('s');
  cyclic['proxy'] = new Proxy(
    {},
    {
      ownKeys: () => {
        throw new Error('trap');
      },
    },
  );
  cyclic['bad'] = {
    toJSON: () => {
      throw new Error('toJSON');
    },
  };
  return cyclic;
}

describe('toJsonLine', () => {
  it('copies a hostile value into exact JSON data', () => {
    expect(toJsonData(hostile())).toEqual({
      big: '12345678901234567890',
      when: '1970-01-01T00:00:00.000Z',
      self: '[Circular]',
      trap: '[unreadable]',
      map: [
        ['k', '1'],
        [{ a: 1 }, [1, 2]],
      ],
      fn: '[function named]',
      sym: 'Symbol(s)',
      proxy: '[unprintable object]',
      bad: '[unprintable object]',
    });
  });

  it('an Error keeps name and message; shared (non-cyclic) references are copied, not marked', () => {
    const shared = { x: 1 };
    const err = Object.assign(new TypeError('boom'), { code: 'E1' });
    expect(toJsonData({ a: shared, b: shared, err, n: NaN, u: undefined, arr: [undefined, 1] })).toEqual({
      a: { x: 1 },
      b: { x: 1 },
      err: { name: 'TypeError', message: 'boom', code: 'E1' },
      n: null,
      arr: [null, 1],
    });
  });

  it('every event, hostile fields included, is one line that RunEventSchema accepts', () => {
    const events: RunEvent[] = [
      { ...base, type: 'run_started', agent: 'loopctl' },
      { ...base, type: 'tool_call_progress', callId: 'c', name: 't', progress: hostile() },
      {
        ...base,
        type: 'run_cancelled',
        stopReason: 'cancelled',
        reason: hostile(),
        phase: 'model_stream',
        partial: [],
        undelivered: [],
        usage,
      },
      {
        ...base,
        type: 'run_cancelled',
        stopReason: 'cancelled',
        reason: 10n,
        phase: 'turn_entry',
        partial: [],
        undelivered: [],
        usage,
      },
      {
        ...base,
        type: 'run_failed',
        error: { name: 'ModelCallError', message: 'x', status: 500 },
        stopReason: 'model_error',
        partial: [],
        undelivered: [{ id: 'u', content: 'later' }],
        usage,
      },
    ];
    for (const event of events) {
      const line = toJsonLine(event);
      expect(line.endsWith('\n')).toBe(true);
      expect(line.slice(0, -1)).not.toContain('\n');
      const parsed = RunEventSchema.safeParse(JSON.parse(line));
      expect(parsed.success, `${event.type}: ${parsed.error?.message}`).toBe(true);
    }
    expect(JSON.parse(toJsonLine(events[3]))).toMatchObject({ type: 'run_cancelled', reason: '10' });
  });
});
