/**
 * One inventory: RunEventSchema is the only list of event types, cancel phases and stop reasons.
 * docs/events.md (event types, stop reasons), docs/cancellation.md (the checkpoint table's phases)
 * and the CLI renderer are checked against it here, so adding one in the schema without the docs and
 * the renderer fails this test.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { CancelPhaseSchema, RunEventSchema, StopReasonSchema, type TerminalEvent } from '../src/index.js';
import { stopReason } from '../src/cli/render.js';

const repoFile = (path: string): string => readFileSync(fileURLToPath(new URL(`../${path}`, import.meta.url)), 'utf8');

/** The `type` literal of every member of RunEventSchema's union (lazy and readonly wrappers unwrapped). */
function eventTypes(): string[] {
  const unwrap = (schema: z.ZodType): any => {
    let s: any = schema;
    for (;;) {
      const kind = s._zod.def.type;
      if (kind === 'lazy') s = s._zod.def.getter();
      else if (kind === 'readonly') s = s._zod.def.innerType;
      else return s;
    }
  };
  return unwrap(RunEventSchema).options.map((o: z.ZodType) => unwrap(o).shape.type.value as string);
}

/** The backticked names in the first column of the table between `<!-- name -->` and `<!-- /name -->`. */
function tableNames(text: string, name: string): string[] {
  const start = text.indexOf(`<!-- ${name} -->`);
  const end = text.indexOf(`<!-- /${name} -->`);
  expect(start, `marker <!-- ${name} --> present`).toBeGreaterThanOrEqual(0);
  expect(end, `marker <!-- /${name} --> after it`).toBeGreaterThan(start);
  return text
    .slice(start, end)
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => /^\| `([a-z_]+)`/.exec(line)![1]!);
}

const sorted = (xs: readonly string[]) => [...xs].sort();

describe('RunEventSchema is the single inventory', () => {
  it('the schema has the 26 event types the engine emits', () => {
    expect(eventTypes()).toEqual([
      'run_started',
      'run_resumed',
      'turn_started',
      'user_message_injected',
      'model_request_started',
      'text_delta',
      'output_delta',
      'model_response_completed',
      'tool_call_started',
      'tool_call_progress',
      'tool_call_completed',
      'tool_call_failed',
      'tool_approval_requested',
      'retry_scheduled',
      'fallback_activated',
      'subrun_event',
      'stop_requested',
      'compaction_started',
      'compaction_completed',
      'guardrail_started',
      'guardrail_passed',
      'guardrail_tripped',
      'turn_completed',
      'run_completed',
      'run_cancelled',
      'run_failed',
    ]);
  });

  it('docs/events.md lists every event type and every stop reason, and nothing else', () => {
    const doc = repoFile('docs/events.md');
    expect(sorted(tableNames(doc, 'event-types'))).toEqual(sorted(eventTypes()));
    expect(tableNames(doc, 'stop-reasons')).toEqual(StopReasonSchema.options);
  });

  it("docs/cancellation.md's checkpoint table has every cancel phase once, and nothing else", () => {
    const doc = repoFile('docs/cancellation.md');
    const phases = doc
      .split('\n')
      .map((line) => /^\| (\d+) \| [^|]+ \| `([a-z_]+)` \|/.exec(line))
      .filter((m) => m !== null)
      .map((m) => m[2]!);
    expect(sorted(phases)).toEqual(sorted(CancelPhaseSchema.options));
  });

  it('the CLI renderer has a case for every event type', () => {
    const source = repoFile('src/cli/render.ts');
    const missing = eventTypes().filter((type) => !source.includes(`case '${type}':`));
    expect(missing).toEqual([]);
  });

  it('the CLI renderer names every stop reason and every phase on its summary line', () => {
    const base = {
      runId: 'r',
      seq: 3,
      turn: 1,
      at: 0,
      undelivered: [],
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, reported: true },
    };
    for (const reason of StopReasonSchema.options) {
      let event: TerminalEvent;
      if (reason === 'completed' || reason === 'stopped' || reason === 'needs_approval' || reason === 'budget')
        event = { type: 'run_completed', ...base, stopReason: reason, output: '', finishReason: 'stop' };
      else if (reason === 'cancelled')
        event = { type: 'run_cancelled', ...base, stopReason: reason, reason: 'x', phase: 'turn_entry', partial: [] };
      else event = { type: 'run_failed', ...base, stopReason: reason, error: { name: 'E', message: 'm' }, partial: [] };
      const line = stopReason(event);
      const ok = ['completed', 'stopped', 'needs_approval', 'budget', 'cancelled'].includes(reason)
        ? reason
        : `failed (${reason})`;
      expect(line.startsWith(ok), `${reason}: ${line}`).toBe(true);
    }
    for (const phase of CancelPhaseSchema.options) {
      const event = {
        type: 'run_cancelled',
        ...base,
        stopReason: 'cancelled',
        reason: 'x',
        phase,
        partial: [],
      } as const;
      expect(stopReason(event)).toBe(`cancelled (reason: x, phase: ${phase})`);
    }
  });
});
