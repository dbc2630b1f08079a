import type { AGUIEvent } from '@ag-ui/core';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, defineAgent, run, type OutputGuardrail, type RunEvent } from '../src/index.js';
import { LOOPCTL_EVENTS, toAgUi } from '../src/ag-ui/index.js';
import { lastChunkEnd } from '../src/guardrails/stream-gate.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';
import { checkAgUiStream } from './support/ag-ui.js';

/**
 * Output guardrails (docs/guardrails.md) outside virtual time: where chunks end, what the AG-UI stream shows of a
 * retracted and of a withheld answer, `chunk` by characters, and bad definitions (of tool guardrails too).
 */

const agentWith = (output: OutputGuardrail[], text: string | string[], chunk?: 'sentence' | number) => {
  const model = scriptedModel([{ text }]);
  const guardrails = chunk === undefined ? { output } : { output, chunk };
  return defineAgent({ name: 'a', instructions: '', model, guardrails });
};
const toAg = async (events: RunEvent[]) => {
  const agui = await lastValueFrom(from(events).pipe(toAgUi({ threadId: 't' }), toArray()));
  await checkAgUiStream(agui);
  return agui;
};
const content = (agui: AGUIEvent[]) => agui.map((e) => (e.type === 'TEXT_MESSAGE_CONTENT' ? e.delta : '')).join('');

describe('chunks', () => {
  it('a sentence ends after . ! ? … (closing quotes too) and white space, or at a line break', () => {
    expect(lastChunkEnd('One. Two', 0, 'sentence')).toBe(5);
    expect(lastChunkEnd('One. Two! Three? ', 0, 'sentence')).toBe(17);
    expect(lastChunkEnd('He said "no." Then', 0, 'sentence')).toBe(14);
    expect(lastChunkEnd('3.14 is pi', 0, 'sentence')).toBe(0); // no white space after the dot
    expect(lastChunkEnd('line\nnext', 0, 'sentence')).toBe(5);
    expect(lastChunkEnd('One. Two', 5, 'sentence')).toBe(5);
  });

  it('a number of characters: the last multiple of it', () => {
    expect(lastChunkEnd('abcdefghij', 0, 4)).toBe(8);
    expect(lastChunkEnd('abc', 0, 4)).toBe(0);
    expect(lastChunkEnd('abcdefghij', 8, 4)).toBe(8);
  });

  it("chunk: 8 releases the held text eight characters at a time in 'hold' mode", async () => {
    const checked: string[] = [];
    const guard: OutputGuardrail = {
      name: 'h',
      mode: 'hold',
      check: (o) => (checked.push(o.text), { tripwire: false }),
    };
    const events = await collectEvents(run(agentWith([guard], ['abcdefghij', 'klmnopq'], 8), 'hi'));
    expect(checked).toEqual(['abcdefgh', 'abcdefghijklmnop', 'abcdefghijklmnopq']);
    const deltas = events.filter((e) => e.type === 'text_delta').map((e) => (e.type === 'text_delta' ? e.delta : ''));
    expect(deltas).toEqual(['abcdefgh', 'ijklmnop', 'q']);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'abcdefghijklmnopq' });
  });
});

describe('AG-UI', () => {
  it("'after': the retracted answer's message is closed and named in loopctl.guardrail_tripped; RUN_ERROR follows", async () => {
    const guard: OutputGuardrail = {
      name: 'leaks',
      check: (o) => ({ tripwire: o.text.includes('42'), output: 'pin' }),
    };
    const events = await collectEvents(
      run(agentWith([guard], ['The pin ', 'is 42.']), 'hi', { idGenerator: sequentialIds() }),
    );
    const agui = await toAg(events);
    const started = agui.find((e) => e.type === 'TEXT_MESSAGE_START');
    const tripped = agui.find((e) => e.type === 'CUSTOM' && e.name === LOOPCTL_EVENTS.guardrailTripped);
    expect(tripped).toMatchObject({
      value: {
        name: 'leaks',
        kind: 'output',
        retracted: true,
        messageId: (started as { messageId: string }).messageId,
      },
    });
    expect(agui.indexOf(tripped!)).toBeGreaterThan(agui.findIndex((e) => e.type === 'TEXT_MESSAGE_END'));
    expect(agui.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'guardrail' });
  });

  it("'hold': no character of the refused chunk reaches the AG-UI stream", async () => {
    const guard: OutputGuardrail = { name: 'h', mode: 'hold', check: (o) => ({ tripwire: o.text.includes('secret') }) };
    const text = ['Hello there. ', 'The secret ', 'is XYZZY. ', 'Bye.'];
    const events = await collectEvents(run(agentWith([guard], text), 'hi', { idGenerator: sequentialIds() }));
    const agui = await toAg(events);
    expect(content(agui)).toBe('Hello there. ');
    expect(JSON.stringify(agui)).not.toMatch(/secret|XYZZY|Bye/);
    expect(agui.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'guardrail' });
  });
});

describe('definitions', () => {
  const bad: [unknown, string][] = [
    [{ output: [{ name: 'a', check: () => 0, mode: 'before' }] }, 'agent.guardrails.output[0].mode'],
    [{ output: [{ name: 'a' }] }, 'agent.guardrails.output[0].check'],
    [{ output: [], chunk: 0 }, 'agent.guardrails.chunk'],
    [{ output: [], chunk: 'word' }, 'agent.guardrails.chunk'],
    [{ tool: [{ name: 'a', check: () => 0 }] }, 'agent.guardrails.tool[0].when'],
    [{ tool: [{ name: 'a', check: () => 0, when: 'before', onTrip: 'warn' }] }, 'agent.guardrails.tool[0].onTrip'],
    [{ tool: [{ name: 'a', check: () => 0, when: 'after', tools: 'read' }] }, 'agent.guardrails.tool[0].tools'],
  ];
  for (const [guardrails, field] of bad) {
    it(`refuses ${field} (${JSON.stringify(guardrails)})`, () => {
      const make = () =>
        defineAgent({ name: 'a', instructions: '', model: scriptedModel([]), guardrails: guardrails as never });
      expect(make).toThrow(ConfigurationError);
      expect(make).toThrow(new RegExp(`^${field.replace(/[[\].]/g, '\\$&')}:`));
    });
  }
});
