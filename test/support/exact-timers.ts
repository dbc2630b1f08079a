import type { Subscription } from 'rxjs';
import type { TestScheduler } from 'rxjs/testing';
import { immediateProvider } from 'rxjs/internal/scheduler/immediateProvider';
import { intervalProvider } from 'rxjs/internal/scheduler/intervalProvider';
import { timeoutProvider } from 'rxjs/internal/scheduler/timeoutProvider';

/**
 * Call inside `ts.run(...)`: replaces run mode's setImmediate / setInterval / setTimeout stand-ins
 * (used by asapScheduler and asyncScheduler) with ones where each handle runs its own handler,
 * first scheduled first, as Node runs expired timers before the immediates they set.
 *
 * Why: rxjs 7.8's stand-ins make every due action run the first due handle of any kind, immediates
 * first. So an immediate set while an expired interval still waits runs in that interval's slot,
 * and if it clears the interval, its own slot finds nothing and throws
 * "Expected a due immediate or interval". `run()` restores the providers when it returns.
 */
export function useExactTimers(ts: TestScheduler): void {
  let last = 0;
  const handles = new Map<number, Subscription>();
  const set = (handler: () => void, delay: number, repeat: boolean): number => {
    const handle = ++last;
    handles.set(
      handle,
      ts.schedule(function () {
        if (repeat) this.schedule(undefined, delay);
        else handles.delete(handle);
        handler();
      }, delay),
    );
    return handle;
  };
  const clear = (handle: unknown): void => {
    handles.get(handle as number)?.unsubscribe();
    handles.delete(handle as number);
  };
  immediateProvider.delegate = { setImmediate: (handler) => set(handler, 0, false), clearImmediate: clear };
  intervalProvider.delegate = { setInterval: (handler, ms = 0) => set(handler, ms, true), clearInterval: clear };
  timeoutProvider.delegate = { setTimeout: (handler, ms = 0) => set(handler, ms, false), clearTimeout: clear };
}
