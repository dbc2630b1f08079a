import { EMPTY, of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, run, tool, type ToolResultItem } from '../src/index.js';
import { collectEvents, scriptedModel, type ScriptedToolCall } from '../src/testing/index.js';

/**
 * "Unusable output is a tool error" (docs/recovery.md): model output the engine cannot use (arguments that are not
 * JSON, fail the zod schema, are not an object for a raw JSON Schema tool, an
 * unknown tool name) and tools that fail go back to the model as tool errors;
 * the run goes on and completes.
 */
function setup(calls: ScriptedToolCall[], parallel = false) {
  const executed: string[] = [];
  const hooked: string[] = [];
  const echo = tool({
    name: 'echo',
    description: '',
    parameters: z.object({ text: z.string() }),
    execute: ({ text }) => (executed.push(`echo:${text}`), text),
  });
  const raw = tool({
    name: 'raw',
    description: '',
    parameters: { type: 'object', properties: { n: { type: 'number' } } },
    execute: (args) => (executed.push('raw'), args),
  });
  const boom = tool({
    name: 'boom',
    description: '',
    parameters: z.object({}),
    execute: () => {
      throw new Error('kaput');
    },
  });
  const rejects = tool({
    name: 'rejects',
    description: '',
    parameters: z.object({}),
    execute: () => Promise.reject(new Error('nope')),
  });
  const empty = tool({ name: 'empty', description: '', parameters: z.object({}), execute: () => EMPTY });
  const obj = tool({ name: 'obj', description: '', parameters: z.object({}), execute: () => of(1, { a: [1, 2] }) });
  const model = scriptedModel([{ toolCalls: calls }, 'done']);
  const agent = defineAgent({
    name: 'v',
    instructions: '',
    model,
    tools: [echo, raw, boom, rejects, empty, obj],
    hooks: { beforeToolCall: ({ call }) => void hooked.push(call.callId) },
    ...(parallel ? { parallelToolCalls: { maxConcurrency: 4 } } : {}),
  });
  return { model, agent, executed, hooked };
}

const results = (model: ReturnType<typeof scriptedModel>): ToolResultItem[] =>
  model.requests[1]!.items.filter((i): i is ToolResultItem => i.type === 'tool_result');

describe.each([false, true])('unusable model output becomes a tool error (parallel: %s)', (parallel) => {
  it('bad JSON, a zod failure, a non-object for a JSON Schema tool and an unknown name: errors for the model, valid calls run', async () => {
    const { model, agent, executed, hooked } = setup(
      [
        { name: 'echo', arguments: '{"text": ', callId: 'json' },
        { name: 'echo', arguments: { text: 42 }, callId: 'zod' },
        { name: 'raw', arguments: '[1, 2]', callId: 'array' },
        { name: 'raw', arguments: '"text"', callId: 'string' },
        { name: 'nope', arguments: {}, callId: 'unknown' },
        { name: 'echo', arguments: { text: 'fine' }, callId: 'ok' },
        { name: 'raw', arguments: '', callId: 'empty-args' },
      ],
      parallel,
    );
    const events = await collectEvents(run(agent, 'go'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    expect(executed).toEqual(['echo:fine', 'raw']);
    expect(hooked).toEqual(['ok', 'empty-args']); // refused calls never reach beforeToolCall
    const out = results(model);
    expect(out.map((r) => r.callId)).toEqual(['json', 'zod', 'array', 'string', 'unknown', 'ok', 'empty-args']);
    for (const r of out.slice(0, 5)) {
      expect(r.isError).toBe(true);
      expect(r.output.startsWith('Error: ')).toBe(true);
    }
    expect(out[0]!.output).toBe(
      'Error: the arguments of echo are not valid JSON (Unexpected end of JSON input), so the tool was not run. ' +
        'Arguments received (9 characters): {"text": ',
    );
    expect(out[1]!.output).toMatch(/^Error: invalid arguments for echo:\n/);
    expect(out[1]!.output).toContain('text');
    expect(out[2]!.output).toBe(
      'Error: the arguments of raw must be a JSON object, not an array, so the tool was not run. ' +
        'Arguments received (6 characters): [1, 2]',
    );
    expect(out[3]!.output).toBe(
      'Error: the arguments of raw must be a JSON object, not a string, so the tool was not run. ' +
        'Arguments received (6 characters): "text"',
    );
    // The history keeps only valid JSON objects: the raw text lives in the error results above.
    const assistant = model.requests[1]!.items.find((i) => i.type === 'assistant');
    expect(assistant?.type === 'assistant' && assistant.toolCalls.map((c) => c.arguments)).toEqual([
      '{}',
      '{"text":42}',
      '{}',
      '{}',
      '{}',
      '{"text":"fine"}',
      '{}',
    ]);
    expect(out[4]!.output).toBe('Error: unknown tool "nope"; available tools: echo, raw, boom, rejects, empty, obj');
    expect(out[5]).toEqual({ type: 'tool_result', callId: 'ok', output: 'fine', isError: false });
    expect(out[6]).toEqual({ type: 'tool_result', callId: 'empty-args', output: '{}', isError: false });
    const failed = events.filter((e) => e.type === 'tool_call_failed').map((e) => [e.callId, e.error.name]);
    expect(failed).toEqual([
      ['json', 'InvalidArgumentsError'],
      ['zod', 'InvalidArgumentsError'],
      ['array', 'InvalidArgumentsError'],
      ['string', 'InvalidArgumentsError'],
      ['unknown', 'UnknownToolError'],
    ]);
    const started = events.filter((e) => e.type === 'tool_call_started').map((e) => e.callId);
    expect(started).toEqual(['ok', 'empty-args']);
  });

  it('a throwing, a rejecting and an empty-Observable tool are tool errors; an Observable tool gives its last value as JSON', async () => {
    const { model, agent } = setup(
      [
        { name: 'boom', callId: 'b' },
        { name: 'rejects', callId: 'r' },
        { name: 'empty', callId: 'e' },
        { name: 'obj', callId: 'o' },
      ],
      parallel,
    );
    const events = await collectEvents(run(agent, 'go'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed' });
    expect(results(model)).toEqual([
      { type: 'tool_result', callId: 'b', output: 'Error: kaput', isError: true },
      { type: 'tool_result', callId: 'r', output: 'Error: nope', isError: true },
      { type: 'tool_result', callId: 'e', output: 'Error: tool empty returned an empty Observable', isError: true },
      { type: 'tool_result', callId: 'o', output: '{"a":[1,2]}', isError: false },
    ]);
    expect(
      events.filter((e) => e.type === 'tool_call_failed').map((e) => e.type === 'tool_call_failed' && e.interrupted),
    ).toEqual([false, false, false]);
  });
});
