/**
 * Cancel during the retry backoff. The model's first attempt fails
 * with a retryable 429; the retry policy allows 3 retries from 2 000 ms
 * (1 500 ms with this jitter). The caller cancels 100 ms into that sleep.
 * Checkpoint 9: backoff: the cancel lands at once, not when the sleep ends:
 * `run_cancelled` (phase `backoff`) is delivered before `cancel()` returns
 * (real timers; guarantee 3) and in the cancel's own virtual frame (virtual
 * time). The model is called once and the sleep's timer is cleared.
 */
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { CancelSignal, defineAgent, isCancellation, run, start, ModelCallError, type RunEvent } from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';

const rateLimited = () => new ModelCallError('rate limited', { status: 429, retryable: true });
const RETRY = { maxRetries: 3, initialDelayMs: 2000 };
const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('cancel during the retry backoff sleep', () => {
  it('real timers: the terminal is delivered inside cancel(), M is called once, the backoff timer is cleared', async () => {
    const model = scriptedModel([{ error: rateLimited() }, 'would be the retry']);
    const agent = defineAgent({ name: 'c03', instructions: '', model });
    const T = new CancelSignal();
    const handle = start(agent, 'task', { cancel: T, retry: RETRY, random: () => 0.75 });
    const events: RunEvent[] = [];
    handle.events$.subscribe((e) => events.push(e));

    const scheduled = await new Promise<RunEvent>((resolve) =>
      handle.events$.subscribe((e) => e.type === 'retry_scheduled' && resolve(e)),
    );
    expect(scheduled).toMatchObject({ attempt: 2, delayMs: 1500, error: { name: 'ModelCallError', status: 429 } });
    await new Promise((r) => setImmediate(r)); // a turn of the event loop into the 1 500 ms backoff
    expect(events.at(-1)?.type).toBe('retry_scheduled'); // still sleeping
    const during = timers(); // includes the backoff sleep's timer

    T.cancel('user stop');
    // Delivered synchronously by cancel() (guarantee 3), so well before the sleep would end.
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', reason: 'user stop', phase: 'backoff' });
    expect(timers()).toBe(during - 1); // the sleep's timer is cleared, synchronously
    expect(T.isCancelled).toBe(false); // re-armed for the next run (guarantee 5)

    const outcome = await handle.result.then(
      () => 'completed',
      (e: unknown) => (isCancellation(e) ? 'cancelled' : 'failed'),
    );
    expect(outcome).toBe('cancelled');
    expect(
      events.filter((e) => e.type === 'run_cancelled' || e.type === 'run_completed' || e.type === 'run_failed').length,
    ).toBe(1);
    expect(model.calls.length).toBe(1);
    expect(events.filter((e) => e.type === 'retry_scheduled').length).toBe(1);
  });

  it('virtual time: cancel at 100 ms into a 1 500 ms sleep ends the run at that very frame, nothing left scheduled', () => {
    const ts = new TestScheduler((a, e) => expect(a).toEqual(e));
    ts.run(({ flush }) => {
      const model = scriptedModel([{ error: rateLimited() }, 'would be the retry']);
      const agent = defineAgent({ name: 'c03', instructions: '', model });
      const T = new CancelSignal();
      const log: [number, string][] = [];
      run(agent, 'task', { cancel: T, retry: RETRY, random: () => 0.75 }).subscribe((e) =>
        log.push([ts.now(), e.type]),
      );
      let pending = -1;
      ts.schedule(() => {
        T.cancel('user stop');
        pending = ts.actions.length;
      }, 100);
      flush();
      expect(log).toEqual([
        [0, 'run_started'],
        [0, 'turn_started'],
        [0, 'model_request_started'],
        [0, 'retry_scheduled'],
        [100, 'run_cancelled'],
      ]);
      expect(pending).toBe(0);
      expect(model.calls.length).toBe(1);
    });
  });
});
