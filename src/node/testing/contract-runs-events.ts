/** The `events({ afterSeq })` part of `runsContract`: every cursor position of runs that ended every way. */
import { filter, firstValueFrom, take, toArray, type Observable } from 'rxjs';
import type { RunEvent } from '../../events.js';
import {
  deltasOf,
  seqsOf,
  type MakeRuns,
  type RunsContractOptions,
  type RunsParts,
  type RunsTest,
} from './runs-kit.js';

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

/** How each kind of ended run is made, and what its terminal says. */
const OUTCOMES: readonly {
  readonly name: string;
  readonly make: (t: RunsTest, options: RunsContractOptions) => Promise<string>;
  readonly terminal: Record<string, unknown>;
  readonly needs?: 'suspending' | 'lose';
}[] = [
  {
    name: 'completed',
    make: (t) => t.start('complete'),
    terminal: { type: 'run_completed', stopReason: 'completed' },
  },
  {
    name: 'cancelled',
    make: async (t) => {
      const runId = await t.start('hold');
      await t.first(runId, 'text_delta');
      await t.runs.cancel(runId, { why: 'contract' }, t.principal);
      return runId;
    },
    terminal: { type: 'run_cancelled', stopReason: 'cancelled' },
  },
  { name: 'failed', make: (t) => t.start('fail'), terminal: { type: 'run_failed' } },
  {
    name: 'stopped',
    make: async (t) => {
      const runId = await t.start('approve');
      const asked = await t.first(runId, 'tool_approval_requested');
      await t.runs.stop(runId, { at: 'turn_end' }, t.principal);
      await t.runs.decide(runId, asked.callId, { approve: true }, t.principal);
      return runId;
    },
    terminal: { type: 'run_completed', stopReason: 'stopped' },
  },
  {
    name: 'suspended',
    make: (t) => t.start('approve'),
    terminal: { type: 'run_completed', stopReason: 'needs_approval' },
    needs: 'suspending',
  },
  {
    name: 'lost',
    make: async (t, options) => {
      const runId = await t.start('hold');
      await t.first(runId, 'text_delta');
      await options.lose!(runId);
      return runId;
    },
    terminal: { type: 'run_failed', stopReason: 'worker_lost' },
    needs: 'lose',
  },
];

/** The terminal's fields the outcome pins. */
const pick = (event: RunEvent | undefined, keys: readonly string[]) =>
  Object.fromEntries(keys.map((k) => [k, (event as Record<string, unknown> | undefined)?.[k]]));

export function runsEventsContract(parts: RunsParts): void {
  const { framework, options } = parts;
  const { describe, it, expect } = framework;
  const na = it.skip ?? (() => undefined);

  describe('events({ afterSeq }) at every position', () => {
    for (const outcome of OUTCOMES) {
      const make: MakeRuns | undefined = outcome.needs === 'suspending' ? options.suspending : undefined;
      const title =
        `a ${outcome.name} run: from before its first event to past its terminal, exactly the events after ` +
        'the cursor, the text cut inside a compacted delta; nothing and at once at or past the terminal';
      if (outcome.needs === 'suspending' && make === undefined) {
        na(`${title} (not applicable: no suspending Runs given)`, () => undefined);
        continue;
      }
      if (outcome.needs === 'lose' && options.lose === undefined) {
        na(`${title} (not applicable: no lose given, the runs live in the caller's process)`, () => undefined);
        continue;
      }
      it(title, () =>
        parts.withRuns(async (t) => {
          const runId = await outcome.make(t, options);
          const all = await t.read(runId);
          const terminal = all.at(-1);
          expect(pick(terminal, Object.keys(outcome.terminal))).toEqual(outcome.terminal);
          const last = terminal!.seq;
          expect(seqsOf(all)).toEqual(range(0, last));
          const deltas = deltasOf(all);
          for (let after = -1; after <= last + 2; after++) {
            const read = await t.read(runId, after);
            expect({ after, seqs: seqsOf(read) }).toEqual({ after, seqs: range(after + 1, last) });
            expect({ after, deltas: deltasOf(read) }).toEqual({ after, deltas: deltas.filter(([s]) => s > after) });
          }
        }, make),
      );
    }

    /** How a run live at its approval ends: completed, stopped or cancelled, by commands from another reader. */
    const LIVE_ENDINGS: readonly {
      readonly name: string;
      readonly end: (t: RunsTest, runId: string, callId: string) => Promise<unknown>;
      readonly terminal: Record<string, unknown>;
    }[] = [
      {
        name: 'completed',
        end: (t, runId, callId) => t.runs.decide(runId, callId, { approve: true }, t.principal),
        terminal: { type: 'run_completed', stopReason: 'completed' },
      },
      {
        name: 'stopped',
        end: async (t, runId, callId) => {
          await t.runs.stop(runId, { at: 'turn_end' }, t.principal);
          return t.runs.decide(runId, callId, { approve: true }, t.principal);
        },
        terminal: { type: 'run_completed', stopReason: 'stopped' },
      },
      {
        name: 'cancelled',
        end: (t, runId) => t.runs.cancel(runId, 'contract', t.principal),
        terminal: { type: 'run_cancelled', stopReason: 'cancelled' },
      },
    ];
    for (const ending of LIVE_ENDINGS) {
      it(
        `readers at every position of a run live at its approval (its events read as they come, before any ` +
          `compacting) each get the rest through its ${ending.name} terminal, then complete`,
        () =>
          parts.withRuns(async (t) => {
            const runId = await t.start('approve');
            const asked = await t.first(runId, 'tool_approval_requested');
            const readers = range(-1, asked.seq + 1).map((after) => ({ after, events: t.read(runId, after) }));
            await ending.end(t, runId, asked.callId);
            const all = await t.read(runId);
            expect(pick(all.at(-1), Object.keys(ending.terminal))).toEqual(ending.terminal);
            const last = all.at(-1)!.seq;
            for (const reader of readers) {
              const read = await reader.events;
              expect({ after: reader.after, seqs: seqsOf(read) }).toEqual({
                after: reader.after,
                seqs: range(reader.after + 1, last),
              });
              expect(read.map((e) => e.type)).toEqual(all.filter((e) => e.seq > reader.after).map((e) => e.type));
            }
          }),
      );
    }

    it('readers at every position while the run is live (nothing compacted yet) each get the rest, then complete', () =>
      parts.withRuns(async (t) => {
        const runId = await t.start('hold');
        const seen = await firstValueFrom(
          (t.runs.events(runId, { principal: t.principal }) as Observable<RunEvent>).pipe(
            take(50),
            filter((e) => e.type === 'text_delta'),
            take(1),
            toArray(),
          ),
        );
        const at = seen[0]!.seq;
        const readers = range(-1, at + 1).map((after) => ({ after, events: t.read(runId, after) }));
        expect(await t.runs.cancel(runId, 'contract', t.principal)).toBe(true);
        const all = await t.read(runId);
        const last = all.at(-1)!.seq;
        expect(all.at(-1)!.type).toBe('run_cancelled');
        for (const reader of readers) {
          const read = await reader.events;
          expect({ after: reader.after, seqs: seqsOf(read) }).toEqual({
            after: reader.after,
            seqs: range(reader.after + 1, last),
          });
        }
      }));
  });
}
