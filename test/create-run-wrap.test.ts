/**
 * The internal entry's hook point for context propagation (docs/architecture.md, "The internal
 * entry and its hook point"): `createRun(agent, input, options, { wrap })` runs the run's start, each
 * hook, each model request and each tool's execute (and its subscription) inside the wrapper, the
 * way a telemetry layer runs them inside their span; a sub-run (agent as tool) inherits it.
 */
import { Observable, tap } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRun } from '../src/engine/create-run.js';
import type { RunWrap } from '../src/engine/internals.js';
import { defineAgent, tool, type ModelProvider } from '../src/index.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';

/** A "span" stack: what code sees as its current context while a wrapper runs it. */
function tracer() {
  const stack: string[] = [];
  const seen: string[] = [];
  const within = <T>(name: string, fn: () => T): T => {
    stack.push(name);
    try {
      return fn();
    } finally {
      stack.pop();
    }
  };
  const wrap: RunWrap = {
    run: (run, fn) => within(`run ${run.agent}`, fn),
    tool: (call, fn) => within(`tool ${call.name}`, fn),
    model: (attempt, fn) => within(`model ${attempt.model} #${attempt.attempt}`, fn),
    hook: (hook, fn) => within(`hook ${hook}`, fn),
  };
  const current = (what: string) => seen.push(`${what} in [${stack.join(' > ')}]`);
  return { wrap, current, seen };
}

describe('createRun internals.wrap', () => {
  it('runs the start, each hook, each model request and each tool (execute and subscription) inside it', async () => {
    const t = tracer();
    const echo = tool({
      name: 'echo',
      description: 'echo',
      parameters: z.object({}),
      execute: () => {
        t.current('execute');
        return new Observable<string>((s) => {
          t.current('subscribe');
          s.next('ok');
          s.complete();
        });
      },
    });
    const scripted = scriptedModel([{ toolCalls: [{ name: 'echo' }] }, 'done'], { id: 'm' });
    const model: ModelProvider = { id: 'm', call: (request) => (t.current('call'), scripted.call(request)) };
    const hooks = { turnStarted: () => void t.current('turnStarted') };
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [echo], hooks });
    const run$ = createRun(agent, 'go', { idGenerator: sequentialIds() }, { wrap: t.wrap });
    const events = await collectEvents(run$.pipe(tap((e) => e.type === 'run_started' && t.current('run_started'))));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    expect(t.seen).toEqual([
      'run_started in [run a]',
      'turnStarted in [hook turnStarted]',
      'call in [model m #1]',
      'execute in [tool echo]',
      'subscribe in [tool echo]',
      'turnStarted in [hook turnStarted]',
      'call in [model m #1]', // the second turn's model call, its first attempt
    ]);
  });

  it('a sub-run (agent as tool) inherits it: its tools and requests are wrapped too', async () => {
    const t = tracer();
    const execute = () => void t.current('inner');
    const inner = tool({ name: 'inner', description: 'inner', parameters: z.object({}), execute });
    const childModel = scriptedModel([{ toolCalls: [{ name: 'inner' }] }, 'child done']);
    const child = defineAgent({ name: 'child', instructions: '', model: childModel, tools: [inner] });
    const parentModel = scriptedModel([{ toolCalls: [{ name: 'research', arguments: { input: 'x' } }] }, 'done']);
    const research = child.asTool({ name: 'research', description: 'research' });
    const parent = defineAgent({ name: 'parent', instructions: '', model: parentModel, tools: [research] });
    const events = await collectEvents(createRun(parent, 'go', {}, { wrap: t.wrap }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    expect(t.seen).toEqual(['inner in [tool inner]']);
  });
});
