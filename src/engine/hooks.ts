import { EMPTY, Observable, defaultIfEmpty, from, last } from 'rxjs';
import { describeValue, isObservableTotal, isThenable } from '../describe.js';
import type { HookContext, HookReturn, Hooks } from './types.js';

type AwaitedHook = Exclude<keyof Hooks, 'runEnded'>;
type HookArg<K extends AwaitedHook> = Parameters<NonNullable<Hooks[K]>>[0];
type HookValue<K extends AwaitedHook> = ReturnType<NonNullable<Hooks[K]>> extends HookReturn<infer T> ? T : never;

/** A hook threw, rejected or errored: fails the run (`stopReason: 'internal_error'`). */
export class HookError extends Error {
  override readonly name = 'HookError';
  constructor(readonly hook: string, cause: unknown) {
    super(`hook ${hook} failed: ${describeValue(cause, 'thrown value')}`, { cause });
  }
}

/** Turns a value, Promise or Observable into an Observable of its last value (`undefined` when empty). */
export function toLastValue<T>(value: HookReturn<T>): Observable<T | undefined> {
  if (isObservableTotal(value)) return value.pipe(defaultIfEmpty(undefined), last());
  if (isThenable(value)) return from(value as PromiseLike<T>);
  return from([value as T]); // not of(): it would probe the value as a scheduler
}

/**
 * Calls hook `name` of each hook set in order, with the context `makeArg()` builds (the agent's, then the run's)
 * and emits the values they return (so `beforeToolCall` can see a deny).
 * Sync hooks run inline; awaited ones are raced against cancel by the run's
 * teardown (checkpoint 11: awaited hook). `enter` runs before each hook (it sets
 * the run's phase to `hook`, so a cancel raised by or during a hook says so);
 * the function it may return runs once that hook has finished (it restores
 * the phase, so a later cancel is not reported as `hook`).
 * A throw, rejection or error becomes a {@link HookError}.
 */
export function callHooks$<K extends AwaitedHook>(
  sets: readonly (Hooks<any> | undefined)[],
  name: K,
  makeArg: () => HookArg<K>,
  enter: () => void | (() => void),
): Observable<HookValue<K> | undefined> {
  const fns = sets.map((s) => s?.[name]).filter((f): f is NonNullable<Hooks[K]> => typeof f === 'function');
  if (fns.length === 0) return EMPTY; // no hook: not even its context is built (a hot path)
  return new Observable<HookValue<K> | undefined>((subscriber) => {
    const arg = makeArg();
    let i = 0;
    const next = (): void => {
      while (i < fns.length && !subscriber.closed) {
        const fn = fns[i++]! as (a: HookArg<K>) => HookReturn<HookValue<K>>;
        let ret: HookReturn<HookValue<K>>;
        const exit = enter();
        try {
          ret = fn(arg);
        } catch (err) {
          subscriber.error(new HookError(name, err));
          return;
        }
        const awaited = isThenable(ret) || isObservableTotal(ret);
        if (!awaited) {
          exit?.();
          subscriber.next(ret as HookValue<K> | undefined);
          continue;
        }
        subscriber.add(
          toLastValue(ret).subscribe({
            next: (v) => subscriber.next(v),
            error: (err) => subscriber.error(new HookError(name, err)),
            complete: () => {
              exit?.();
              next();
            },
          }),
        );
        return;
      }
      subscriber.complete();
    };
    next();
  });
}

/** The shared part of every hook's context. */
export type BaseHookContext = HookContext<any>;
