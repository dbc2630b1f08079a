/**
 * The claims part of `sessionContract` (docs/sessions.md, "Claims"): a journal write carries its writer's
 * claim; once a later claim took the run over (a `fenceJournal` of the earlier claim, or a write with a higher
 * claim), the earlier claim's `journalTurn` and `journalResponse` are refused with `JournalFencedError` and
 * store nothing, the later claim's are accepted, and `readJournal` gives the later claim's view. The journal's
 * call starts go with it (its commit, its discard); the fence does not.
 */
import type { Item } from '../../items.js';
import type { RunJournal, Session } from '../../session/session.js';
import {
  nameAndField,
  rejection,
  settle,
  userItems,
  ifSessionHas,
  type ContractFramework,
  type MakeStore,
} from './kit.js';

const turn = (s: Session, runId: string, n: number, items: readonly Item[], claim?: number): Promise<void> =>
  settle(() => s.journalTurn!(runId, n, items, claim === undefined ? undefined : { claim }));
const respond = (s: Session, runId: string, n: number, items: readonly Item[], claim: number): Promise<void> =>
  settle(() => s.journalResponse!(runId, n, items, { claim }));
const read = (s: Session, runId: string): Promise<RunJournal> => settle(() => s.readJournal!(runId));
const fence = (s: Session, runId: string, claim: number): Promise<void> => settle(() => s.fenceJournal!(runId, claim));

/** A refusal's name and fields, to compare whole. */
const refusal = async (write: Promise<unknown>) => {
  const err = (await rejection(write)) as Error & { runId?: string; claim?: number; fence?: number };
  return { name: err.name, runId: err.runId, claim: err.claim, fence: err.fence };
};

export function journalClaimsContract({ describe, it, expect }: ContractFramework, makeStore: MakeStore): void {
  describe('journal writes fenced per claim (docs/sessions.md: JournalOptions.claim, fenceJournal)', () => {
    const withClaims = ifSessionHas(makeStore, expect, (s) =>
      [s.journalTurn, s.journalResponse, s.readJournal, s.discardJournal, s.fenceJournal].every(
        (m) => typeof m === 'function',
      ),
    );

    it(
      "a claim fenced off by the next: its turn and response are refused and store nothing; the next claim's are kept",
      withClaims(async (store) => {
        const s = store.session('claims');
        await turn(s, 'run', 1, userItems('one', 1), 1);
        await fence(s, 'run', 1); // claim 2 takes the run over
        await fence(s, 'run', 1); // idempotent
        const before = await read(s, 'run');
        expect(await refusal(turn(s, 'run', 2, userItems('late', 1), 1))).toEqual({
          name: 'JournalFencedError',
          runId: 'run',
          claim: 1,
          fence: 2,
        });
        expect((await refusal(respond(s, 'run', 2, userItems('late', 1), 1))).name).toBe('JournalFencedError');
        expect(await read(s, 'run')).toEqual(before);
        await respond(s, 'run', 2, userItems('r2', 1), 2);
        await turn(s, 'run', 2, userItems('two', 2), 2);
        expect((await refusal(turn(s, 'run', 3, userItems('late', 1), 1))).name).toBe('JournalFencedError');
        expect(await read(store.session('claims'), 'run')).toEqual({
          sealed: false,
          turns: [
            { turn: 1, items: userItems('one', 1) },
            { turn: 2, items: userItems('two', 2) },
          ],
        });
        // Another run's journal is not fenced by this one's claims.
        await turn(s, 'other', 1, userItems('o', 1), 1);
        expect((await read(s, 'other')).turns.length).toBe(1);
      }),
    );

    it(
      'a write with a higher claim takes the journal over: the lower claim is refused from then on, never the higher',
      withClaims(async (store) => {
        const s = store.session('higher');
        await turn(s, 'run', 1, userItems('one', 1), 1);
        await turn(s, 'run', 2, userItems('two', 1), 3);
        expect((await refusal(turn(s, 'run', 3, userItems('late', 1), 2))).name).toBe('JournalFencedError');
        expect((await refusal(respond(s, 'run', 3, userItems('late', 1), 1))).name).toBe('JournalFencedError');
        await fence(s, 'run', 1); // a fence never lowers the journal's claim: 3 is still accepted
        await turn(s, 'run', 3, userItems('three', 1), 3);
        expect((await read(s, 'run')).turns.map((t) => t.items)).toEqual([
          userItems('one', 1),
          userItems('two', 1),
          userItems('three', 1),
        ]);
      }),
    );

    it(
      'a fence outlives the discard and is no turn; unclaimed writes and journals from before claims stay as they were',
      withClaims(async (store) => {
        const s = store.session('kept');
        await turn(s, 'old', 1, userItems('unclaimed', 1)); // as a journal from before claims
        await fence(s, 'fenced-only', 4);
        expect(await read(s, 'fenced-only')).toEqual({ sealed: false, turns: [] });
        if (typeof s.journalledRuns === 'function') {
          expect(await settle(() => s.journalledRuns!())).toEqual(['old']);
        }
        await turn(s, 'old', 2, userItems('claimed', 1), 1);
        expect((await read(s, 'old')).turns.map((t) => t.turn)).toEqual([1, 2]);
        await fence(s, 'old', 1);
        await settle(() => s.discardJournal!('old'));
        expect(await read(s, 'old')).toEqual({ sealed: false, turns: [] });
        // The discarded run's fenced claim stays refused: a frozen worker waking after the run ended writes nothing.
        expect((await refusal(turn(s, 'old', 3, userItems('late', 1), 1))).name).toBe('JournalFencedError');
        expect(await read(s, 'old')).toEqual({ sealed: false, turns: [] });
        // Moved by rename with the session (which exists from its first append).
        await settle(() => s.append(userItems('h', 1), { runId: 'history' }));
        await store.rename('kept', 'moved');
        const moved = store.session('moved');
        expect((await refusal(turn(moved, 'old', 3, userItems('late', 1), 1))).name).toBe('JournalFencedError');
        await turn(moved, 'old', 3, userItems('next', 1), 2);
        expect((await read(moved, 'old')).turns).toEqual([{ turn: 3, items: userItems('next', 1) }]);
      }),
    );

    it(
      'bad claims are ConfigurationErrors naming the field, storing nothing; a sealed run ignores every claim',
      withClaims(async (store) => {
        const s = store.session('bad');
        for (const claim of [0, 1.5, -1, '2']) {
          const err = await rejection(settle(() => s.journalTurn!('run', 1, [], { claim: claim as number })));
          expect(nameAndField(err)).toEqual({ name: 'ConfigurationError', field: 'options.claim' });
          const fenced = await rejection(fence(s, 'run', claim as number));
          expect(nameAndField(fenced)).toEqual({ name: 'ConfigurationError', field: 'claim' });
        }
        expect(nameAndField(await rejection(fence(s, '', 1)))).toEqual({ name: 'ConfigurationError', field: 'runId' });
        expect(await read(s, 'run')).toEqual({ sealed: false, turns: [] });
        await turn(s, 'done', 1, userItems('d', 1), 1);
        await settle(() => s.append(userItems('d', 1), { runId: 'done' }));
        await turn(s, 'done', 2, userItems('late', 1), 1); // sealed: stores nothing, refuses nothing
        expect(await read(s, 'done')).toEqual({ sealed: true, turns: [] });
      }),
    );

    it(
      "a fenced claim's call start is refused and stores nothing (its tool never starts); the next claim's records",
      withClaims(async (store) => {
        const s = store.session('claimed-starts');
        if (typeof s.recordCallStart !== 'function') return;
        const record = (callId: string, claim?: number) =>
          settle(() => s.recordCallStart!('run', callId, claim === undefined ? undefined : { claim }));
        await respond(s, 'run', 1, userItems('r1', 1), 1);
        expect(await record('call-1', 1)).toBe(true);
        await fence(s, 'run', 1);
        expect(await refusal(record('call-2', 1))).toEqual({
          name: 'JournalFencedError',
          runId: 'run',
          claim: 1,
          fence: 2,
        });
        expect(await record('call-2', 2)).toBe(true); // call-2's start was not stored by the refused claim
        expect(await record('call-1', 2)).toBe(false); // claim 1's start before the fence stays
        expect(await record('call-3')).toBe(true); // a start without a claim is not fenced
        const bad = await rejection(record('call-4', 0));
        expect(nameAndField(bad)).toEqual({ name: 'ConfigurationError', field: 'options.claim' });
      }),
    );

    it(
      "a run's call starts go with its journal: removed by its commit and by its discard, other runs' kept",
      withClaims(async (store) => {
        const s = store.session('starts');
        if (typeof s.recordCallStart !== 'function') return;
        const record = (runId: string, callId: string) => settle(() => s.recordCallStart!(runId, callId));
        for (const runId of ['committed', 'discarded', 'running']) {
          await turn(s, runId, 1, userItems(runId, 1), 1);
          expect(await record(runId, 'call-1')).toBe(true);
        }
        await settle(() => s.append(userItems('c', 1), { runId: 'committed' }));
        await settle(() => s.discardJournal!('discarded'));
        // Removed: recorded anew. Kept: refused as started.
        expect(await record('committed', 'call-1')).toBe(true);
        expect(await record('discarded', 'call-1')).toBe(true);
        expect(await record('running', 'call-1')).toBe(false);
      }),
    );
  });
}
