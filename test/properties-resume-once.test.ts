import fc from 'fast-check';
import { checkProperty } from './support/check-property.js';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  MemorySession,
  ModelCallError,
  defineAgent,
  resume,
  start,
  tool,
  type RunEvent,
  type Session,
  type Suspended,
} from '../src/index.js';
import { scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';

/**
 * "Exactly once across resumes" (docs/run-control.md) as a property: a random suspended batch (1 to 3
 * calls, each needing approval or not, each running 0 to 3 frames), a random session (memory: answers
 * at once; slow: writes at once and answers 0 to 3 frames later; none: recorded in the process), then a
 * random sequence of up to 5 resumes of the same suspension, each cancelled at a random frame, failed at
 * its next model request, or completed. Every run in virtual time (TestScheduler run mode). Checked: no
 * call executed more than once; once a resume completes, each call of the batch either executed once or
 * the model read ToolCallAlreadyStartedError for it. FC_RUNS raises the count; a failure prints its seed
 * and path: FC_SEED=<seed> FC_PATH=<path> npx vitest run test/properties-resume-once.test.ts
 */
const NUM_RUNS = Number(process.env.FC_RUNS ?? 300);

type Ending = { readonly kind: 'cancel'; readonly at: number } | { readonly kind: 'fail' | 'complete' };

const scenarioArb = fc.record({
  // At least one call needs approval, so the run suspends.
  calls: fc
    .array(fc.record({ gated: fc.boolean(), frames: fc.integer({ min: 0, max: 3 }) }), { minLength: 1, maxLength: 3 })
    .map((calls) => (calls.some((c) => c.gated) ? calls : [{ ...calls[0]!, gated: true }, ...calls.slice(1)])),
  session: fc.constantFrom('memory', 'slow', 'none'),
  answerFrames: fc.integer({ min: 0, max: 3 }),
  endings: fc.array(
    fc.oneof(
      fc.record({ kind: fc.constant('cancel' as const), at: fc.integer({ min: 0, max: 10 }) }),
      fc.record({ kind: fc.constantFrom('fail' as const, 'complete' as const) }),
    ),
    { minLength: 1, maxLength: 5 },
  ),
});
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

interface Observed {
  readonly executions: Record<string, number>;
  /** Per completed resume: the call ids the model read ToolCallAlreadyStartedError for. */
  readonly completed: readonly (readonly string[])[];
  readonly ends: readonly string[];
}

function execute(s: Scenario): Observed {
  const ts = new TestScheduler((a, b) => expect(a).toEqual(b));
  const executions: Record<string, number> = {};
  const completed: string[][] = [];
  const ends: string[] = [];
  ts.run(() => {
    const tools = s.calls.map((c, i) =>
      tool({
        name: `t${i}`,
        description: 't',
        parameters: z.object({}),
        needsApproval: c.gated,
        execute: (_args, ctx) => {
          executions[ctx.callId] = (executions[ctx.callId] ?? 0) + 1;
          return ts.createColdObservable(`${'-'.repeat(c.frames)}(x|)`, { x: 'ok' });
        },
      }),
    );
    const agentWith = (steps: (ScriptedStep | string)[]) =>
      defineAgent({ name: 'ops', instructions: '', tools, model: scriptedModel(steps) });
    const memory = new MemorySession();
    const session: Session | undefined =
      s.session === 'none'
        ? undefined
        : s.session === 'memory'
          ? memory
          : {
              load: () => memory.load(),
              append: (items, options) => memory.append(items, options),
              recordCallStart: (suspensionId, callId) => {
                const first = memory.recordCallStart(suspensionId, callId);
                return ts.createColdObservable(`${'-'.repeat(s.answerFrames)}(a|)`, { a: first });
              },
            };
    const common = { ...(session ? { session } : {}), scheduler: ts, idGenerator: sequentialIds() };
    const toolCalls = s.calls.map((_, i) => ({ name: `t${i}`, callId: `c${i}` }));
    let suspended: Suspended | undefined;
    start(agentWith([{ toolCalls }]), 'go', { ...common, approvals: 'suspend' }).events$.subscribe((e: RunEvent) => {
      if (e.type === 'run_completed') suspended = e.suspended;
    });
    ts.flush();
    if (suspended === undefined) throw new Error('the run did not suspend');
    const decisions = Object.fromEntries(suspended.pending.map((p) => [p.callId, { approve: true } as const]));
    for (const ending of s.endings as readonly Ending[]) {
      const fatal = new ModelCallError('down', { status: 400, retryable: false });
      const steps: (ScriptedStep | string)[] =
        ending.kind === 'fail' ? [{ error: fatal }] : [{ text: 'done', delayMs: 2 }];
      const cancel = new CancelSignal();
      if (ending.kind === 'cancel') ts.schedule(() => void cancel.cancel('stop'), ending.at);
      const already: string[] = [];
      let end = '';
      resume(agentWith(steps), suspended, decisions, { ...common, cancel }).events$.subscribe((e: RunEvent) => {
        if (e.type === 'tool_call_failed' && e.error.name === 'ToolCallAlreadyStartedError') already.push(e.callId);
        if (e.type === 'run_completed' || e.type === 'run_cancelled' || e.type === 'run_failed') end = e.type;
      });
      ts.flush();
      ends.push(end);
      if (end === 'run_completed') {
        completed.push(already);
        break; // a completed resume keeps its claim: the suspension is done
      }
    }
  });
  return { executions, completed, ends };
}

function check(s: Scenario, o: Observed): void {
  const ids = s.calls.map((_, i) => `c${i}`);
  for (const id of ids) expect(o.executions[id] ?? 0, `executions of ${id}`).toBeLessThanOrEqual(1);
  for (const already of o.completed) {
    // Every call of the batch is accounted for: it ran once, or the model was told an earlier resume started it.
    for (const id of ids) {
      const ran = (o.executions[id] ?? 0) === 1;
      expect({ id, accounted: ran || already.includes(id) }).toEqual({ id, accounted: true });
    }
  }
}

describe('exactly once across resumes under random fail/cancel/resume sequences', () => {
  it(`no call executes twice, in ${NUM_RUNS} random sequences`, () => {
    let sequences = 0;
    let resumes = 0;
    let maxRuns = 0;
    checkProperty(
      fc.property(scenarioArb, (s) => {
        const o = execute(s);
        sequences++;
        resumes += o.ends.length;
        maxRuns = Math.max(maxRuns, ...Object.values(o.executions));
        check(s, o);
      }),
      NUM_RUNS,
      'test/properties-resume-once.test.ts',
    );
    console.log(`${sequences} sequences, ${resumes} resumes: at most ${maxRuns} execution per call`);
    expect(maxRuns).toBe(1);
  }, 120_000);
});
