/**
 * The web app's state (src/web/state.ts) under the AG-UI frames of guarded runs (localRuns → toAgUiFrames): an
 * answer an output guardrail retracts ('after') is dropped from the transcript, an answer it withholds ('hold')
 * shows only the chunks that passed, and the run ends failed with code `guardrail`.
 */
import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { toAgUiFrames, type AgUiFrame } from '../src/ag-ui/index.js';
import { defineAgent, localRuns, type OutputGuardrail } from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';
import { initialState, reduce, type ChatState } from '../src/web/state.js';

const THREAD = 'thread-g';

async function framesOf(guard: OutputGuardrail, text: string[]): Promise<AgUiFrame[]> {
  const model = scriptedModel([{ text }]);
  const agent = defineAgent({ name: 'helper', instructions: 'i', model, guardrails: { output: [guard] } });
  const runs = localRuns({ agents: { helper: agent } });
  const { runId } = await runs.start({ agent: 'helper', threadId: THREAD, input: 'hello?', principal: 'p' });
  return lastValueFrom(runs.events(runId, { principal: 'p' }).pipe(toAgUiFrames({ threadId: THREAD }), toArray()));
}

const shown = (frames: readonly AgUiFrame[]): ChatState =>
  frames.reduce(
    (s, f) => reduce(s, { type: 'frame', id: f.id, event: f.event }),
    reduce(initialState(THREAD), { type: 'send', id: 'u1', text: 'hello?' }),
  );

describe('web app state: guarded answers', () => {
  it("'after': the streamed answer is dropped when the guardrail retracts it; the run ends failed (guardrail)", async () => {
    const guard: OutputGuardrail = { name: 'pin', check: (o) => ({ tripwire: o.text.includes('4321') }) };
    const state = shown(await framesOf(guard, ['The pin ', 'is 4321.']));
    expect(state.entries.some((e) => e.kind === 'answer')).toBe(false);
    expect(JSON.stringify(state.entries)).not.toContain('4321');
    expect(state.entries.at(-1)).toMatchObject({ kind: 'outcome', outcome: 'failed', code: 'guardrail' });
  });

  it("'hold': only the sentences that passed are shown; the refused one never appears", async () => {
    const guard: OutputGuardrail = { name: 'pin', mode: 'hold', check: (o) => ({ tripwire: o.text.includes('4321') }) };
    const state = shown(await framesOf(guard, ['Hello there. ', 'The pin ', 'is 4321. ', 'Bye.']));
    expect(state.entries.filter((e) => e.kind === 'answer')).toEqual([
      expect.objectContaining({ kind: 'answer', text: 'Hello there. ' }),
    ]);
    expect(JSON.stringify(state.entries)).not.toMatch(/4321|Bye/);
    expect(state.entries.at(-1)).toMatchObject({ kind: 'outcome', outcome: 'failed', code: 'guardrail' });
  });
});
