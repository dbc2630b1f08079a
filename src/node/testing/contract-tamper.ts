/**
 * The tampered-history part of `sessionContract`: a store that keeps its history as numbered rows beside a stored
 * count refuses to load a history whose rows were removed or whose count was changed behind its back, naming the
 * session and the row, rather than loading what is left as if it were whole. Needs {@link TamperHooks}: the test
 * edits the store's data as a person with the database open would.
 */
import type { Item } from '../../items.js';
import type { Session, SessionStore } from '../../session/session.js';
import { rejection, settle, userItems, withStore, type ContractFramework, type MakeStore } from './kit.js';

/**
 * How the tampered-history part of `sessionContract` edits a store's data, outside the store (a durable store
 * only: an in-process one has nothing to tamper with).
 * - `removeItem(store, id, index)`: deletes the stored row of item `index` (0-based) of session `id`'s history;
 * - `setCount(store, id, count)`: sets the item count the store keeps for session `id` (the one `list()` shows).
 */
export interface TamperHooks {
  removeItem(store: SessionStore, id: string, index: number): unknown;
  setCount(store: SessionStore, id: string, count: number): unknown;
}

const load = (s: Session): Promise<readonly Item[]> => settle(() => s.load());
const append = (s: Session, items: readonly Item[], runId: string) => settle(() => s.append(items, { runId }));

/** What the contract compares of a refusal: the error's name and problem, and whether its message names `what`. */
async function refusalOf(session: Session, what: string) {
  const err = (await rejection(load(session))) as { name: string; problem?: string; message: string };
  console.log(`load() of a tampered history rejected with ${err.name}: ${err.message}`);
  return { name: err.name, problem: err.problem, names: err.message.includes(what) };
}

const CORRUPT = (what: string) => ({ name: 'SessionSchemaError', problem: 'corrupt', names: true, what });

export function tamperContract({ describe, it, expect }: ContractFramework, makeStore: MakeStore, hooks?: TamperHooks) {
  const title = 'a tampered history is refused, not loaded in part';
  if (hooks === undefined) {
    const na = it.skip ?? (() => undefined);
    describe(`${title} (not applicable: no tamper hooks, the store keeps no rows to tamper with)`, () => {
      na('a history row removed: load rejects naming the session and the missing row', () => undefined);
      na('a stored count that disagrees with the rows: load rejects naming both', () => undefined);
    });
    return;
  }
  /** Loading `session` is refused as corrupt (SessionSchemaError, problem `corrupt`), its message naming `what`. */
  const refusedAsCorrupt = async (session: Session, what: string) =>
    expect({ ...(await refusalOf(session, what)), what }).toEqual(CORRUPT(what));

  describe(title, () => {
    it('a history row removed from the middle: load rejects with SessionSchemaError (corrupt) naming the row', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('s');
        await append(s, userItems('a', 2), 'r1');
        await append(s, userItems('b', 2), 'r2');
        await hooks.removeItem(store, 's', 1);
        await refusedAsCorrupt(s, 'item 1 of session "s" is missing');
      }));

    it('the first or the last row removed: load rejects as well (the rows left are numbered, or counted, wrong)', () =>
      withStore(makeStore, async (store) => {
        const first = store.session('first');
        await append(first, userItems('f', 3), 'r1');
        await hooks.removeItem(store, 'first', 0);
        await refusedAsCorrupt(first, 'item 0 of session "first" is missing');
        const last = store.session('last');
        await append(last, userItems('l', 3), 'r1');
        await hooks.removeItem(store, 'last', 2);
        await refusedAsCorrupt(last, 'session "last" counts 3 items but 2 are stored');
      }));

    it('a stored count changed: load rejects with SessionSchemaError (corrupt) naming the count and the rows', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('s');
        await append(s, userItems('a', 3), 'r1');
        await hooks.setCount(store, 's', 5);
        await refusedAsCorrupt(s, 'session "s" counts 5 items but 3 are stored');
        await hooks.setCount(store, 's', 1);
        await refusedAsCorrupt(s, 'session "s" counts 1 item but 3 are stored');
      }));

    it('no write of the store leaves a gap: appends, journalled runs, rename, delete and a new start all load', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('a');
        await append(s, userItems('a', 2), 'r1');
        await append(s, [], 'r-empty'); // a commit of no Items
        const journalled = s.journalTurn === undefined ? 0 : 1;
        if (s.journalTurn !== undefined) {
          await settle(() => s.journalTurn!('r2', 1, userItems('j', 1)));
          await append(s, userItems('j', 1), 'r2'); // the commit that seals the journal
        }
        await append(s, userItems('a', 2), 'r1'); // a repeat stores nothing
        // A compaction's summary is appended like any Item: the Items it covers stay.
        await append(s, [{ type: 'summary', id: 'sum', covers: ['a-0', 'a-1'], text: 'two asked' }], 'r3');
        await store.rename('a', 'b');
        const b = store.session('b');
        await append(b, userItems('b', 1), 'r4');
        expect((await load(b)).length).toBe(4 + journalled);
        expect((await store.list()).map((i) => [i.id, i.items])).toEqual([['b', 4 + journalled]]);
        expect(await store.delete('b')).toBe(true);
        await append(b, userItems('c', 2), 'r5'); // the session started again after a delete
        expect(await load(b)).toEqual(userItems('c', 2));
      }));
  });
}
