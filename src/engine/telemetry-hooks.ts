import { config } from 'rxjs';
import type { RunInternals, RunTap, RunWrap } from './internals.js';
import type { RunObserver, RunTelemetry, TelemetryRun } from './telemetry.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Internal: opens the `telemetry` run option for one run and puts what it returns into the run's
 * internals: its wrappers around those already there (a sub-run's inherited ones stay outermost),
 * and its `event` / `ending` as the run's tap. A throwing `open`, `event` or `ending` is reported
 * like a `runEnded` hook's error and changes nothing of the run.
 */
export function openTelemetry(telemetry: RunTelemetry, run: TelemetryRun, internals: Mutable<RunInternals>): void {
  let observer: RunObserver;
  try {
    observer = telemetry.open(run);
  } catch (err) {
    return reportUnhandled(err);
  }
  if (observer === null || typeof observer !== 'object') return;
  internals.wrap = around(internals.wrap, wrapOf(observer));
  const { event, ending } = observer;
  if (typeof event !== 'function' && typeof ending !== 'function') return;
  const tap: RunTap = {
    event: (e, item) => {
      if (typeof event !== 'function') return;
      try {
        event.call(observer, e, item);
      } catch (err) {
        reportUnhandled(err);
      }
    },
    ending: (outcome) => {
      if (typeof ending !== 'function') return;
      try {
        ending.call(observer, outcome);
      } catch (err) {
        reportUnhandled(err);
      }
    },
  };
  internals.tap = tap;
}

/** The observer's wrappers in the engine's shape (a missing one is absent, so nothing is wrapped for it). */
function wrapOf(o: RunObserver): RunWrap {
  const wrap: Mutable<RunWrap> = {};
  if (typeof o.run === 'function') wrap.run = (_run, fn) => o.run!(fn);
  if (typeof o.tool === 'function') wrap.tool = (call, fn) => o.tool!(call, fn);
  if (typeof o.model === 'function') wrap.model = (attempt, fn) => o.model!(attempt, fn);
  if (typeof o.hook === 'function') wrap.hook = (hook, fn) => o.hook!(hook, fn);
  if (typeof o.mcp === 'function') wrap.mcp = (request, fn) => o.mcp!(request, fn);
  return wrap;
}

/** `outer` around `inner`, wrapper by wrapper. */
function around(outer: RunWrap | undefined, inner: RunWrap): RunWrap {
  if (outer === undefined) return inner;
  const both = <K extends keyof RunWrap>(key: K): RunWrap[K] => {
    const o = outer[key] as ((x: unknown, fn: () => unknown) => unknown) | undefined;
    const i = inner[key] as ((x: unknown, fn: () => unknown) => unknown) | undefined;
    if (o === undefined || i === undefined) return (o ?? i) as RunWrap[K];
    return ((x: unknown, fn: () => unknown) => o(x, () => i(x, fn))) as RunWrap[K];
  };
  return { run: both('run'), tool: both('tool'), model: both('model'), hook: both('hook'), mcp: both('mcp') };
}

function reportUnhandled(err: unknown): void {
  if (config.onUnhandledError) config.onUnhandledError(err);
  else
    setTimeout(() => {
      throw err;
    });
}
