/**
 * A run whose worker process died (loopctl/bullmq) ends `run_failed { stopReason: 'worker_lost' }`, written by
 * another process after the run's last stored event; the AG-UI mapping closes the open message and step and
 * ends with RUN_ERROR whose code is the stop reason, and the CLI's summary line says the worker was lost.
 */
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { toAgUi } from '../src/ag-ui/index.js';
import { stopReason } from '../src/cli/render.js';
import { RunEventSchema, ZERO_USAGE, type RunEvent } from '../src/index.js';

const base = { runId: 'r1', at: 0 };
const events: RunEvent[] = [
  { type: 'run_started', ...base, seq: 0, turn: 0, agent: 'a' },
  { type: 'turn_started', ...base, seq: 1, turn: 1 },
  { type: 'model_request_started', ...base, seq: 2, turn: 1, model: 'm', attempt: 1, stream: true },
  { type: 'text_delta', ...base, seq: 3, turn: 1, delta: 'Hel' },
  {
    type: 'run_failed',
    ...base,
    seq: 4,
    turn: 1,
    stopReason: 'worker_lost',
    partial: [],
    usage: ZERO_USAGE,
    error: { name: 'WorkerLostError', message: 'the worker running this run (w1) was lost', worker: 'w1' },
    undelivered: [{ id: 's1', content: 'steer' }],
  },
];

describe('stop reason worker_lost', () => {
  it('is a valid run_failed event', () => {
    expect(RunEventSchema.parse(events[4])).toMatchObject({ stopReason: 'worker_lost' });
  });

  it('maps to RUN_ERROR { code: worker_lost } after the open message and step are closed', async () => {
    const out = await lastValueFrom(from(events).pipe(toAgUi({ threadId: 't' }), toArray()));
    expect(out.map((e) => e.type).slice(-3)).toEqual(['TEXT_MESSAGE_END', 'STEP_FINISHED', 'RUN_ERROR']);
    expect(out.at(-1)).toMatchObject({ code: 'worker_lost', message: 'the worker running this run (w1) was lost' });
  });

  it('the CLI summary names it', () => {
    const line = stopReason(events[4] as Extract<RunEvent, { type: 'run_failed' }>);
    expect(line).toBe(
      'failed (worker_lost): WorkerLostError: the worker running this run (w1) was lost ' +
        '(the worker running it was lost)',
    );
  });
});
