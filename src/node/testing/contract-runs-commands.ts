/**
 * The command parts of `runsContract`: what each command answers on a live run, on one that ended, one that
 * never existed and another principal's; concurrent cancels; every bad field.
 */
import { lastValueFrom } from 'rxjs';
import { MAX_DURATION_MS } from '../../duration.js';
import type { Runs } from '../../runs/types.js';
import { refusal, type RunsParts, type RunsTest } from './runs-kit.js';

const NOT_FOUND = { name: 'RunNotFoundError' };

/** Every command once on `runId` as `principal`, each settled as what it answered or how it was refused. */
async function everyCommand(runs: Runs, runId: string, principal: string) {
  return {
    cancel: await refusal(runs.cancel(runId, 'contract', principal)),
    stop: await refusal(runs.stop(runId, { at: 'turn_end' }, principal)),
    steer: await refusal(runs.steer(runId, 'more', principal)),
    withdraw: await refusal(runs.withdraw(runId, 'no-such-steering', principal)),
    decide: await refusal(runs.decide(runId, 'no-such-call', { approve: true }, principal)),
    cancelToolCall: await refusal(runs.cancelToolCall(runId, 'no-such-call', 'contract', principal)),
  };
}

/** Every bad command field, as the call that sends it and the field its `ConfigurationError` names. */
const BAD_FIELDS: readonly { readonly what: string; readonly field: string; call(t: Cmd): Promise<unknown> }[] = [
  ...[Infinity, -Infinity, NaN, -1, 1.5, MAX_DURATION_MS + 1, 2 ** 53, '1000', null].map((graceMs) => ({
    what: `stop graceMs ${String(graceMs)}`,
    field: 'graceMs',
    call: (t: Cmd) => t.runs.stop(t.runId, { at: 'turn_end', graceMs: graceMs as number }, t.principal),
  })),
  bad('stop at', 'at', (t) => t.runs.stop(t.runId, { at: 'soon' as 'turn_end' }, t.principal)),
  bad('stop with an unknown key', 'gracems', (t) =>
    t.runs.stop(t.runId, { at: 'turn_end', gracems: 10 } as { at: 'turn_end' }, t.principal),
  ),
  bad('stop options not an object', 'options', (t) => t.runs.stop(t.runId, 'now' as never, t.principal)),
  bad('steer text not a string', 'text', (t) => t.runs.steer(t.runId, 7 as unknown as string, t.principal)),
  bad('withdraw steeringId empty', 'steeringId', (t) => t.runs.withdraw(t.runId, '', t.principal)),
  bad('withdraw steeringId not a string', 'steeringId', (t) => t.runs.withdraw(t.runId, 7 as never, t.principal)),
  bad('decide callId empty', 'callId', (t) => t.runs.decide(t.runId, '', { approve: true }, t.principal)),
  bad('decide approve not a boolean', 'approve', (t) =>
    t.runs.decide(t.runId, 'c1', { approve: 'yes' } as never, t.principal),
  ),
  bad('decide a rejection without a reason', 'reason', (t) =>
    t.runs.decide(t.runId, 'c1', { approve: false } as never, t.principal),
  ),
  bad('decide an approval with a reason', 'reason', (t) =>
    t.runs.decide(t.runId, 'c1', { approve: true, reason: 'x' } as never, t.principal),
  ),
  bad('decide with an unknown key', 'note', (t) =>
    t.runs.decide(t.runId, 'c1', { approve: true, note: 1 } as never, t.principal),
  ),
  bad('cancelToolCall callId empty', 'callId', (t) => t.runs.cancelToolCall(t.runId, '', 'r', t.principal)),
  ...[-2, 1.5, NaN, Infinity].map((afterSeq) =>
    bad(`events afterSeq ${afterSeq}`, 'afterSeq', (t) => t.read(t.runId, afterSeq)),
  ),
];

type Cmd = RunsTest & { readonly runId: string };

function bad(what: string, field: string, call: (t: Cmd) => Promise<unknown>) {
  return { what, field, call };
}

export function runsCommandsContract(parts: RunsParts): void {
  const { framework } = parts;
  const { describe, it, expect } = framework;

  describe('commands', () => {
    it('on a live run: steer answers an id, withdraw takes it back once, stop is taken once, cancel ends it', () =>
      parts.withRuns(async (t) => {
        const runId = await t.start('hold');
        await t.first(runId, 'text_delta');
        const { id } = await t.runs.steer(runId, 'later', t.principal);
        expect(typeof id === 'string' && id !== '').toBe(true);
        expect(await t.runs.withdraw(runId, id, t.principal)).toBe(true);
        expect(await t.runs.withdraw(runId, id, t.principal)).toBe(false);
        expect(await t.runs.decide(runId, 'no-such-call', { approve: true }, t.principal)).toBe(false);
        expect(await t.runs.cancelToolCall(runId, 'no-such-call', 'r', t.principal)).toBe(false);
        expect(await t.runs.stop(runId, { at: 'turn_end', graceMs: MAX_DURATION_MS }, t.principal)).toBe(true);
        expect(await t.runs.stop(runId, { at: 'turn_end' }, t.principal)).toBe(false);
        expect(await t.runs.cancel(runId, { why: 'contract' }, t.principal)).toBe(true);
        const terminal = await t.terminal(runId);
        expect(terminal.type === 'run_cancelled' && terminal.reason).toEqual({ why: 'contract' });
      }));

    it('decide and cancelToolCall reach a call awaiting approval: true once, the run goes on', () =>
      parts.withRuns(async (t) => {
        const rejected = await t.start('approve');
        const asked = await t.first(rejected, 'tool_approval_requested');
        expect(await t.runs.decide(rejected, asked.callId, { approve: false, reason: 'no' }, t.principal)).toBe(true);
        expect(await t.runs.decide(rejected, asked.callId, { approve: true }, t.principal)).toBe(false);
        expect((await t.terminal(rejected)).type).toBe('run_completed');
        const cancelled = await t.start('approve', 'thread-b');
        const again = await t.first(cancelled, 'tool_approval_requested');
        expect(await t.runs.cancelToolCall(cancelled, again.callId, 'not now', t.principal)).toBe(true);
        expect(await t.runs.cancelToolCall(cancelled, again.callId, 'not now', t.principal)).toBe(false);
        const failed = await t.first(cancelled, 'tool_call_failed');
        expect(failed.interrupted).toBe(true);
        expect((await t.terminal(cancelled)).type).toBe('run_completed');
      }));

    for (const n of [2, 10]) {
      it(`${n} concurrent cancels of a live run: exactly one answers true, each once the terminal is out`, () =>
        parts.withRuns(async (t) => {
          const runId = await t.start('hold');
          await t.first(runId, 'text_delta');
          const answers = await Promise.all(
            Array.from({ length: n }, (_, i) => t.runs.cancel(runId, { cancel: i }, t.principal)),
          );
          expect(answers.filter((a) => a).length).toBe(1);
          const terminal = await t.terminal(runId);
          expect(terminal.type).toBe('run_cancelled');
          // The winner's reason is the one the run carries.
          expect(terminal.type === 'run_cancelled' && terminal.reason).toEqual({ cancel: answers.indexOf(true) });
        }));
    }

    it('every command on a run that ended: false, steer RunNotLiveError', () =>
      parts.withRuns(async (t) => {
        const runId = await t.start('complete');
        await t.terminal(runId);
        expect(await everyCommand(t.runs, runId, t.principal)).toEqual({
          cancel: { resolved: false },
          stop: { resolved: false },
          steer: { name: 'RunNotLiveError' },
          withdraw: { resolved: false },
          decide: { resolved: false },
          cancelToolCall: { resolved: false },
        });
      }));

    it("every command and events on a run that never existed, and on another principal's: RunNotFoundError", () =>
      parts.withRuns(async (t) => {
        const runId = await t.start('hold');
        await t.first(runId, 'text_delta');
        const all = {
          cancel: NOT_FOUND,
          stop: NOT_FOUND,
          steer: NOT_FOUND,
          withdraw: NOT_FOUND,
          decide: NOT_FOUND,
          cancelToolCall: NOT_FOUND,
        };
        expect(await everyCommand(t.runs, 'no-such-run', t.principal)).toEqual(all);
        expect(await everyCommand(t.runs, runId, `${t.principal}-other`)).toEqual(all);
        const events = (p: string, id: string) => refusal(lastValueFrom(t.runs.events(id, { principal: p })));
        expect(await events(t.principal, 'no-such-run')).toEqual(NOT_FOUND);
        expect(await events(`${t.principal}-other`, runId)).toEqual(NOT_FOUND);
        // Nothing of it reached the run: it is still live for its own principal.
        expect(await t.runs.cancel(runId, 'contract', t.principal)).toBe(true);
      }));

    it('every bad command field is a ConfigurationError naming it, on a live run and an unknown one alike', () =>
      parts.withRuns(async (t) => {
        const runId = await t.start('hold');
        await t.first(runId, 'text_delta');
        const seen = [];
        for (const b of BAD_FIELDS) {
          for (const id of [runId, 'no-such-run']) {
            seen.push({ what: b.what, id, ...(await refusal(b.call({ ...t, runId: id }))) });
          }
        }
        const expected = BAD_FIELDS.flatMap((b) =>
          [runId, 'no-such-run'].map((id) => ({ what: b.what, id, name: 'ConfigurationError', field: b.field })),
        );
        expect(seen).toEqual(expected);
        // None of them touched the run.
        expect(await t.runs.cancel(runId, 'contract', t.principal)).toBe(true);
      }));
  });
}
