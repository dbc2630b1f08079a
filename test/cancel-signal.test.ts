import { getEventListeners } from 'node:events';
import { Subject, config, of, throwError, EMPTY, NEVER } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { CancelSignal, DEFAULT_CANCEL_REASON } from '../src/cancel/index.js';

const gc = (globalThis as { gc?: () => void }).gc;

async function collectGarbage(): Promise<void> {
  for (let i = 0; i < 6; i++) {
    gc!();
    await new Promise((r) => setTimeout(r, 0));
  }
}

const savedOnUnhandledError = config.onUnhandledError;
afterEach(() => {
  config.onUnhandledError = savedOnUnhandledError;
});

describe('CancelSignal: cancel and reason', () => {
  it('keeps the first reason, by identity', () => {
    const s = new CancelSignal();
    const first = { why: 'stop' };
    s.cancel(first);
    s.cancel({ why: 'later' });
    expect(s.isCancelled).toBe(true);
    expect(s.reason).toBe(first);
    expect(s.signal.aborted).toBe(true);
    expect(s.signal.reason).toBe(first);
  });

  it("defaults the reason to 'cancelled' (also for an explicit undefined)", () => {
    const a = new CancelSignal();
    const b = new CancelSignal();
    expect(a.reason).toBeUndefined();
    a.cancel();
    b.cancel(undefined);
    expect(a.reason).toBe('cancelled');
    expect(b.reason).toBe(DEFAULT_CANCEL_REASON);
    expect(a.signal.reason).toBe('cancelled');
  });

  it('notifies listeners in registration order, then children', () => {
    const s = new CancelSignal();
    const log: string[] = [];
    s.onCancel((r) => log.push(`l1:${String(r)}`));
    const child = s.child();
    child.onCancel((r) => log.push(`child:${String(r)}`));
    s.onCancel((r) => log.push(`l2:${String(r)}`));
    s.cancel('x');
    expect(log).toEqual(['l1:x', 'l2:x', 'child:x']);
  });

  it('a lazily read signal of a fired token is born aborted with the reason', () => {
    const s = new CancelSignal();
    const reason = new Error('boom');
    s.cancel(reason);
    expect(s.signal.aborted).toBe(true);
    expect(s.signal.reason).toBe(reason);
    expect(s.signal).toBe(s.signal);
  });

  it('a throwing listener neither stops the others nor leaves the signal half-fired', () => {
    const reported: unknown[] = [];
    config.onUnhandledError = (err) => reported.push(err);
    const s = new CancelSignal();
    const abortSignal = s.signal;
    const boom = new Error('listener failed');
    const log: string[] = [];
    const child = s.child();
    s.onCancel(() => log.push('before'));
    s.onCancel(() => {
      throw boom;
    });
    s.onCancel(() => log.push('after'));
    s.cancel('x');
    expect(log).toEqual(['before', 'after']);
    expect(s.isCancelled).toBe(true);
    expect(s.reason).toBe('x');
    expect(abortSignal.aborted).toBe(true);
    expect(s.signal.aborted).toBe(true);
    expect(child.isCancelled).toBe(true);
    expect(reported).toEqual([boom]);
    expect(reported[0]).toBe(boom);
  });

  it('a listener that resets during firing does not stop the remaining listeners or children', () => {
    const s = new CancelSignal();
    const child = s.child();
    const log: unknown[] = [];
    s.onCancel(() => s.reset());
    s.onCancel((r) => log.push(r));
    s.cancel('first');
    expect(log).toEqual(['first']);
    expect(s.isCancelled).toBe(false);
    expect(child.reason).toBe('first');
  });
});

describe('CancelSignal: onCancel, cancelled$, notified', () => {
  it('onCancel returns an idempotent remover that removes', () => {
    const s = new CancelSignal();
    const log: unknown[] = [];
    const remove = s.onCancel((r) => log.push(['removed', r]));
    s.onCancel((r) => log.push(['kept', r]));
    remove();
    remove();
    s.cancel('x');
    expect(log).toEqual([['kept', 'x']]);
  });

  it('registering the same function twice keeps two independent registrations', () => {
    const s = new CancelSignal();
    const log: unknown[] = [];
    const fn = (r: unknown): void => {
      log.push(r);
    };
    const removeFirst = s.onCancel(fn);
    s.onCancel(fn);
    removeFirst();
    s.cancel('x');
    expect(log).toEqual(['x']);
  });

  it('onCancel on a fired token calls the listener synchronously and returns a no-op remover', () => {
    const s = new CancelSignal();
    s.cancel('x');
    const log: unknown[] = [];
    const remove = s.onCancel((r) => log.push(r));
    expect(log).toEqual(['x']);
    expect(() => remove()).not.toThrow();
  });

  it('cancelled$ emits the reason once then completes, and replays for late subscribers', () => {
    const s = new CancelSignal();
    const early: unknown[] = [];
    s.cancelled$.subscribe({ next: (r) => early.push(r), complete: () => early.push('complete') });
    expect(early).toEqual([]);
    s.cancel('x');
    expect(early).toEqual(['x', 'complete']);
    const late: unknown[] = [];
    s.cancelled$.subscribe({ next: (r) => late.push(r), complete: () => late.push('complete') });
    expect(late).toEqual(['x', 'complete']);
  });

  it('unsubscribing from cancelled$ removes its listener', () => {
    const s = new CancelSignal();
    const log: unknown[] = [];
    const sub = s.cancelled$.subscribe((r) => log.push(r));
    sub.unsubscribe();
    s.cancel('x');
    expect(log).toEqual([]);
  });

  it('cancelled$ binds to the token current at subscribe time', () => {
    const s = new CancelSignal();
    s.cancel('old');
    s.reset();
    const log: unknown[] = [];
    s.cancelled$.subscribe((r) => log.push(r));
    expect(log).toEqual([]);
    s.cancel('new');
    expect(log).toEqual(['new']);
  });

  it('notified() resolves with the reason, immediately if already fired', async () => {
    const s = new CancelSignal();
    const pending = s.notified();
    s.cancel('x');
    await expect(pending).resolves.toBe('x');
    await expect(s.notified()).resolves.toBe('x');
  });
});

describe('CancelSignal: reset', () => {
  it('swaps a fired token; a straggler awaiting the old token resolves with the old reason', async () => {
    const s = new CancelSignal();
    const straggler = s.notified();
    const oldSignal = s.signal;
    s.cancel('old');
    s.reset();
    expect(s.isCancelled).toBe(false);
    expect(s.reason).toBeUndefined();
    expect(s.signal.aborted).toBe(false);
    expect(s.signal).not.toBe(oldSignal);
    expect(oldSignal.aborted).toBe(true);
    expect(oldSignal.reason).toBe('old');
    const next = s.notified();
    s.cancel('new');
    await expect(straggler).resolves.toBe('old');
    await expect(next).resolves.toBe('new');
    expect(oldSignal.reason).toBe('old');
  });

  it('a straggler calling notified() on the old token after it fired resolves at once', async () => {
    const s = new CancelSignal();
    s.cancel('old');
    const straggler = s.notified();
    s.reset();
    await expect(straggler).resolves.toBe('old');
  });

  it('is a no-op on an unfired token (same signal object, listeners kept)', () => {
    const s = new CancelSignal();
    const signal = s.signal;
    const log: unknown[] = [];
    s.onCancel((r) => log.push(r));
    s.reset();
    expect(s.signal).toBe(signal);
    s.cancel('x');
    expect(log).toEqual(['x']);
    expect(signal.aborted).toBe(true);
  });
});

describe('CancelSignal.child', () => {
  it('follows its parent across resets', () => {
    const parent = new CancelSignal();
    const child = parent.child();
    parent.cancel('first');
    expect(child.isCancelled).toBe(true);
    expect(child.reason).toBe('first');
    parent.reset();
    expect(child.isCancelled).toBe(true); // resetting the parent does not touch the child
    child.reset();
    expect(child.isCancelled).toBe(false);
    parent.cancel('second');
    expect(child.isCancelled).toBe(true);
    expect(child.reason).toBe('second');
  });

  it('keeps the exact reason object', () => {
    const parent = new CancelSignal();
    const child = parent.child();
    const grandchild = child.child();
    const reason = { type: 'deadline' };
    parent.cancel(reason);
    expect(child.reason).toBe(reason);
    expect(grandchild.reason).toBe(reason);
    expect(grandchild.signal.reason).toBe(reason);
  });

  it('a child cancelling never fires its parent', () => {
    const parent = new CancelSignal();
    const child = parent.child();
    child.cancel('own');
    expect(child.isCancelled).toBe(true);
    expect(parent.isCancelled).toBe(false);
    expect(parent.reason).toBeUndefined();
  });

  it('is born fired when the parent is fired', () => {
    const parent = new CancelSignal();
    parent.cancel('x');
    const child = parent.child();
    expect(child.isCancelled).toBe(true);
    expect(child.reason).toBe('x');
  });

  it('dispose() and [Symbol.dispose]() detach it (idempotent)', () => {
    const parent = new CancelSignal();
    const a = parent.child();
    const b = parent.child();
    a.dispose();
    a.dispose();
    b[Symbol.dispose]();
    parent.cancel('x');
    expect(a.isCancelled).toBe(false);
    expect(b.isCancelled).toBe(false);
    expect(() => new CancelSignal().dispose()).not.toThrow();
  });

  it('a parent with 10 000 disposed children holds none of them', async () => {
    expect(typeof gc).toBe('function');
    const parent = new CancelSignal();
    const heard: unknown[] = [];
    const refs = ((): { disposed: WeakRef<CancelSignal>[]; kept: WeakRef<CancelSignal> } => {
      const disposed: WeakRef<CancelSignal>[] = [];
      for (let i = 0; i < 10_000; i++) {
        const child = parent.child();
        child.onCancel(() => {});
        disposed.push(new WeakRef(child));
        child.dispose();
      }
      // control: an attached child that something listens to is held by its parent alone
      const kept = parent.child();
      kept.onCancel((r) => heard.push(r));
      return { disposed, kept: new WeakRef(kept) };
    })();
    await collectGarbage();
    expect(refs.disposed.filter((r) => r.deref() !== undefined).length).toBe(0);
    expect(refs.kept.deref()).toBeInstanceOf(CancelSignal);
    parent.cancel('x');
    expect(heard).toEqual(['x']);
  });
});

describe('CancelSignal.from(AbortSignal)', () => {
  it('is born fired with the reason of an already-aborted signal', () => {
    const reason = { why: 'aborted before' };
    const s = CancelSignal.from(AbortSignal.abort(reason));
    expect(s.isCancelled).toBe(true);
    expect(s.reason).toBe(reason);
    expect(s.signal.reason).toBe(reason);
  });

  it('fires on abort with signal.reason', () => {
    const ac = new AbortController();
    const s = CancelSignal.from(ac.signal);
    expect(s.isCancelled).toBe(false);
    const reason = new Error('stop');
    ac.abort(reason);
    expect(s.reason).toBe(reason);
  });

  it('puts a shared AbortSignal back to its listener baseline after dispose and after firing', () => {
    const ac = new AbortController();
    ac.signal.addEventListener('abort', () => {});
    const baseline = getEventListeners(ac.signal, 'abort').length;
    expect(baseline).toBe(1);

    const disposed = CancelSignal.from(ac.signal);
    expect(getEventListeners(ac.signal, 'abort').length).toBe(baseline + 1);
    disposed.dispose();
    disposed.dispose();
    expect(getEventListeners(ac.signal, 'abort').length).toBe(baseline);

    const fired = CancelSignal.from(ac.signal);
    const fired2 = CancelSignal.from(ac.signal);
    expect(getEventListeners(ac.signal, 'abort').length).toBe(baseline + 2);
    ac.abort('r');
    expect(fired.reason).toBe('r');
    expect(fired2.reason).toBe('r');
    expect(disposed.isCancelled).toBe(false);
    expect(getEventListeners(ac.signal, 'abort').length).toBe(baseline);
  });

  it('rejects other inputs with a TypeError', () => {
    expect(() => CancelSignal.from({} as AbortSignal)).toThrow(TypeError);
  });
});

describe('CancelSignal.from(Observable)', () => {
  it('fires on the first emission with its value, then unsubscribes', () => {
    const source = new Subject<unknown>();
    const s = CancelSignal.from(source);
    expect(source.observed).toBe(true);
    expect(s.isCancelled).toBe(false);
    const reason = { click: 1 };
    source.next(reason);
    expect(s.reason).toBe(reason);
    expect(source.observed).toBe(false);
    s.reset();
    source.next('again');
    expect(s.isCancelled).toBe(false);
  });

  it('is born fired by a synchronous emission', () => {
    const s = CancelSignal.from(of('now', 'ignored'));
    expect(s.reason).toBe('now');
  });

  it('stays subscribed until dispose, which unsubscribes', () => {
    const source = new Subject<unknown>();
    const s = CancelSignal.from(source);
    s.cancel('manual');
    expect(source.observed).toBe(true);
    s.dispose();
    expect(source.observed).toBe(false);
    s.reset();
    source.next('late');
    expect(s.isCancelled).toBe(false);
  });

  it('is not fired by an error or a completion without a value', () => {
    const reported: unknown[] = [];
    config.onUnhandledError = (err) => reported.push(err);
    expect(CancelSignal.from(EMPTY).isCancelled).toBe(false);
    expect(CancelSignal.from(throwError(() => new Error('x'))).isCancelled).toBe(false);
    const source = new Subject<unknown>();
    const s = CancelSignal.from(source);
    source.error(new Error('later'));
    expect(s.isCancelled).toBe(false);
    expect(reported).toEqual([]);
    expect(() => CancelSignal.from(NEVER).dispose()).not.toThrow();
  });
});

describe('children attached while a cancel is being delivered', () => {
  it('a child created by a listener after a reset does not see the cancel being delivered', () => {
    const parent = new CancelSignal();
    const first = parent.child();
    let second: CancelSignal | undefined;
    first.onCancel(() => {
      parent.reset();
      second = parent.child();
    });
    parent.cancel('stop');
    expect(first.isCancelled).toBe(true);
    expect(second?.isCancelled).toBe(false);
    parent.cancel('again');
    expect(second?.reason).toBe('again');
  });
});
