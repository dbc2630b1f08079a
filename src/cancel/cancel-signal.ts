import { Observable, config, isObservable, type Subscription } from 'rxjs';
import { readAbortReason, readAborted } from './abort-reason.js';
import { ChildLinks } from './child-links.js';

/** Listener called with the cancel reason (see {@link CancelSignal.onCancel}). */
export type CancelListener = (reason: unknown) => void;

/**
 * Read-only view of one token of a {@link CancelSignal} (see {@link cancelMark}).
 * `fired` never goes back to `false`: a reset swaps tokens, it never un-fires one.
 * @internal Engine plumbing; not part of the package's public entry.
 */
export interface CancelMark {
  readonly fired: boolean;
  readonly reason: unknown;
}

/** The reason used when `cancel()` is called without one (or with `undefined`). */
export const DEFAULT_CANCEL_REASON = 'cancelled';

const noop = (): void => {};

/** rxjs's unhandled-error path: `config.onUnhandledError` if set, else rethrow in a fresh task. */
function report(err: unknown): void {
  const onUnhandledError = config.onUnhandledError;
  if (onUnhandledError) onUnhandledError(err);
  else
    setTimeout(() => {
      throw err;
    });
}

/** One-shot token: fired once, never un-fired. Listeners live in a Map keyed by their remover. */
class Token implements CancelMark {
  fired = false;
  reason: unknown = undefined;
  listeners: Map<() => void, CancelListener> | null = null;
  ac: AbortController | null = null;
}

const disposeSymbol: typeof Symbol.dispose = (Symbol.dispose ?? Symbol.for('nodejs.dispose')) as typeof Symbol.dispose;

let tokenOf: (signal: CancelSignal) => Token;
let childrenOf: (signal: CancelSignal) => ChildLinks<CancelSignal> | null;

/**
 * A sticky, re-armable cancel token ("only a CancelSignal re-arms"; guarantees 5, 8, 9
 * and 12 of docs/cancellation.md).
 *
 * Holds a *current token*. `cancel(reason)` fires it (first reason wins, kept `===`);
 * `reset()` swaps a fired token for a fresh one without un-firing the old one, so
 * waiters bound to the old token still resolve against it. Everything that observes
 * the signal (`onCancel`, `cancelled$`, `notified()`, `signal`) binds to the token
 * current when it is called or subscribed. Nothing here throws; a throwing listener
 * is reported through rxjs's `config.onUnhandledError` (else rethrown in a new task).
 *
 * @example
 * const cancel = new CancelSignal();
 * cancel.onCancel(reason => console.log('stopped:', reason));
 * cancel.cancel('user clicked stop'); // logs "stopped: user clicked stop"
 * cancel.reset();                     // re-armed for the next run
 */
export class CancelSignal implements Disposable {
  #token = new Token();
  #children: ChildLinks<CancelSignal> | null = null;
  #parent: CancelSignal | null = null;
  /** This child's entry in its parent's links (null for a root or once disposed). */
  #link: WeakRef<CancelSignal> | null = null;
  /** Whether the parent holds this child strongly ("a listened-to child is kept"). */
  #pinned = false;
  #unlinkSource: (() => void) | null = null;
  #cancelled$: Observable<unknown> | null = null;

  static {
    tokenOf = (signal) => signal.#token;
    childrenOf = (signal) => signal.#children;
  }

  /**
   * A root-like signal that fires when `source` does: an AbortSignal's abort (reason
   * `source.reason`, or `UNREADABLE_REASON` when reading it throws: "reading a reason never
   * throws"; born fired if already aborted) or an Observable's first value (reason = that
   * value). The abort listener / subscription is dropped when the source fires or on
   * `dispose()`. An Observable that errors or completes without a value never fires it (its
   * error is swallowed). Throws `TypeError` for other inputs. Resetting the result does not
   * re-listen to a source that already fired. Each call links anew: share one result rather
   * than calling it per use on a long-lived source.
   */
  static from(source: AbortSignal | Observable<unknown>): CancelSignal {
    const sig = new CancelSignal();
    if (isObservable(source)) {
      let done = false;
      let sub: Subscription | null = null;
      const s = source.subscribe({
        next: (value) => {
          if (done) return;
          done = true;
          sig.#unlinkSource = null;
          sub?.unsubscribe();
          sig.cancel(value);
        },
        error: () => {
          sig.#unlinkSource = null;
        },
        complete: () => {
          sig.#unlinkSource = null;
        },
      });
      if (done || s.closed) s.unsubscribe();
      else {
        sub = s;
        sig.#unlinkSource = () => s.unsubscribe();
      }
      return sig;
    }
    const abort = source as AbortSignal;
    if (!abort || typeof abort.aborted !== 'boolean' || typeof abort.addEventListener !== 'function') {
      throw new TypeError('CancelSignal.from expects an AbortSignal or an Observable');
    }
    if (readAborted(abort)) {
      sig.cancel(readAbortReason(abort));
      return sig;
    }
    const onAbort = (): void => {
      abort.removeEventListener('abort', onAbort);
      sig.#unlinkSource = null;
      sig.cancel(readAbortReason(abort));
    };
    abort.addEventListener('abort', onAbort);
    sig.#unlinkSource = () => abort.removeEventListener('abort', onAbort);
    return sig;
  }

  /** `true` once the current token has fired (until `reset()`). */
  get isCancelled(): boolean {
    return this.#token.fired;
  }

  /** The current token's reason, exactly as given (`===`); `undefined` while unfired. */
  get reason(): unknown {
    return this.#token.reason;
  }

  /**
   * AbortSignal view of the current token, aborted with exactly `reason`. Created
   * lazily on first read; after `reset()` a fresh, unaborted one (old ones stay aborted).
   */
  get signal(): AbortSignal {
    const tok = this.#token;
    let ac = tok.ac;
    if (ac === null) {
      ac = tok.ac = new AbortController();
      if (tok.fired) ac.abort(tok.reason);
      else this.#updatePin(); // whoever holds the view may be waiting on it
    }
    return ac.signal;
  }

  /**
   * Cold: on subscribe, binds to the current token; emits its reason once, then
   * completes (synchronously if already fired). Unsubscribing removes the listener.
   */
  get cancelled$(): Observable<unknown> {
    return (this.#cancelled$ ??= new Observable<unknown>((subscriber) =>
      this.onCancel((reason) => {
        subscriber.next(reason);
        subscriber.complete();
      }),
    ));
  }

  /**
   * Fires the current token. Idempotent: the first reason wins. `reason` defaults to
   * `'cancelled'` (also for an explicit `undefined`). Synchronously aborts `signal`,
   * then calls each listener in registration order, then cancels each attached child.
   * Never throws: listener errors are reported as unhandled (see class doc).
   */
  cancel(reason?: unknown): void {
    const tok = this.#token;
    if (tok.fired) return;
    const r = reason === undefined ? DEFAULT_CANCEL_REASON : reason;
    tok.fired = true;
    tok.reason = r;
    // Snapshot first: a child attached while we notify (a run started from a handler after
    // a reset) belongs to the next token and must not see this cancel.
    const children = this.#children === null ? null : this.#children.live();
    if (tok.ac !== null) {
      try {
        tok.ac.abort(r);
      } catch (err) {
        report(err);
      }
    }
    const listeners = tok.listeners;
    if (listeners !== null) {
      tok.listeners = null;
      for (const fn of listeners.values()) {
        try {
          fn(r);
        } catch (err) {
          report(err);
        }
      }
      listeners.clear();
    }
    if (children !== null) for (const child of children) child.cancel(r);
    this.#updatePin(); // fired: nothing waits on this token any more
  }

  /**
   * Resolves with the reason of the token current now (immediately if it already
   * fired; a reset before it fires does not detach the waiter). Never rejects.
   */
  notified(): Promise<unknown> {
    return new Promise((resolve) => {
      this.onCancel(resolve);
    });
  }

  /**
   * Low-level listener on the current token; returns an idempotent remover. If the
   * token already fired, calls `listener` synchronously (its error propagates to the
   * caller) and returns a no-op remover. One closure and one Map entry per call.
   */
  onCancel(listener: CancelListener): () => void {
    const tok = this.#token;
    if (tok.fired) {
      listener(tok.reason);
      return noop;
    }
    const listeners = (tok.listeners ??= new Map());
    const remove = (): void => {
      if (listeners.delete(remove) && listeners.size === 0 && this.#pinned) this.#updatePin();
    };
    listeners.set(remove, listener);
    if (!this.#pinned && this.#parent !== null) this.#updatePin();
    return remove;
  }

  /** Re-arms: swaps a fired token for a fresh one (guarantee 5: one cancel, one cancelled run). No-op when unfired. */
  reset(): void {
    if (this.#token.fired) {
      this.#token = new Token();
      this.#updatePin();
    }
  }

  /**
   * A signal that fires with this one's reason whenever this one fires, now or after
   * any number of resets (never the reverse). Born fired if this one is fired. Children
   * fire after this one's listeners, in creation order.
   *
   * A dropped child is freed: the parent holds a child weakly, so dropping every reference
   * to it is enough, `dispose()` is optional (it detaches at once). A listened-to child is
   * kept: while the child's current token has an `onCancel` listener (also `notified()`
   * and a `cancelled$` subscription), while its `signal` view exists unfired, or while one
   * of its own children is kept, the parent holds it strongly, so a listener is never lost
   * to GC (guarantee 12: sub-runs on a child token; the token tree does not grow).
   */
  child(): CancelSignal {
    const child = new CancelSignal();
    child.#parent = this;
    child.#link = (this.#children ??= new ChildLinks()).add(child);
    const tok = this.#token;
    if (tok.fired) child.cancel(tok.reason);
    return child;
  }

  /**
   * Detaches from what this signal follows (its parent, or the source given to
   * `from()`). Idempotent; a no-op for a root. Keeps the current token's state.
   */
  dispose(): void {
    const parent = this.#parent;
    if (parent !== null) {
      this.#parent = null;
      parent.#children!.remove(this, this.#link!);
      this.#link = null;
      if (this.#pinned) {
        this.#pinned = false;
        parent.#updatePin();
      }
    }
    const unlink = this.#unlinkSource;
    if (unlink !== null) {
      this.#unlinkSource = null;
      unlink();
    }
  }

  /**
   * "A listened-to child is kept": pins this child in its parent while its current token
   * has listeners or an unfired `signal` view, or while one of its children is pinned;
   * unpins it otherwise. Propagates up, so a kept grandchild keeps its dropped parent.
   */
  #updatePin(): void {
    const parent = this.#parent;
    if (parent === null) return;
    const tok = this.#token;
    const wanted =
      (!tok.fired && ((tok.listeners !== null && tok.listeners.size > 0) || tok.ac !== null)) ||
      (this.#children !== null && this.#children.pinnedCount > 0);
    if (wanted === this.#pinned) return;
    this.#pinned = wanted;
    parent.#children!.setPinned(this, wanted);
    parent.#updatePin();
  }

  /** Same as {@link CancelSignal.dispose} (`using` support). */
  [disposeSymbol](): void {
    this.dispose();
  }
}

/**
 * Snapshot of `signal`'s current token. `cancelMark(s).fired` later tells whether a
 * cancel was raised since the snapshot, even if `s` was reset meanwhile. Allocation-free.
 * @internal Used by the stage helper (the poll of "cancel wins at a stage start"); not exported from the package.
 */
export function cancelMark(signal: CancelSignal): CancelMark {
  return tokenOf(signal);
}

/**
 * How many children `signal` still has entries for (finalized ones not yet swept included).
 * @internal Lets tests check that the token tree does not grow with dropped children; not exported from the package.
 */
export function childEntryCount(signal: CancelSignal): number {
  return childrenOf(signal)?.size ?? 0;
}
