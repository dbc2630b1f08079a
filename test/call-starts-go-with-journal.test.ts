/**
 * The call starts a journalling run records (`recordCallStart(runId, callId)`, docs/sessions.md, "No tool runs
 * twice") go with its journal: the run's commit removes them (a completed run), and so does its journal's discard
 * (a cancelled run). The store keeps none of them after the run; a resumed call's, keyed by its suspension, stay.
 */
import { NEVER } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemorySession, defineAgent, start, tool, type Item } from '../src/index.js';
import { scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';

const STEP: ScriptedStep = { toolCalls: [{ name: 'step', arguments: {} }] };

/** The ids of the calls in `items` (the run's assistant Items). */
const callIds = (items: readonly Item[]) =>
  items.flatMap((i) => (i.type === 'assistant' ? i.toolCalls : [])).map((c) => c.callId);

/** Whether a start of `callId` under `runId` is still recorded (a record then is refused), leaving it as it was. */
function recorded(session: MemorySession, runId: string, callId: string): boolean {
  const first = session.recordCallStart(runId, callId);
  if (first) session.discardJournal(runId); // removes the probe's own record again
  return !first;
}

describe("a journalling run's call starts go with its journal", () => {
  it('a completed run: its commit removes the starts of its calls; a suspension-keyed start stays', async () => {
    const session = new MemorySession();
    session.recordCallStart('suspension-1', 'call-x'); // a resumed call's start: not the run's
    let executions = 0;
    const step = tool({
      name: 'step',
      description: '',
      parameters: z.object({}),
      execute: () => `ran ${++executions}`,
    });
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([STEP, STEP, 'done']),
      tools: [step],
    });
    const handle = start(agent, 'go', { session, idGenerator: sequentialIds() });
    const result = await handle.result;
    const calls = callIds(result.items);
    const left = calls.filter((c) => recorded(session, handle.runId, c)).length;
    console.log(`completed run: tool calls ${calls.length}, executions ${executions}, starts left ${left}`);
    expect(result.output).toBe('done');
    expect(calls).toHaveLength(2);
    expect(calls.map((c) => recorded(session, handle.runId, c))).toEqual([false, false]);
    expect(session.readJournal(handle.runId)).toEqual({ sealed: true, turns: [] });
    expect(session.recordCallStart('suspension-1', 'call-x')).toBe(false);
  });

  it("a cancelled run: its journal's discard removes the start of the call it was running", async () => {
    const session = new MemorySession();
    let started = 0;
    const hang = tool({ name: 'step', description: '', parameters: z.object({}), execute: () => (started++, NEVER) });
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel([STEP, STEP]), tools: [hang] });
    const handle = start(agent, 'go', { session, idGenerator: sequentialIds() });
    const events: string[] = [];
    let callId = '';
    handle.events$.subscribe((e) => {
      events.push(e.type);
      if (e.type === 'tool_call_started') callId = e.callId;
    });
    while (started === 0) await new Promise((resolve) => setImmediate(resolve));
    const before = recorded(session, handle.runId, callId);
    handle.cancel('stop');
    await handle.result.catch(() => undefined);
    const after = recorded(session, handle.runId, callId);
    console.log(
      `cancelled run: terminal ${events.at(-1)}, the call's start recorded before the cancel ${before}, after ${after}`,
    );
    expect(events.at(-1)).toBe('run_cancelled');
    expect(before).toBe(true);
    expect(after).toBe(false);
    expect(session.journalledRuns()).toEqual([]);
  });
});
