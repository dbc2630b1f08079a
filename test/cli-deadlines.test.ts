/**
 * Every wait of a CLI run is bounded (in virtual time): the deadlines a CLI run uses come from
 * DEFAULTS (or `--timeout`), so a server that never answers fails the run
 * in under 200 s with the defaults, and a stream that stalls after one chunk
 * (its non-streamed rescue stalling too) within the bound the README states.
 */
import { NEVER } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { boundNonStreamed } from '../src/cli/model.js';
import { cliDeadlines, runDeadlines } from '../src/cli/run-options.js';
import { defineAgent, run, type RunEvent } from '../src/index.js';
import { scriptedModel, type ScriptedStep } from '../src/testing/index.js';

function runVirtual(steps: ScriptedStep[], timeoutMs: number | undefined) {
  const ts = new TestScheduler(() => undefined);
  ts.maxFrames = Number.POSITIVE_INFINITY;
  const model = scriptedModel(steps, { id: 'm', scheduler: ts });
  const provider = boundNonStreamed(model, cliDeadlines({ timeoutMs }).requestMs, ts);
  const events: RunEvent[] = [];
  // random() = 1: the longest backoff the defaults allow (0.5 s, then 1 s).
  run(defineAgent({ name: 'a', instructions: '', model: provider }), 'hi', {
    scheduler: ts,
    random: () => 1,
    deadlines: runDeadlines({ timeoutMs }),
  }).subscribe((e) => events.push(e));
  ts.flush();
  return { events, model };
}

const timeline = (events: RunEvent[]) =>
  events.filter((e) => e.type === 'model_request_started' || e.type === 'run_failed').map((e) => [e.type, e.at]);

describe('every wait of a CLI run is bounded', () => {
  it('the CLI deadlines are DEFAULTS, or --timeout for all three', () => {
    expect(cliDeadlines({ timeoutMs: undefined })).toEqual({
      firstEventMs: 60_000,
      idleMs: 30_000,
      requestMs: 300_000,
    });
    expect(cliDeadlines({ timeoutMs: 5000 })).toEqual({ firstEventMs: 5000, idleMs: 5000, requestMs: 5000 });
    expect(runDeadlines({ timeoutMs: undefined })).toEqual({ firstEventMs: 60_000, idleMs: 30_000 });
  });

  it('a server that never answers: 3 × 60 s + backoff = 181.5 s, under 200 s; the error names the deadline', () => {
    const { events } = runVirtual([{ gate: NEVER }, { gate: NEVER }, { gate: NEVER }], undefined);
    expect(timeline(events)).toEqual([
      ['model_request_started', 0],
      ['model_request_started', 60_500],
      ['model_request_started', 121_500],
      ['run_failed', 181_500],
    ]);
    expect(events.at(-1)).toMatchObject({
      stopReason: 'model_error',
      error: { name: 'TimeoutError', kind: 'first_event', timeoutMs: 60_000 },
    });
  });

  it('a stream that stalls after one chunk, its rescue stalling too: 30 + 300 + 30 + 30 s + backoff', () => {
    const stall: ScriptedStep = { text: ['Hal'], hold: NEVER };
    const { events, model } = runVirtual([stall, { gate: NEVER }, stall, stall], undefined);
    expect(model.requests.map((r) => r.stream)).toEqual([true, false, true, true]);
    expect(timeline(events)).toEqual([
      ['model_request_started', 0],
      ['model_request_started', 30_000],
      ['model_request_started', 330_500],
      ['model_request_started', 361_500],
      ['run_failed', 391_500],
    ]);
  });

  it('--timeout 5 lowers both bounds: 16.5 s and 21.5 s', () => {
    const silent = runVirtual([{ gate: NEVER }, { gate: NEVER }, { gate: NEVER }], 5000);
    expect(timeline(silent.events).at(-1)).toEqual(['run_failed', 16_500]);
    const stall: ScriptedStep = { text: ['Hal'], hold: NEVER };
    const stalled = runVirtual([stall, { gate: NEVER }, stall, stall], 5000);
    expect(timeline(stalled.events).at(-1)).toEqual(['run_failed', 21_500]);
  });
});
