import { EMPTY, Observable } from 'rxjs';
import { isObservableTotal, isThenable } from '../describe.js';
import { HookError } from '../errors.js';
import type { TerminalEvent } from '../events.js';
import { toLastValue } from '../last-value.js';
import type { RunContext } from './run-context.js';
import type { HookContext, HookReturn, Hooks } from './types.js';

type AwaitedHook = Exclude<keyof Hooks, 'runEnded'>;
type HookExtra<K extends AwaitedHook> = Omit<Parameters<NonNullable<Hooks[K]>>[0], keyof HookContext>;
type HookValue<K extends AwaitedHook> = ReturnType<NonNullable<Hooks[K]>> extends HookReturn<infer T> ? T : never;

/** A hook's context: the run's fields, with the hook point's own (`request`, `call`, …) added. */
export function hookContext<E extends object>(rc: RunContext<any>, extra?: E): HookContext<any> & E {
  const { runId, turn, token: cancel, mailbox } = rc;
  const ctx = { runId, agent: rc.agent.name, turn, cancel, mailbox, context: rc.opts.context };
  return (extra === undefined ? ctx : Object.assign(ctx, extra)) as HookContext<any> & E;
}

/** True when the agent or the run has a hook at `name` (so a caller builds nothing for a run without hooks). */
export function hasHooks(rc: RunContext<any>, name: keyof Hooks): boolean {
  return typeof rc.agent.hooks?.[name] === 'function' || typeof rc.opts.hooks?.[name] === 'function';
}

/**
 * Calls hook `name` of the agent, then of the run, with one context (`extra` added); with
 * `values`, emits what they return (so `beforeToolCall` can see a deny), else nothing. Each hook is a wait at `hook`
 * (checkpoint 11: awaited hook) from its call until it returns, or, for a hook that returned a
 * Promise or an Observable, until that settles; an awaited one is abandoned by the run's cancel
 * (an Observable unsubscribed). A throw, rejection or error becomes a {@link HookError}.
 */
export function callHooks$<K extends AwaitedHook>(
  rc: RunContext<any>,
  name: K,
  extra?: HookExtra<K>,
): Observable<never>;
export function callHooks$<K extends AwaitedHook>(
  rc: RunContext<any>,
  name: K,
  extra: HookExtra<K>,
  values: true,
): Observable<HookValue<K> | undefined>;
export function callHooks$<K extends AwaitedHook>(
  rc: RunContext<any>,
  name: K,
  extra?: HookExtra<K>,
  values = false,
): Observable<HookValue<K> | undefined> {
  const first = rc.agent.hooks?.[name];
  const second = rc.opts.hooks?.[name];
  const a = typeof first === 'function' ? first : undefined;
  const b = typeof second === 'function' ? second : undefined;
  if (a === undefined && b === undefined) return EMPTY; // no hook: not even its context is built (a hot path)
  const fns = a !== undefined && b !== undefined ? [a, b] : [(a ?? b)!];
  return new Observable<HookValue<K> | undefined>((subscriber) => {
    const arg = hookContext(rc, extra);
    const wrap = rc.internals.wrap?.hook;
    let i = 0;
    const next = (): void => {
      while (i < fns.length && !subscriber.closed) {
        const fn = fns[i++]! as (a: unknown) => HookReturn<HookValue<K>>;
        const wait = rc.waits.enter('hook');
        let ret: HookReturn<HookValue<K>>;
        try {
          ret = wrap !== undefined ? wrap(name, () => fn(arg)) : fn(arg);
        } catch (err) {
          wait.unsubscribe();
          subscriber.error(new HookError(name, err));
          return;
        }
        if (!isThenable(ret) && !isObservableTotal(ret)) {
          wait.unsubscribe();
          if (values) subscriber.next(ret as HookValue<K> | undefined);
          continue;
        }
        subscriber.add(wait);
        subscriber.add(
          toLastValue(ret).subscribe({
            next: (v) => {
              if (values) subscriber.next(v);
            },
            error: (err) => subscriber.error(new HookError(name, err)),
            complete: () => {
              wait.unsubscribe();
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

/**
 * Calls one hook `fn` (named `name`) with `arg`: a wait at `hook` (checkpoint 11: awaited hook) from its call until
 * it returns or, for a Promise or an Observable, settles (abandoned by the run's cancel: an Observable
 * unsubscribed). Emits its value (the last one of an Observable; `undefined` for one that ends empty), then
 * completes; a throw, rejection or error becomes a {@link HookError}. For hooks whose calls chain (each one sees
 * what the one before returned: `prepareRequest`).
 */
export function callHook$<A, T>(
  rc: RunContext<any>,
  name: string,
  fn: (arg: A) => HookReturn<T>,
  arg: A,
): Observable<T | undefined> {
  return new Observable<T | undefined>((subscriber) => {
    subscriber.add(rc.waits.enter('hook'));
    const wrap = rc.internals.wrap?.hook;
    let ret: HookReturn<T>;
    try {
      ret = wrap !== undefined ? wrap(name, () => fn(arg)) : fn(arg);
    } catch (err) {
      subscriber.error(new HookError(name, err));
      return;
    }
    subscriber.add(
      toLastValue(ret).subscribe({
        next: (v) => subscriber.next(v),
        error: (err) => subscriber.error(new HookError(name, err)),
        complete: () => subscriber.complete(),
      }),
    );
  });
}

/**
 * Calls every `runEnded` hook (the agent's, then the run's) with the terminal event: synchronous,
 * once per run. A throw does not change the outcome; it goes to `report` (rxjs's unhandled path).
 */
export function runEndedHooks(rc: RunContext<any>, outcome: TerminalEvent, report: (err: unknown) => void): void {
  for (const hooks of [rc.agent.hooks, rc.opts.hooks]) {
    const fn = hooks?.runEnded;
    if (typeof fn !== 'function') continue;
    try {
      fn(hookContext(rc, { outcome }));
    } catch (err) {
      report(err);
    }
  }
}
