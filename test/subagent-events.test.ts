import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CancelSignal, Mailbox, defineAgent, run, tool, type RunEvent } from '../src/index.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';

/**
 * Agent as tool, what the parent sees (guarantee 12: sub-runs on a child
 * token): the
 * child's events as `subrun_event` with their path, usage summed, histories
 * kept apart, the child's own mailbox, and child tokens that detach.
 */
const usage = (n: number) => ({ inputTokens: n, outputTokens: n, totalTokens: 2 * n });

function tree() {
  const seen: { mailbox?: Mailbox; token?: CancelSignal; context?: unknown } = {};
  const probe = tool({
    name: 'probe',
    description: '',
    parameters: z.object({}),
    execute: (_a, ctx) => {
      seen.mailbox = ctx.mailbox;
      seen.token = ctx.cancel;
      seen.context = ctx.context;
      return 'probed';
    },
  });
  const grandModel = scriptedModel([
    { toolCalls: [{ name: 'probe' }], usage: usage(1) },
    { text: 'grand result', usage: usage(2) },
  ]);
  const grand = defineAgent({ name: 'grand', instructions: '', model: grandModel, tools: [probe] });
  const childModel = scriptedModel([
    { toolCalls: [{ name: 'ask_grand', arguments: { input: 'deeper' } }], usage: usage(10) },
    { text: 'child result', usage: usage(20) },
  ]);
  const child = defineAgent({
    name: 'child',
    instructions: '',
    model: childModel,
    tools: [grand.asTool({ name: 'ask_grand', description: '' })],
  });
  const parentModel = scriptedModel([
    { toolCalls: [{ name: 'ask_child', arguments: { input: 'task' } }], usage: usage(100) },
    { text: 'parent result', usage: usage(200) },
  ]);
  let parentMailbox: Mailbox | undefined;
  let parentToken: CancelSignal | undefined;
  const parent = defineAgent({
    name: 'parent',
    instructions: '',
    model: parentModel,
    tools: [child.asTool({ name: 'ask_child', description: '' })],
    hooks: { turnStarted: ({ mailbox, cancel }) => void ((parentMailbox = mailbox), (parentToken = cancel)) },
  });
  return {
    parent,
    parentModel,
    childModel,
    grandModel,
    seen,
    parentMailbox: () => parentMailbox,
    parentToken: () => parentToken,
  };
}

describe('sub-agents: events, usage, history', () => {
  it('relays child events as subrun_event with growing paths, innermost event kept', async () => {
    const t = tree();
    const events = await collectEvents(run(t.parent, 'go'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'parent result' });
    const sub = events.filter((e): e is Extract<RunEvent, { type: 'subrun_event' }> => e.type === 'subrun_event');
    expect(sub.every((e) => e.event.type !== 'subrun_event')).toBe(true);
    const label = (e: (typeof sub)[number]) => `${e.path.join('/')}:${e.event.type}`;
    const child = sub.filter((e) => e.path.length === 1).map(label);
    const grand = sub.filter((e) => e.path.length === 2).map(label);
    expect(child[0]).toBe('ask_child:run_started');
    expect(child.at(-1)).toBe('ask_child:run_completed');
    expect(child).toContain('ask_child:tool_call_completed');
    expect(grand[0]).toBe('ask_child/ask_grand:run_started');
    expect(grand).toContain('ask_child/ask_grand:tool_call_completed');
    expect(grand.at(-1)).toBe('ask_child/ask_grand:run_completed');
    // The grandchild's run ends before the child's tool call completes, which precedes the child's end.
    const idx = (l: string) => sub.map(label).indexOf(l);
    expect(idx('ask_child/ask_grand:run_completed')).toBeLessThan(idx('ask_child:tool_call_completed'));
    // Every relayed event is stamped by the parent run (its seq order).
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(sub.map((e) => e.runId))).toEqual(new Set([events[0]!.runId]));
    expect(new Set(sub.map((e) => e.event.runId)).size).toBe(2);
  });

  it('sums every sub-run usage into the parent', async () => {
    const t = tree();
    const events = await collectEvents(run(t.parent, 'go'));
    const terminal = events.at(-1)!;
    expect(terminal).toMatchObject({ type: 'run_completed', usage: usage(333) });
    const childEnd = events.find(
      (e) => e.type === 'subrun_event' && e.path.length === 1 && e.event.type === 'run_completed',
    ) as Extract<RunEvent, { type: 'subrun_event' }>;
    expect(childEnd.event).toMatchObject({ usage: usage(33) });
  });

  it('keeps each history in its own run; the parent gets only the final output; the child has its own mailbox and context', async () => {
    const t = tree();
    const events = await collectEvents(run(t.parent, 'go', { context: { user: 'u1' } }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed' });
    const parentItems = t.parentModel.requests[1]!.items;
    expect(parentItems.map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result']);
    expect(parentItems[2]).toMatchObject({ output: 'child result', isError: false });
    expect(t.childModel.requests[0]!.items).toEqual([expect.objectContaining({ type: 'user', text: 'task' })]);
    expect(t.childModel.requests[1]!.items.map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result']);
    expect(t.childModel.requests[1]!.items[2]).toMatchObject({ output: 'grand result' });
    expect(t.grandModel.requests[0]!.items).toEqual([expect.objectContaining({ type: 'user', text: 'deeper' })]);
    expect(t.seen.mailbox).toBeInstanceOf(Mailbox);
    expect(t.seen.mailbox).not.toBe(t.parentMailbox());
    expect(t.seen.context).toEqual({ user: 'u1' });
  });

  it('child tokens detach when their sub-run ends: a later parent cancel reaches none, and the parent holds no reference', async () => {
    const parentTokens: CancelSignal[] = []; // held strongly: a child still attached would stay reachable from them
    // One tree per call, so the test's own frame holds no token (only the WeakRef).
    const oneTree = async (): Promise<WeakRef<CancelSignal>> => {
      const t = tree();
      await collectEvents(run(t.parent, 'go'));
      const grandToken = t.seen.token!;
      parentTokens.push(t.parentToken()!);
      t.parentToken()!.cancel('late');
      expect(grandToken.isCancelled).toBe(false); // detached from the parent chain
      return new WeakRef(grandToken);
    };
    const refs: WeakRef<CancelSignal>[] = [];
    for (let i = 0; i < 3; i++) refs.push(await oneTree());
    const gc = (globalThis as { gc?: () => void }).gc;
    expect(gc).toBeTypeOf('function'); // vitest runs with --expose-gc
    for (let i = 0; i < 10 && refs.some((r) => r.deref()); i++) {
      await new Promise((r) => setTimeout(r, 0));
      gc!();
    }
    expect(refs.filter((r) => r.deref() !== undefined)).toHaveLength(0);
    expect(parentTokens).toHaveLength(3);
  });
});
