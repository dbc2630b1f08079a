/**
 * The `journalResponse` part of `sessionContract` (docs/sessions.md, "No tool runs twice"): a turn's
 * model response journalled before its tools run comes back as `pending` while that turn is not
 * journalled whole, idempotently, outside the history; the commit seals it and a discard removes it.
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

const turn = (s: Session, runId: string, n: number, items: readonly Item[]): Promise<void> =>
  settle(() => s.journalTurn!(runId, n, items));
const respond = (s: Session, runId: string, n: number, items: readonly Item[], signal?: AbortSignal): Promise<void> =>
  settle(() => s.journalResponse!(runId, n, items, signal ? { signal } : undefined));
const read = (s: Session, runId: string): Promise<RunJournal> => settle(() => s.readJournal!(runId));

export function journalResponseContract({ describe, it, expect }: ContractFramework, makeStore: MakeStore): void {
  describe('a turn response journalled before its tools (docs/sessions.md: journalResponse)', () => {
    const withResponses = ifSessionHas(
      makeStore,
      expect,
      (s) => typeof s.journalResponse === 'function' && typeof s.readJournal === 'function',
    );

    it(
      'the response of the turn after the last journalled one is pending, once, apart from the turns and the history',
      withResponses(async (store) => {
        const s = store.session('pending');
        await turn(s, 'run', 1, userItems('t1', 2));
        await respond(s, 'run', 2, userItems('r2', 1));
        await respond(s, 'run', 2, userItems('again', 3)); // a repeat stores nothing
        const back = await read(store.session('pending'), 'run');
        expect(back).toEqual({
          sealed: false,
          turns: [{ turn: 1, items: userItems('t1', 2) }],
          pending: { turn: 2, items: userItems('r2', 1) },
        });
        expect(await settle(() => s.load())).toEqual([]);
        expect(await store.list()).toEqual([]);
        // Turn 2 journalled whole: its response is no longer pending.
        await turn(s, 'run', 2, [...userItems('r2', 1), ...userItems('results', 1)]);
        expect((await read(s, 'run')).pending).toBe(undefined);
        await respond(s, 'run', 3, userItems('r3', 1));
        expect((await read(s, 'run')).pending).toEqual({ turn: 3, items: userItems('r3', 1) });
        if (typeof s.journalledRuns === 'function') {
          await respond(s, 'only-response', 1, userItems('r1', 1));
          expect([...(await settle(() => s.journalledRuns!()))].sort()).toEqual(['only-response', 'run']);
        }
      }),
    );

    it(
      'the commit seals a pending response, a discard removes it; bad arguments and an aborted signal store nothing',
      withResponses(async (store) => {
        const s = store.session('ends');
        await respond(s, 'done', 1, userItems('d', 1));
        await settle(() => s.append(userItems('d', 1), { runId: 'done' }));
        expect(await read(s, 'done')).toEqual({ sealed: true, turns: [] });
        await respond(s, 'done', 2, userItems('late', 1));
        expect(await read(s, 'done')).toEqual({ sealed: true, turns: [] });
        await respond(s, 'cancelled', 1, userItems('c', 1));
        await settle(() => s.discardJournal!('cancelled'));
        expect(await read(s, 'cancelled')).toEqual({ sealed: false, turns: [] });
        const err = await rejection(respond(s, 'r', 0, []));
        expect(nameAndField(err)).toEqual({ name: 'ConfigurationError', field: 'turn' });
        const controller = new AbortController();
        controller.abort(new Error('cancelled before the write'));
        const aborted = await rejection(respond(s, 'r', 1, userItems('x', 1), controller.signal));
        expect(aborted.message).toBe('cancelled before the write');
        expect(await read(s, 'r')).toEqual({ sealed: false, turns: [] });
      }),
    );
  });
}
