import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { childEntryCount } from '../src/cancel/cancel-signal.js';
import { CancelSignal, defineAgent, run, tool } from '../src/index.js';
import { collectEvents, gate, scriptedModel } from '../src/testing/index.js';

/**
 * A child CancelSignal is held weakly by its parent: dropping every reference
 * to a child is enough to free it, as for a token tree in Rust or for
 * `AbortSignal.any` in Node. Something that still listens to a child keeps it
 * (a listener is never lost to GC), `dispose()` still detaches at once, and a
 * live run keeps its own child token. Vitest runs with `--expose-gc`.
 */
const gc = (globalThis as { gc?: () => void }).gc;

async function collectGarbage(): Promise<void> {
  for (let i = 0; i < 6; i++) {
    gc!();
    await new Promise((r) => setTimeout(r, 0));
  }
}

const aliveCount = (refs: readonly WeakRef<object>[]): number => refs.filter((r) => r.deref() !== undefined).length;

describe('a child CancelSignal is held weakly by its parent', () => {
  it(
    'a long-lived parent hands out 10 000 children that are dropped without dispose(): GC frees all of them; ' +
      "three kept children then fire with the parent's reason, in creation order",
    async () => {
      expect(typeof gc).toBe('function');
      const parent = new CancelSignal(); // an app-wide shutdown token, kept for the whole test
      const dropped = ((): WeakRef<CancelSignal>[] => {
        const refs: WeakRef<CancelSignal>[] = [];
        for (let i = 0; i < 10_000; i++) refs.push(new WeakRef(parent.child())); // one per request, never disposed
        return refs;
      })();
      expect(aliveCount(dropped)).toBe(10_000); // nothing collected yet: the assertion below is not vacuous
      await collectGarbage();
      expect(aliveCount(dropped)).toBe(0);

      const kept = [parent.child(), parent.child(), parent.child()];
      await collectGarbage(); // the caller's references alone keep them
      const heard: [number, unknown][] = [];
      kept.forEach((child, i) => child.onCancel((r) => heard.push([i, r])));
      const reason = { type: 'shutdown' };
      parent.cancel(reason);
      expect(heard.map(([i]) => i)).toEqual([0, 1, 2]);
      expect(heard.every(([, r]) => r === reason)).toBe(true);
      expect(kept.map((c) => c.reason === reason)).toEqual([true, true, true]);
    },
  );

  it("the parent's set of children does not grow with dropped children", async () => {
    const parent = new CancelSignal();
    const kept = parent.child();
    for (let i = 0; i < 10_000; i++) parent.child();
    expect(childEntryCount(parent)).toBe(10_001);
    // Finalization callbacks run in a task after a GC: give them a bounded number of rounds.
    for (let round = 0; round < 20 && childEntryCount(parent) > 1; round++) await collectGarbage();
    expect(childEntryCount(parent)).toBe(1);
    parent.cancel('stop');
    expect(kept.reason).toBe('stop');
  });

  it('dispose() still detaches a child at once, without waiting for GC', () => {
    const parent = new CancelSignal();
    const [a, b, c] = [parent.child(), parent.child(), parent.child()];
    b.dispose();
    expect(childEntryCount(parent)).toBe(2);
    parent.cancel('stop');
    expect([a.reason, b.isCancelled, b.reason, c.reason]).toEqual(['stop', false, undefined, 'stop']);
  });

  it('a dropped child that something listens to is kept until it fires; one nobody listens to is freed', async () => {
    const parent = new CancelSignal();
    const heard: unknown[] = [];
    const refs = ((): Record<'listened' | 'middle' | 'viewed' | 'unlistened', WeakRef<CancelSignal>> => {
      const listened = parent.child();
      listened.onCancel((r) => heard.push(['listener', r]));
      const middle = parent.child(); // dropped itself, but its own child is listened to
      middle.child().onCancel((r) => heard.push(['grandchild', r]));
      const viewed = parent.child(); // like fetch(url, { signal: parent.child().signal })
      const view = viewed.signal;
      view.addEventListener('abort', () => heard.push(['view', view.reason]));
      const unlistened = parent.child();
      const remove = unlistened.onCancel(() => heard.push('removed listener'));
      remove();
      return {
        listened: new WeakRef(listened),
        middle: new WeakRef(middle),
        viewed: new WeakRef(viewed),
        unlistened: new WeakRef(unlistened),
      };
    })();
    await collectGarbage();
    expect(refs.listened.deref()).toBeInstanceOf(CancelSignal);
    expect(refs.middle.deref()).toBeInstanceOf(CancelSignal);
    expect(refs.viewed.deref()).toBeInstanceOf(CancelSignal);
    expect(refs.unlistened.deref()).toBeUndefined();

    parent.cancel('stop');
    expect(heard).toEqual([
      ['listener', 'stop'],
      ['grandchild', 'stop'],
      ['view', 'stop'],
    ]);
    await collectGarbage(); // fired: nothing is waiting on them any more
    expect([refs.listened, refs.middle, refs.viewed].map((r) => r.deref())).toEqual([undefined, undefined, undefined]);
  });

  it("a child created by the parent's own listener after a reset belongs to the next token", () => {
    const parent = new CancelSignal();
    const first = parent.child();
    let second: CancelSignal | undefined;
    parent.onCancel(() => {
      parent.reset();
      second = parent.child();
    });
    parent.cancel('stop');
    expect(first.reason).toBe('stop');
    expect(second?.isCancelled).toBe(false);
    parent.cancel('again');
    expect(second?.reason).toBe('again');
  });

  it('a run keeps its child token while it lives: GC during a tool call, then the caller cancels', async () => {
    const caller = new CancelSignal();
    const started = gate();
    const slow = tool({
      name: 'slow',
      description: '',
      parameters: z.object({}),
      execute: () => (started.open(), new Promise<string>(() => {})),
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'slow' }] }, 'never']);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [slow] });
    const done = collectEvents(run(agent, 'go', { cancel: caller }));
    await started.promise;
    await collectGarbage();
    const reason = { type: 'shutdown' };
    caller.cancel(reason);
    const terminal = (await done).at(-1);
    expect(terminal).toMatchObject({ type: 'run_cancelled', phase: 'tool_call' });
    expect(terminal?.type === 'run_cancelled' && terminal.reason).toBe(reason);
    expect(model.requests).toHaveLength(1);
  });
});
