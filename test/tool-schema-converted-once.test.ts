/**
 * A tool's zod parameters are converted to JSON Schema once per schema object: `tool()` checks the conversion, and
 * every agent that lists the tool (an app that defines its agent per request) sends that same frozen schema rather
 * than converting again. What the model receives is unchanged: zod's input schema without `$schema`.
 */
import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, run, tool } from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';

const params = z.object({ city: z.string(), days: z.number().int().optional() });
const forecast = tool({ name: 'forecast', description: 'Weather', parameters: params, execute: () => 'sunny' });

/** The parameters of the tools of the one request an agent with `tools` sends for a plain answer. */
async function sentParameters(tools: (typeof forecast)[]): Promise<unknown[]> {
  const model = scriptedModel([{ text: 'ok' }]);
  await lastValueFrom(run(defineAgent({ name: 'a', instructions: '', model, tools }), 'hi').pipe(toArray()));
  return model.requests[0]!.tools.map((t) => t.parameters);
}

describe("a tool's JSON Schema", () => {
  it('is what zod gives for its input, without $schema', async () => {
    const [sent] = await sentParameters([forecast]);
    const { $schema: _drop, ...expected } = z.toJSONSchema(params, { io: 'input' }) as Record<string, unknown>;
    expect(sent).toEqual(expected);
    expect(sent).toMatchObject({ type: 'object', required: ['city'] });
  });

  it('is one frozen object for every agent that lists the tool, and for another tool on the same schema', async () => {
    const twin = tool({ name: 'twin', description: 'Same schema', parameters: params, execute: () => 'x' });
    const [first] = await sentParameters([forecast]);
    const [second, third] = await sentParameters([forecast, twin]);
    expect(second).toBe(first);
    expect(third).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen((first as { properties: object }).properties)).toBe(true);
    expect(() => ((first as { properties: Record<string, unknown> }).properties['x'] = 1)).toThrow(TypeError);
  });

  it('is converted afresh for a different schema object of the same shape', async () => {
    const other = tool({
      name: 'forecast',
      description: 'Weather',
      parameters: z.object({ city: z.string(), days: z.number().int().optional() }),
      execute: () => 'sunny',
    });
    const [a] = await sentParameters([forecast]);
    const [b] = await sentParameters([other]);
    expect(b).not.toBe(a);
    expect(b).toEqual(a);
  });
});
