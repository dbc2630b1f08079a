import { defaultIfEmpty, from, last, type Observable } from 'rxjs';
import { isObservableTotal, isThenable } from './describe.js';

/**
 * A value, a Promise or an Observable that a hook, a session or a tool handed back, as an
 * Observable of its last value (`undefined` when an Observable ends empty). Read totally: a value
 * whose `then` or `subscribe` cannot be read is a plain value ("foreign values are never trusted").
 * Shared by the engine (hooks, session load and commit) and `commitPartial`.
 */
export function toLastValue<T>(value: T | PromiseLike<T> | Observable<T>): Observable<T | undefined> {
  if (isObservableTotal(value)) return value.pipe(defaultIfEmpty(undefined), last());
  if (isThenable(value)) return from(value as PromiseLike<T>);
  return from([value as T]); // not of(): it would probe the value as a scheduler
}
