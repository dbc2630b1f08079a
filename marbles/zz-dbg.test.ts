import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { it, expect } from 'vitest';
import { defineAgent, tool, run, CancelSignal } from '/work/main/src/index.js';
import { scriptedModel } from '/work/main/src/testing/index.js';
it('dbg', () => {
  const ts = new TestScheduler((a, b) => expect(a).toEqual(b));
  ts.run(({ cold }) => {
    const a = cold('--x|'), b = cold('------x|'), c = cold('--x|');
    const model = scriptedModel([{ toolCalls: [{ name: 'a' }, { name: 'b' }, { name: 'c' }], delayMs: 1 }, 'done']);
    const mk = (n: string, o: any) => tool({ name: n, description: '', parameters: z.object({}), execute: () => o });
    const agent = defineAgent({ name: 'x', instructions: '', model, tools: [mk('a', a), mk('b', b), mk('c', c)], parallelToolCalls: { maxConcurrency: 2 } });
    const cancel = new CancelSignal();
    const out: string[] = [];
    run(agent, 'go', { cancel, hooks: { afterToolCall: () => { out.push('after hook'); } } }).subscribe((e) => {
      out.push(ts.now() + ' ' + e.type + ' ' + ((e as any).name ?? (e as any).phase ?? ''));
      if (e.type === 'tool_call_completed') { Error.stackTraceLimit = 200; out.push(new Error().stack!.split('\n').slice(1, 200).filter(l => !l.includes("node_modules")).join('\n')); cancel.cancel('x'); }
    });
    ts.flush();
    console.log(out.join('\n'));
  });
});
