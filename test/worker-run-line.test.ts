/**
 * `loopctl worker` prints one line per run it claims and per run it ends, the ending in words (the page's
 * wording table), never the reason's JSON.
 */
import { describe, expect, it } from 'vitest';
import { runLine } from '../src/cli/worker/run-line.js';

const ended = { type: 'ended' as const, runId: 'r1', agent: 'cli' };

describe("the worker's line per run", () => {
  it('claimed names the run and its agent; ended says how it ended in words', () => {
    expect(runLine({ type: 'claimed', runId: 'r1', agent: 'cli' })).toBe('run r1: claimed (agent cli)');
    expect(runLine({ ...ended, terminal: 'run_completed', stopReason: 'completed' })).toBe('run r1: ended, Done.');
    expect(runLine({ ...ended, terminal: 'run_failed', stopReason: 'worker_lost' })).toBe(
      'run r1: ended, Failed: the worker running it stopped answering. Nothing of this run was kept.',
    );
    expect(
      runLine({ ...ended, terminal: 'run_cancelled', stopReason: 'cancelled', reason: 'stopped by the user' }),
    ).toBe('run r1: ended, Stopped. You pressed Stop.');
  });

  it('a cancel reason that is an object is in words, never its JSON', () => {
    const line = runLine({
      ...ended,
      terminal: 'run_cancelled',
      stopReason: 'cancelled',
      reason: { type: 'event_store_unavailable' },
    });
    expect(line).toBe('run r1: ended, Stopped. The queue (Redis) could not be reached.');
    expect(line).not.toContain('{');
  });
});
