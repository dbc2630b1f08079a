/**
 * loopctl/otel and guardrails (docs/telemetry.md, "Guardrails"): each check is a `guardrail {name}` span under the
 * run's span, ok when it passed, ERROR when it tripped; a check abandoned by the run's end is interrupted; every
 * span ends exactly once.
 */
import { NEVER } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { defineAgent, run } from '../src/index.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';
import { otelHarness } from './support/otel.js';

describe('guardrail spans', () => {
  it('a passing and a tripping check: one span each, the tripped one ERROR; an abandoned one interrupted', async () => {
    const h = otelHarness();
    const model = scriptedModel(['ok']);
    const agent = defineAgent({
      name: 'g',
      instructions: '',
      model,
      guardrails: {
        input: [
          { name: 'fine', check: () => ({ tripwire: false }) },
          { name: 'stuck', check: () => NEVER },
          { name: 'strict', check: () => Promise.resolve({ tripwire: true, output: 'no' }) },
        ],
      },
    });
    const events = await collectEvents(run(agent, 'hi', { telemetry: h.telemetry, idGenerator: sequentialIds() }));
    expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'guardrail' });
    const [root] = h.tree();
    const guards = root!.children!.filter((c) => c.name.startsWith('guardrail '));
    expect(guards).toEqual([
      {
        name: 'guardrail fine',
        attributes: {
          'loopctl.guardrail.name': 'fine',
          'loopctl.guardrail.kind': 'input',
          'loopctl.guardrail.mode': 'parallel',
          'loopctl.guardrail.tripped': false,
        },
      },
      {
        name: 'guardrail stuck',
        attributes: {
          'loopctl.guardrail.name': 'stuck',
          'loopctl.guardrail.kind': 'input',
          'loopctl.guardrail.mode': 'parallel',
          'loopctl.interrupted': true,
        },
      },
      {
        name: 'guardrail strict',
        attributes: {
          'loopctl.guardrail.name': 'strict',
          'loopctl.guardrail.kind': 'input',
          'loopctl.guardrail.mode': 'parallel',
          'loopctl.guardrail.tripped': true,
          'error.type': 'GuardrailTrippedError',
        },
        status: { code: 'ERROR', message: 'guardrail strict tripped' },
      },
    ]);
    expect(h.endings()).toMatchObject({ open: [], twice: [] });
  });

  it("'hold': a chunk check abandoned for the whole answer's check ends interrupted; the final one ok", async () => {
    const h = otelHarness();
    const model = scriptedModel([{ text: ['One. ', 'Two'] }]);
    const agent = defineAgent({
      name: 'g',
      instructions: '',
      model,
      guardrails: { output: [{ name: 'h', mode: 'hold', check: (o) => (o.final ? { tripwire: false } : NEVER) }] },
    });
    const events = await collectEvents(run(agent, 'hi', { telemetry: h.telemetry }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'One. Two' });
    const [root] = h.tree();
    const guards = root!.children!.filter((c) => c.name === 'guardrail h').map((c) => c.attributes);
    expect(guards).toEqual([
      expect.objectContaining({ 'loopctl.interrupted': true }),
      expect.objectContaining({ 'loopctl.guardrail.mode': 'hold', 'loopctl.guardrail.tripped': false }),
    ]);
    expect(h.endings()).toMatchObject({ open: [], twice: [] });
  });
});
