/** The `SessionStore` parts of `sessionContract`: list, delete, rename, close, and bad ids. */
import type { Item } from '../../items.js';
import type { Session, SessionStore } from '../../session/session.js';
import {
  nameAndField,
  rejection,
  settle,
  sleep,
  userItems,
  withStore,
  type ContractFramework,
  type MakeStore,
} from './kit.js';
import { leasing } from './contract-lease.js';

const load = (s: Session): Promise<readonly Item[]> => settle(() => s.load());
const append = (s: Session, items: readonly Item[], runId?: string) =>
  settle(() => s.append(items, runId === undefined ? {} : { runId }));
const REFUSED = { name: 'ConcurrentRunError', field: 'options.session' };

/** `list()` as `[id, items]` pairs, in its order. */
const listed = async (store: SessionStore): Promise<[string, number][]> =>
  (await store.list()).map((info) => [info.id, info.items]);

export function storeContract({ describe, it, expect }: ContractFramework, makeStore: MakeStore): void {
  describe('the store: list, delete, rename, close', () => {
    it('list() gives each session that stored, most recently updated first, with its item count and times', () =>
      withStore(makeStore, async (store) => {
        expect(await store.list()).toEqual([]);
        store.session('untouched'); // a handle alone creates nothing
        const before = Date.now();
        await append(store.session('a'), userItems('a', 2), 'r1');
        await sleep(20); // distinct update times, so the order below is by time, not by id
        await append(store.session('b'), userItems('b', 1), 'r1');
        expect(await listed(store)).toEqual([
          ['b', 1],
          ['a', 2],
        ]);
        await sleep(20);
        await append(store.session('a'), userItems('a2', 3), 'r2');
        await sleep(20);
        await append(store.session('empty'), [], 'r1'); // a write of zero Items still makes the session
        const infos = await store.list();
        expect(infos.map((i) => [i.id, i.items])).toEqual([
          ['empty', 0],
          ['a', 5],
          ['b', 1],
        ]);
        const a = infos.find((i) => i.id === 'a')!;
        const b = infos.find((i) => i.id === 'b')!;
        expect(a.createdAt).toBeGreaterThanOrEqual(before - 1000); // the store's clock may be a server's
        expect(b.createdAt).toBeGreaterThanOrEqual(a.createdAt);
        expect(a.updatedAt).toBeGreaterThanOrEqual(b.updatedAt);
      }));

    it('delete(id) removes the history and its run ids; it says whether the session existed', () =>
      withStore(makeStore, async (store) => {
        await append(store.session('gone'), userItems('g', 2), 'run-1');
        await append(store.session('kept'), userItems('k', 1), 'run-1');
        expect(await store.delete('gone')).toBe(true);
        expect(await store.delete('gone')).toBe(false);
        expect(await store.delete('never')).toBe(false);
        expect(await load(store.session('gone'))).toEqual([]);
        expect(await listed(store)).toEqual([['kept', 1]]);
        await append(store.session('gone'), userItems('new', 1), 'run-1'); // the old run id is forgotten
        expect(await load(store.session('gone'))).toEqual(userItems('new', 1));
      }));

    it('rename(from, to) moves the history and its run ids; a missing from or an existing to moves nothing', () =>
      withStore(makeStore, async (store) => {
        await append(store.session('old'), userItems('o', 2), 'run-1');
        await sleep(20); // 'taken' is the most recently updated
        await append(store.session('taken'), userItems('t', 1), 'run-1');
        await store.rename('old', 'new');
        expect(await load(store.session('new'))).toEqual(userItems('o', 2));
        expect(await load(store.session('old'))).toEqual([]);
        await append(store.session('new'), userItems('again', 1), 'run-1'); // run-1 moved with it: stores nothing
        expect(await load(store.session('new'))).toEqual(userItems('o', 2));
        const missing = await rejection(store.rename('old', 'other'));
        const exists = await rejection(store.rename('new', 'taken'));
        expect([missing.name, exists.name]).toEqual(['SessionNotFoundError', 'SessionExistsError']);
        expect(await listed(store)).toEqual([
          ['taken', 1],
          ['new', 2],
        ]);
        expect(await load(store.session('taken'))).toEqual(userItems('t', 1));
        expect(await load(store.session('new'))).toEqual(userItems('o', 2));
      }));

    it('delete and rename are refused with ConcurrentRunError while a run holds the lease, changing nothing', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('busy');
        const acquire = leasing(s);
        await append(s, userItems('b', 1), 'run-1');
        await append(store.session('idle'), userItems('i', 1), 'run-1');
        const lease = await acquire('run-2', { ttlMs: 60_000 });
        const refused = [
          await rejection(store.delete('busy')),
          await rejection(store.rename('busy', 'elsewhere')),
          await rejection(store.rename('idle', 'busy')),
        ];
        expect(refused.map(nameAndField)).toEqual([REFUSED, REFUSED, REFUSED]);
        expect(await load(store.session('busy'))).toEqual(userItems('b', 1));
        expect(await load(store.session('idle'))).toEqual(userItems('i', 1));
        await lease.release();
        expect(await store.delete('busy')).toBe(true);
      }));

    it('a bad session id is refused naming the field; close() is idempotent', async () => {
      const store = await makeStore();
      const fields = [];
      for (const id of ['', 42, undefined, 'x'.repeat(1025), 'nul \u0000', 'lone \ud800', 'lone \udc00']) {
        try {
          store.session(id as string);
          fields.push('accepted');
        } catch (err) {
          fields.push(nameAndField(err as { name: string; field?: string }));
        }
      }
      const idField = { name: 'ConfigurationError', field: 'id' };
      expect(fields).toEqual([idField, idField, idField, idField, idField, idField, idField]);
      expect(store.session('x'.repeat(1024)) !== undefined && store.session('a pair 😀') !== undefined).toBe(true);
      const from = { name: 'ConfigurationError', field: 'from' };
      expect(nameAndField(await rejection(store.rename('', 'x')))).toEqual(from);
      expect(nameAndField(await rejection(store.delete('')))).toEqual(idField);
      await store.close();
      await store.close();
    });
  });
}
