import type { Observable, Unsubscribable } from 'rxjs';
import { readAbortReason, readAborted } from './abort-reason.js';

type Listener = (reason: unknown) => void;

/** The one link to an external source that every run given it listens through. */
class FanOut {
  /** One entry per linked run, in link order (each a distinct wrapper, so the same function may link twice). */
  readonly listeners = new Set<{ readonly fn: Listener }>();
  #unlink: (() => void) | null = null;
  #closed = false;

  constructor(readonly source: object) {}

  /** Keeps the source's teardown; runs it at once if the source already fired or ended while subscribing. */
  setUnlink(unlink: () => void): void {
    if (this.#closed) unlink();
    else this.#unlink = unlink;
  }

  /** Later runs link afresh, then every run linked now hears `reason`, in link order. */
  fire(reason: unknown): void {
    this.close();
    const linked = [...this.listeners];
    this.listeners.clear();
    for (const { fn } of linked) fn(reason);
  }

  /** Drops the source's listener or subscription; the next run to link opens a new one. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (fanOuts.get(this.source) === this) fanOuts.delete(this.source);
    const unlink = this.#unlink;
    this.#unlink = null;
    unlink?.();
  }
}

// Keyed weakly by the source object: a source nobody else holds is not kept by this map.
const fanOuts = new WeakMap<object, FanOut>();

/**
 * "A shared source is linked once" for an AbortSignal: calls `listener` with the reason
 * (read with `readAbortReason`) when `signal` aborts, through one 'abort' listener shared by
 * every link to the same signal at the same time. The first link adds it; the last link's
 * remover or the abort removes it. An already aborted signal calls `listener` synchronously
 * and adds nothing. Returns an idempotent remover. `listener` must not throw.
 */
export function linkSharedSignal(signal: AbortSignal, listener: Listener): () => void {
  if (readAborted(signal)) {
    listener(readAbortReason(signal));
    return noop;
  }
  return link(signal, listener, (fan) => {
    const onAbort = (): void => fan.fire(readAbortReason(signal));
    signal.addEventListener('abort', onAbort);
    fan.setUnlink(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * "A shared source is linked once" for a `cancel$` Observable: calls `listener` with its
 * first value, through one subscription shared by every link to the same Observable at the
 * same time. The first link subscribes (so a cold Observable starts then, and later links
 * share it rather than restart it); the last link's remover, the first value, an error or a
 * completion unsubscribes, and the next link subscribes afresh (a hot source's earlier values
 * are not seen). A value emitted on subscribe calls `listener` synchronously. An error is
 * swallowed: it cancels nothing. Returns an idempotent remover. `listener` must not throw.
 */
export function linkSharedObservable(source: Observable<unknown>, listener: Listener): () => void {
  return link(source, listener, (fan) => {
    const sub: Unsubscribable = source.subscribe({
      next: (value) => fan.fire(value),
      error: () => fan.close(),
      complete: () => fan.close(),
    });
    fan.setUnlink(() => sub.unsubscribe());
  });
}

/** Adds `listener` to the source's open fan-out, opening one (with `open`) when there is none. */
function link(source: object, listener: Listener, open: (fan: FanOut) => void): () => void {
  const entry = { fn: listener };
  let fan = fanOuts.get(source);
  if (fan === undefined) {
    fan = new FanOut(source);
    fanOuts.set(source, fan);
    fan.listeners.add(entry); // before opening: a value emitted on subscribe reaches this link
    try {
      open(fan);
    } catch (err) {
      fan.close(); // nothing half-linked is left for the next run to join
      throw err;
    }
  } else fan.listeners.add(entry);
  const linked = fan;
  return () => {
    if (linked.listeners.delete(entry) && linked.listeners.size === 0) linked.close();
  };
}

const noop = (): void => {};
