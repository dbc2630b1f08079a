import { NEVER } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { CancelSignal, Mailbox, MemorySession, commitPartial, defineAgent, run, type Item } from '../src/index.js';
import { scriptedModel, sequentialIds } from '../src/testing/index.js';

/**
 * A long-lived mailbox stays small and fast: removal is O(1), and a removed
 * item that no run ever gave back leaves nothing behind. Only items a run
 * gave back are remembered as withdrawn (commitPartial needs that to leave
 * them out of a partial it writes).
 */

const gc = (globalThis as { gc?: () => void }).gc;

function heapAfterGc(): number {
  for (let i = 0; i < 3; i++) gc!();
  return process.memoryUsage().heapUsed;
}

describe('a long-lived mailbox with many withdrawals', () => {
  it('100 000 push + remove pairs of never-given-back items leave under 512 KB of heap behind', () => {
    expect(gc).toBeTypeOf('function'); // vitest runs the forks with --expose-gc
    const mailbox = new Mailbox();
    // Warm up the code paths first, so JIT code is not counted as the mailbox's memory.
    for (let i = 0; i < 1000; i++) mailbox.remove(mailbox.push(`warm ${i}`));
    const before = heapAfterGc();
    let removed = 0;
    for (let i = 0; i < 100_000; i++) if (mailbox.remove(mailbox.push(`message ${i}`))) removed++;
    const after = heapAfterGc();
    expect(removed).toBe(100_000);
    expect(mailbox.size).toBe(0);
    expect(mailbox.peek()).toEqual([]);
    expect(after - before).toBeLessThan(512 * 1024);
  });

  it('50 000 queued items removed front first, then back first: each removal true, the order kept throughout', () => {
    const mailbox = new Mailbox();
    const tokens = Array.from({ length: 50_000 }, (_, i) => mailbox.push(`m${i}`));
    expect(mailbox.size).toBe(50_000);
    for (let i = 0; i < 25_000; i++) expect(mailbox.remove(tokens[i]!)).toBe(true);
    expect(mailbox.size).toBe(25_000);
    expect(mailbox.peek()[0]).toBe(tokens[25_000]);
    for (let i = 49_999; i >= 25_001; i--) expect(mailbox.remove(tokens[i]!)).toBe(true);
    expect(mailbox.peek()).toEqual([tokens[25_000]]);
    expect(mailbox.remove(tokens[0]!)).toBe(false);
    expect(mailbox.remove(tokens[25_000]!)).toBe(true);
    expect(mailbox.size).toBe(0);
    // The mailbox still works as a queue afterwards.
    const a = mailbox.push('a');
    const b = mailbox.push('b');
    expect(mailbox.take()).toEqual([a, b]);
  });

  it('removals from the middle keep the neighbours linked in order', () => {
    const mailbox = new Mailbox();
    const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((t) => mailbox.push(t));
    expect(mailbox.remove(c!)).toBe(true);
    expect(mailbox.remove(a!)).toBe(true);
    expect(mailbox.remove(e!)).toBe(true);
    expect(mailbox.peek()).toEqual([b, d]);
    const f = mailbox.push('f');
    expect(mailbox.peek()).toEqual([b, d, f]);
    expect(mailbox.take()).toEqual([b, d, f]);
    mailbox.giveBack([b!, f!]);
    expect(mailbox.peek()).toEqual([b, f]);
    expect(mailbox.remove(f!)).toBe(true);
    expect(mailbox.peek()).toEqual([b]);
  });

  it('a given-back-then-withdrawn item is still not committed by commitPartial', async () => {
    const mailbox = new Mailbox();
    const cancel = new CancelSignal();
    const session = new MemorySession();
    const model = scriptedModel([{ text: ['partly'], hold: NEVER }]);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    // Many never-given-back withdrawals around it must not disturb the one that matters.
    for (let i = 0; i < 1000; i++) mailbox.remove(mailbox.push(`noise ${i}`));
    const steer = mailbox.push('use plan B');
    const partial = await new Promise<readonly Item[]>((resolve) =>
      run(agent, 'task', { mailbox, session, cancel, idGenerator: sequentialIds() }).subscribe((e) => {
        if (e.type === 'text_delta') cancel.cancel('stop');
        if (e.type === 'run_cancelled') resolve(e.partial);
      }),
    );
    expect(partial.some((i) => i.type === 'user' && i.id === steer.id)).toBe(true);
    expect(mailbox.peek()).toEqual([steer]); // given back to the front
    for (let i = 0; i < 1000; i++) mailbox.remove(mailbox.push(`more noise ${i}`));
    expect(mailbox.remove(steer)).toBe(true);
    expect(await commitPartial(session, partial, mailbox)).toEqual([]);
    expect(session.items.flatMap((i) => (i.type === 'user' ? [i.text] : []))).toEqual(['task']);
  });
});
