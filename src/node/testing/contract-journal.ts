/**
 * The run journal part of `sessionContract` (docs/sessions.md, "The run journal"): a completed turn's
 * Items are journalled per `(runId, turn)`, idempotently, outside the history; the run's commit seals
 * the journal, a discard removes it, and only `readJournal` (a continue) sees it.
 */
import type { Item } from '../../items.js';
import type { RunJournal, Session } from '../../session/session.js';
import {
  nameAndField,
  providerPartItems,
  rejection,
  settle,
  userItems,
  ifSessionHas,
  type ContractFramework,
  type MakeStore,
} from './kit.js';

const load = (s: Session): Promise<readonly Item[]> => settle(() => s.load());
const write = (s: Session, runId: string, turn: number, items: readonly Item[], signal?: AbortSignal): Promise<void> =>
  settle(() => s.journalTurn!(runId, turn, items, signal ? { signal } : undefined));
const read = (s: Session, runId: string): Promise<RunJournal> => settle(() => s.readJournal!(runId));
const discard = (s: Session, runId: string): Promise<void> => settle(() => s.discardJournal!(runId));

export function journalContract({ describe, it, expect }: ContractFramework, makeStore: MakeStore): void {
  describe('the run journal (docs/sessions.md: journalTurn, readJournal, discardJournal)', () => {
    // Without the methods the store keeps no journal and runs are not durable per turn: the parts assert only that.
    const withJournal = ifSessionHas(makeStore, expect, (s) =>
      [s.journalTurn, s.readJournal, s.discardJournal].every((m) => typeof m === 'function'),
    );

    it(
      'journalled turns come back in turn order, exactly as written; the history and the list do not see them',
      withJournal(async (store) => {
        const s = store.session('journal');
        expect(await read(s, 'run-1')).toEqual({ sealed: false, turns: [] });
        await write(s, 'run-1', 2, userItems('t2', 1));
        await write(s, 'run-1', 1, providerPartItems());
        await write(s, 'run-1', 3, []);
        await write(s, 'run-2', 1, userItems('other', 1));
        const back = await read(store.session('journal'), 'run-1'); // a new handle reads it too
        expect(back).toEqual({
          sealed: false,
          turns: [
            { turn: 1, items: providerPartItems() },
            { turn: 2, items: userItems('t2', 1) },
            { turn: 3, items: [] },
          ],
        });
        // Byte for byte: provider parts keep the order of their keys.
        expect(JSON.stringify(back.turns[0]!.items)).toBe(JSON.stringify(providerPartItems()));
        expect(await load(s)).toEqual([]);
        expect(await store.list()).toEqual([]);
      }),
    );

    it(
      'a second write of one (runId, turn) stores nothing',
      withJournal(async (store) => {
        const s = store.session('idempotent');
        await write(s, 'run', 1, userItems('first', 2));
        await write(s, 'run', 1, userItems('second', 3));
        await Promise.all([write(s, 'run', 2, userItems('a', 1)), write(s, 'run', 2, userItems('b', 1))]);
        const { turns } = await read(s, 'run');
        expect(turns.map((t) => t.turn)).toEqual([1, 2]);
        expect(turns[0]!.items).toEqual(userItems('first', 2));
        expect(turns[1]!.items.length).toBe(1);
      }),
    );

    it(
      "the run's commit seals its journal: sealed, no turns, and a later write stores nothing",
      withJournal(async (store) => {
        const s = store.session('seal');
        await settle(() => s.append(userItems('before', 1), { runId: 'earlier' }));
        await write(s, 'run', 1, userItems('t1', 2));
        await write(s, 'run', 2, userItems('t2', 1));
        await write(s, 'other', 1, userItems('o', 1));
        await settle(() => s.append([...userItems('t1', 2), ...userItems('t2', 1)], { runId: 'run' }));
        expect(await read(s, 'run')).toEqual({ sealed: true, turns: [] });
        await write(s, 'run', 3, userItems('late', 1)); // a late journal write of a committed run
        expect(await read(s, 'run')).toEqual({ sealed: true, turns: [] });
        expect(await read(s, 'other')).toEqual({ sealed: false, turns: [{ turn: 1, items: userItems('o', 1) }] });
        expect(await load(s)).toEqual([...userItems('before', 1), ...userItems('t1', 2), ...userItems('t2', 1)]);
      }),
    );

    it(
      "a discard removes the run's journal only, and is idempotent",
      withJournal(async (store) => {
        const s = store.session('discard');
        await settle(() => s.append(userItems('h', 1), { runId: 'earlier' }));
        await write(s, 'cancelled', 1, userItems('c', 1));
        await write(s, 'kept', 1, userItems('k', 1));
        await discard(s, 'cancelled');
        await discard(s, 'cancelled');
        await discard(s, 'never-journalled');
        expect(await read(s, 'cancelled')).toEqual({ sealed: false, turns: [] });
        expect(await read(s, 'kept')).toEqual({ sealed: false, turns: [{ turn: 1, items: userItems('k', 1) }] });
        expect(await load(s)).toEqual(userItems('h', 1));
        // A discarded run can journal again (a continue that starts over from nothing).
        await write(s, 'cancelled', 1, userItems('again', 1));
        expect((await read(s, 'cancelled')).turns.length).toBe(1);
      }),
    );

    it(
      'bad arguments are refused naming runId, turn or the Item, storing nothing; an aborted signal stores nothing',
      withJournal(async (store) => {
        const s = store.session('bad');
        const cases: [unknown, unknown, unknown, string][] = [
          ['', 1, [], 'runId'],
          ['r', 0, [], 'turn'],
          ['r', 1.5, [], 'turn'],
          ['r', '1', [], 'turn'],
          ['r', 1, [{ type: 'user', id: 'x' }], 'items[0].text'],
        ];
        for (const [runId, turn, items, field] of cases) {
          const err = await rejection(write(s, runId as string, turn as number, items as Item[]));
          expect(nameAndField(err)).toEqual({ name: 'ConfigurationError', field });
        }
        const read$ = await rejection(read(s, ''));
        expect(nameAndField(read$)).toEqual({ name: 'ConfigurationError', field: 'runId' });
        const controller = new AbortController();
        controller.abort(new Error('cancelled before the write'));
        const aborted = await rejection(write(s, 'r', 1, userItems('x', 1), controller.signal));
        expect(aborted.message).toBe('cancelled before the write');
        expect(await read(s, 'r')).toEqual({ sealed: false, turns: [] });
      }),
    );

    it(
      'journalledRuns lists the runs with a journal, the one journalled last at the end; sealed and discarded ones go',
      withJournal(async (store) => {
        const s = store.session('runs');
        if (typeof s.journalledRuns !== 'function') return; // optional
        const runs = (): Promise<readonly string[]> => settle(() => s.journalledRuns!());
        expect(await runs()).toEqual([]);
        await write(s, 'first', 1, userItems('a', 1));
        await new Promise((resolve) => setTimeout(resolve, 5)); // a later store time
        await write(s, 'second', 1, userItems('b', 1));
        await write(s, 'third', 1, userItems('c', 1));
        expect((await runs()).slice(0, 1)).toEqual(['first']);
        expect([...(await runs())].sort()).toEqual(['first', 'second', 'third']);
        await settle(() => s.append(userItems('b', 1), { runId: 'second' })); // sealed
        await discard(s, 'third');
        expect(await runs()).toEqual(['first']);
        expect(await settle(() => store.session('other').journalledRuns!())).toEqual([]);
      }),
    );

    it(
      'journals move with rename and go with delete',
      withJournal(async (store) => {
        const from = store.session('from');
        await settle(() => from.append(userItems('f', 1), { runId: 'r0' }));
        await write(from, 'run', 1, userItems('j', 1));
        await store.rename('from', 'to');
        expect(await read(store.session('to'), 'run')).toEqual({
          sealed: false,
          turns: [{ turn: 1, items: userItems('j', 1) }],
        });
        expect(await read(store.session('from'), 'run')).toEqual({ sealed: false, turns: [] });
        expect(await store.delete('to')).toBe(true);
        expect(await read(store.session('to'), 'run')).toEqual({ sealed: false, turns: [] });
      }),
    );
  });
}
