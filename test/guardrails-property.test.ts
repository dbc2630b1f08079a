/**
 * Guardrails under random schedules (docs/guardrails.md), in virtual time: random input, output and tool guardrails
 * (modes, delays, verdicts, checks that throw), random model pacing, tool calls and a user cancel at a random frame.
 * Whatever happens: exactly one terminal event, last; a run that did not complete leaves the session exactly as it
 * was; in 'hold' mode no text of a chunk the guardrail refused reaches the subscriber (what it got is a prefix of
 * the answer made of passed chunks only); a trip is reported as `guardrail` with the tripping guardrail's name.
 */
import fc from 'fast-check';
import { map, timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  MemorySession,
  defineAgent,
  isTerminalEvent,
  run,
  tool,
  type GuardrailVerdict,
  type InputGuardrail,
  type Item,
  type OutputGuardrail,
  type RunEvent,
  type ToolGuardrail,
} from '../src/index.js';
import { scriptedModel, type ScriptedStep } from '../src/testing/index.js';
import { checkProperty } from './support/check-property.js';

const SENTENCES = ['Fine. ', 'All good. ', 'The BAD word. ', 'Still fine. ', 'End'];

const scenario = fc.record({
  input: fc.option(
    fc.record({
      mode: fc.constantFrom('parallel' as const, 'before' as const),
      delay: fc.integer({ min: 0, max: 6 }),
      verdict: fc.constantFrom('pass', 'trip', 'throw'),
    }),
    { nil: undefined },
  ),
  output: fc.option(
    fc.record({
      mode: fc.constantFrom('hold' as const, 'parallel' as const, 'after' as const),
      delays: fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 4 }),
    }),
    { nil: undefined },
  ),
  tool: fc.option(
    fc.record({
      when: fc.constantFrom('before' as const, 'after' as const),
      onTrip: fc.constantFrom('reject' as const, 'end_run' as const),
      delay: fc.integer({ min: 0, max: 4 }),
      trip: fc.boolean(),
    }),
    { nil: undefined },
  ),
  answer: fc.array(fc.constantFrom(...SENTENCES), { minLength: 1, maxLength: 5 }),
  deltaDelayMs: fc.integer({ min: 0, max: 3 }),
  toolFirst: fc.boolean(),
  cancelAt: fc.option(fc.integer({ min: 0, max: 25 }), { nil: undefined }),
});

const PRIOR: readonly Item[] = Object.freeze([
  { type: 'user', id: 'p1', text: 'earlier' },
  { type: 'assistant', id: 'p2', text: 'earlier answer', toolCalls: [] },
]);

it('exactly one terminal; nothing kept unless completed; no refused text delivered in hold mode', () => {
  let runs = 0;
  const outcomes: Record<string, number> = {};
  checkProperty(
    fc.property(scenario, (s) => {
      const ts = new TestScheduler((a, b) => expect(a).toEqual(b));
      ts.run(() => {
        const input: InputGuardrail[] = [];
        if (s.input !== undefined) {
          const { mode, delay, verdict } = s.input;
          input.push({
            name: 'in',
            mode,
            check: () =>
              verdict === 'throw'
                ? timer(delay).pipe(map(() => { throw new Error('checker down'); })) // prettier-ignore
                : timer(delay).pipe(map((): GuardrailVerdict => ({ tripwire: verdict === 'trip' }))),
          });
        }
        const output: OutputGuardrail[] = [];
        let checks = 0;
        if (s.output !== undefined) {
          const { mode, delays } = s.output;
          output.push({
            name: 'out',
            mode,
            check: (o) => {
              const delay = delays[checks++ % delays.length]!;
              return timer(delay).pipe(map((): GuardrailVerdict => ({ tripwire: o.text.includes('BAD') })));
            },
          });
        }
        const toolGuards: ToolGuardrail[] = [];
        if (s.tool !== undefined) {
          const { when, onTrip, delay, trip } = s.tool;
          toolGuards.push({
            name: 'tool',
            when,
            onTrip,
            check: () => timer(delay).pipe(map((): GuardrailVerdict => ({ tripwire: trip }))),
          });
        }
        const t = tool({ name: 'look', description: 'looks', parameters: z.object({}), execute: () => timer(2) });
        const steps: ScriptedStep[] = [
          ...(s.toolFirst ? [{ toolCalls: [{ name: 'look' }], delayMs: 1 }] : []),
          { text: s.answer, deltaDelayMs: s.deltaDelayMs },
        ];
        const model = scriptedModel(steps);
        const agent = defineAgent({
          name: 'p',
          instructions: '',
          model,
          tools: [t],
          guardrails: { input, output, tool: toolGuards },
        });
        const session = new MemorySession(PRIOR);
        const cancel = new CancelSignal();
        if (s.cancelAt !== undefined) ts.schedule(() => cancel.cancel('user'), s.cancelAt);
        const events: RunEvent[] = [];
        run(agent, 'go', { session, cancel }).subscribe((e) => events.push(e));
        ts.flush();
        runs++;
        const terminals = events.filter(isTerminalEvent);
        expect(terminals).toHaveLength(1);
        expect(events.at(-1)).toBe(terminals[0]);
        const end = terminals[0]!;
        const key = end.type === 'run_failed' ? `failed:${end.stopReason}` : end.type;
        outcomes[key] = (outcomes[key] ?? 0) + 1;
        if (end.type === 'run_completed') expect(session.items.slice(0, 2)).toEqual(PRIOR);
        else expect(session.items).toEqual(PRIOR); // nothing kept: the session exactly as before
        if (end.type === 'run_failed') {
          expect(end.stopReason).toBe('guardrail');
          expect(['in', 'out', 'tool']).toContain((end.error as { guardrail?: string }).guardrail);
        }
        const answer = s.answer.join('');
        // The text of the last model attempt's answer the subscriber got (a tool-call turn streams none).
        const delivered = events.map((e) => (e.type === 'text_delta' ? e.delta : '')).join('');
        expect(answer.startsWith(delivered)).toBe(true);
        if (s.output?.mode === 'hold') expect(delivered).not.toContain('BAD');
        if (s.output !== undefined && answer.includes('BAD')) expect(end.type).not.toBe('run_completed');
        if (end.type === 'run_completed') expect(end.output).toBe(answer);
      });
    }),
    300,
    'test/guardrails-property.test.ts',
  );
  console.log(`guardrail property: ${runs} runs, outcomes ${JSON.stringify(outcomes)}`);
  expect(runs).toBeGreaterThanOrEqual(300);
});
