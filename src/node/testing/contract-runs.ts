import { lastValueFrom } from 'rxjs';
import type { IfBusy } from '../../runs/types.js';
import { runsCommandsContract } from './contract-runs-commands.js';
import { runsEventsContract } from './contract-runs-events.js';
import type { ContractFramework } from './kit.js';
import { RUNS_CONTRACT_AGENT } from './runs-agent.js';
import { refusal, runsParts, seqsOf, type MakeRuns, type RunsContractOptions, type RunsParts } from './runs-kit.js';

const QUEUEING: readonly IfBusy[] = ['enqueue', 'interrupt', 'rollback'];

/**
 * Registers the specs every `Runs` implementation must pass (docs/ui.md, "The Runs interface"), with the test
 * framework's own `describe`, `it` and `expect`, on a fresh `Runs` from `makeRuns` per test (closed at its end
 * when it has `close()`). The implementation serves `runsContractAgent()` (name `'runs-contract'`):
 * - `events({ afterSeq })` at every position from before the first event to past the terminal, for runs that
 *   completed, were cancelled, failed, were stopped, (with `suspending`) suspended and (with `lose`) were lost,
 *   read once they ended (compacted), and by readers attached while the run was live (read as the events came)
 *   through a completed, stopped or cancelled terminal: exactly the events after the cursor, completing at once
 *   when nothing is after it;
 * - every command on a live run, on one that ended, one that never existed and another principal's; 2 and 10
 *   concurrent cancels (exactly one `true`); every bad command field (`ConfigurationError` naming it);
 * - `ifBusy`: `'steer'` and `'reject'`, and `'enqueue'`, `'interrupt'`, `'rollback'` where `options.ifBusy`
 *   lists them (else `NotSupportedError`);
 * - retention: an ended run stays readable for `retainFinishedMs`, then it is `RunNotFoundError`.
 *
 * @example
 * import { describe, it, expect } from 'vitest';
 * const agents = { [RUNS_CONTRACT_AGENT]: runsContractAgent() };
 * runsContract({ describe, it, expect }, () => myRuns({ agents, retainFinishedMs: 2_000 }), {
 *   retention: { retainFinishedMs: 2_000, advance: (ms) => new Promise((r) => setTimeout(r, ms)) },
 * });
 */
export function runsContract(framework: ContractFramework, makeRuns: MakeRuns, options: RunsContractOptions): void {
  const parts = runsParts(framework, makeRuns, options);
  framework.describe('the Runs contract', () => {
    runsEventsContract(parts);
    runsCommandsContract(parts);
    ifBusyContract(parts);
    retentionContract(parts);
  });
}

function ifBusyContract(parts: RunsParts): void {
  const { describe, it, expect } = parts.framework;
  const served = new Set(parts.options.ifBusy ?? ['steer', 'reject']);
  describe('ifBusy', () => {
    it("'steer' (the default) steers the live run: its runId and a steering id; 'reject' is ThreadBusyError", () =>
      parts.withRuns(async (t) => {
        const runId = await t.start('hold', 'busy');
        await t.first(runId, 'text_delta');
        const req = { agent: RUNS_CONTRACT_AGENT, threadId: 'busy', input: 'more', principal: t.principal };
        const steered = await t.runs.start(req);
        expect([steered.runId, typeof steered.steeringId]).toEqual([runId, 'string']);
        expect(await refusal(t.runs.start({ ...req, ifBusy: 'reject' }))).toEqual({ name: 'ThreadBusyError' });
        expect(await refusal(t.runs.start({ ...req, ifBusy: 'later' as 'reject' }))).toEqual({
          name: 'ConfigurationError',
          field: 'ifBusy',
        });
        expect(await t.runs.cancel(runId, 'contract', t.principal)).toBe(true);
      }));

    for (const ifBusy of QUEUEING) {
      const what =
        ifBusy === 'enqueue'
          ? 'a new run that starts once the live one ended'
          : 'the live run cancelled, then the new run runs';
      const title = served.has(ifBusy) ? `'${ifBusy}': ${what}` : `'${ifBusy}': NotSupportedError naming ifBusy`;
      it(title, () =>
        parts.withRuns(async (t) => {
          const live = await t.start('hold', 'busy');
          await t.first(live, 'text_delta');
          const req = { agent: RUNS_CONTRACT_AGENT, threadId: 'busy', input: 'complete', principal: t.principal };
          if (!served.has(ifBusy)) {
            expect(await refusal(t.runs.start({ ...req, ifBusy }))).toEqual({
              name: 'NotSupportedError',
              field: 'ifBusy',
            });
            expect(await t.runs.cancel(live, 'contract', t.principal)).toBe(true);
            return;
          }
          const next = await t.runs.start({ ...req, ifBusy });
          expect(next.runId === live).toBe(false);
          if (ifBusy === 'enqueue') expect(await t.runs.cancel(live, 'contract', t.principal)).toBe(true);
          expect((await t.terminal(live)).type).toBe('run_cancelled');
          const terminal = await t.terminal(next.runId);
          expect([terminal.type, terminal.type === 'run_completed' && terminal.output]).toEqual([
            'run_completed',
            'one two three',
          ]);
        }),
      );
    }
  });
}

function retentionContract(parts: RunsParts): void {
  const { describe, it, expect } = parts.framework;
  const { retainFinishedMs, advance, slackMs = 0 } = parts.options.retention;
  describe('retention', () => {
    it(`an ended run stays readable for retainFinishedMs (${retainFinishedMs} ms here), then RunNotFoundError`, () =>
      parts.withRuns(async (t) => {
        const runId = await t.start('complete');
        const all = await t.read(runId);
        await advance(Math.floor(retainFinishedMs / 2));
        expect(seqsOf(await t.read(runId))).toEqual(seqsOf(all));
        expect(await t.runs.cancel(runId, 'late', t.principal)).toBe(false);
        await advance(retainFinishedMs - Math.floor(retainFinishedMs / 2) + slackMs + 1);
        const gone = await refusal(lastValueFrom(t.runs.events(runId, { principal: t.principal })));
        expect(gone).toEqual({ name: 'RunNotFoundError' });
        expect(await refusal(t.runs.cancel(runId, 'late', t.principal))).toEqual({ name: 'RunNotFoundError' });
      }));
  });
}
