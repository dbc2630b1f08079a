/** The history parts of `sessionContract`: load and append on one store, in one process. */
import type { Item } from '../../items.js';
import type { AppendOptions, Session } from '../../session/session.js';
import {
  hostileItems,
  nameAndField,
  providerPartItems,
  rejection,
  settle,
  userItems,
  withStore,
  type ContractFramework,
  type MakeStore,
} from './kit.js';

const load = (s: Session): Promise<readonly Item[]> => settle(() => s.load());
const append = (s: Session, items: readonly Item[], options?: AppendOptions) => settle(() => s.append(items, options));

/** The number of whole copies of `run` in `stored`, or -1 when some of its items appear outside whole copies. */
function wholeCopies(stored: readonly Item[], run: readonly Item[]): number {
  const key = JSON.stringify;
  const first = key(run[0]);
  let copies = 0;
  let seen = 0;
  for (let i = 0; i < stored.length; i++) {
    if (run.some((item) => key(item) === key(stored[i]))) seen++;
    if (key(stored[i]) !== first) continue;
    if (run.every((item, j) => key(stored[i + j]) === key(item))) copies++;
  }
  return seen === copies * run.length ? copies : -1;
}

export function appendContract({ describe, it, expect }: ContractFramework, makeStore: MakeStore): void {
  describe('history: load gives back exactly what was appended, in append order', () => {
    it('a session nothing was appended to loads as empty', () =>
      withStore(makeStore, async (store) => {
        expect(await load(store.session('never'))).toEqual([]);
      }));

    it('appends of three runs load in append order', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('order');
        const [a, b, c] = [userItems('a', 3), userItems('b', 1), userItems('c', 2)];
        await append(s, a, { runId: 'run-a' });
        await append(s, b, { runId: 'run-b' });
        await append(s, c, { runId: 'run-c' });
        expect(await load(s)).toEqual([...a, ...b, ...c]);
        expect(await load(store.session('order'))).toEqual([...a, ...b, ...c]); // a new handle reads the same
      }));

    it("sessions are separate: one session never sees another one's items", () =>
      withStore(makeStore, async (store) => {
        await append(store.session('left'), userItems('l', 2), { runId: 'r' });
        await append(store.session('right'), userItems('r', 1), { runId: 'r' }); // the same runId, another session
        expect(await load(store.session('left'))).toEqual(userItems('l', 2));
        expect(await load(store.session('right'))).toEqual(userItems('r', 1));
      }));

    it("hostile but valid Items come back exactly as appended (repair is the engine's job, not the store's)", () =>
      withStore(makeStore, async (store) => {
        const s = store.session('hostile \'"; -- 😀 \u202e \\');
        await append(s, hostileItems(), { runId: 'hostile' });
        expect(await load(s)).toEqual(hostileItems());
      }));

    it('provider parts (signed thinking blocks, thought signatures) come back byte for byte, keys in their order', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('provider-parts');
        await append(s, providerPartItems(), { runId: 'parts' });
        const loaded = await load(s);
        expect(loaded).toEqual(providerPartItems());
        expect(loaded.map((item) => JSON.stringify(item))).toEqual(providerPartItems().map((i) => JSON.stringify(i)));
      }));

    it('a summary Item (a compaction) is kept like any Item: the Items it covers stay, load gives back both', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('compacted');
        const first: Item[] = [
          { type: 'user', id: 'u1', text: 'read the file' },
          { type: 'assistant', id: 'a1', text: '', toolCalls: [{ callId: 'c1', name: 'read', arguments: '{}' }] },
          { type: 'tool_result', callId: 'c1', output: 'x'.repeat(4096), isError: false },
          { type: 'assistant', id: 'a2', text: 'it holds x', toolCalls: [] },
        ];
        // The next run compacted the first one and went on: its Items after the summary are appended with it.
        const second: Item[] = [
          { type: 'user', id: 'u2', text: 'and now?' },
          { type: 'summary', id: 's1', text: 'The user had a file read; it holds x.', covers: ['u1', 'a1', 'a2'] },
          { type: 'assistant', id: 'a3', text: 'done', toolCalls: [] },
        ];
        await append(s, first, { runId: 'run-1' });
        await append(s, second, { runId: 'run-2' });
        await append(s, second, { runId: 'run-2' }); // a late repeat stores nothing
        const loaded = await load(s);
        expect(loaded).toEqual([...first, ...second]);
        expect(loaded.filter((i) => i.type === 'summary')).toEqual([second[1]]);
      }));

    it(
      'a 10 000-item history appended in one run, and 100 more runs after it, loads whole and in order',
      () =>
        withStore(makeStore, async (store) => {
          const s = store.session('large');
          const big = userItems('big', 10_000);
          await append(s, big, { runId: 'big' });
          const more: Item[] = [];
          for (let r = 0; r < 100; r++) {
            const run = userItems(`more${r}`, 3);
            more.push(...run);
            await append(s, run, { runId: `more-${r}` });
          }
          const loaded = await load(s);
          expect(loaded.length).toBe(10_300);
          expect(loaded).toEqual([...big, ...more]);
        }),
      120_000,
    );
  });

  describe('append is atomic and idempotent per runId', () => {
    it('a second append with a stored runId stores nothing, even with other items', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('idem');
        await append(s, userItems('first', 2), { runId: 'run-1' });
        await append(s, userItems('first', 2), { runId: 'run-1' });
        await append(s, userItems('other', 5), { runId: 'run-1' });
        expect(await load(s)).toEqual(userItems('first', 2));
      }));

    it('appends without a runId store every time', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('bare');
        await append(s, userItems('x', 1));
        await append(s, userItems('x', 1));
        expect(await load(s)).toEqual([...userItems('x', 1), ...userItems('x', 1)]);
      }));

    it('an append with a bad Item in the middle stores none of its items and does not use up its runId', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('atomic');
        await append(s, userItems('before', 1), { runId: 'before' });
        const bad = [...userItems('bad', 3), { type: 'user', id: 'b', text: 42 }, ...userItems('tail', 2)];
        const err = await rejection(append(s, bad as Item[], { runId: 'run-bad' }));
        expect(nameAndField(err)).toEqual({ name: 'ConfigurationError', field: 'items[3].text' });
        expect(await load(s)).toEqual(userItems('before', 1));
        await append(s, userItems('good', 2), { runId: 'run-bad' });
        expect(await load(s)).toEqual([...userItems('before', 1), ...userItems('good', 2)]);
      }));

    it('a bad runId is refused naming options.runId, storing nothing', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('bad-run-id');
        const err = await rejection(append(s, userItems('x', 1), { runId: '' }));
        expect(nameAndField(err)).toEqual({ name: 'ConfigurationError', field: 'options.runId' });
        expect(await load(s)).toEqual([]);
      }));

    it('concurrent appends of 20 runs each store whole, never interleaved, once per runId', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('concurrent');
        const runs = Array.from({ length: 20 }, (_, r) => userItems(`c${r}`, 25));
        // Every run is appended twice at once: each must land exactly once.
        await Promise.all(runs.flatMap((run, r) => [0, 1].map(() => append(s, run, { runId: `run-${r}` }))));
        const loaded = await load(s);
        expect(loaded.length).toBe(20 * 25);
        expect(runs.map((run) => wholeCopies(loaded, run))).toEqual(runs.map(() => 1));
      }));

    it('an append whose signal fires (before, during or after it) stores the whole run or none of it', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('signal');
        const outcomes: string[] = [];
        for (let ticks = -1; ticks < 12; ticks++) {
          const run = userItems(`s${ticks}`, 40);
          const controller = new AbortController();
          if (ticks < 0) controller.abort(new Error('deadline'));
          const write = append(s, run, { runId: `sig-${ticks}`, signal: controller.signal }).then(
            () => 'resolved',
            () => 'rejected',
          );
          for (let t = 0; t < ticks; t++) await Promise.resolve();
          controller.abort(new Error('deadline'));
          const outcome = await write;
          const copies = wholeCopies(await load(s), run);
          // Resolved means stored whole; rejected means nothing stored. Never a part.
          expect({ ticks, copies }).toEqual({ ticks, copies: outcome === 'resolved' ? 1 : 0 });
          await append(s, run, { runId: `sig-${ticks}` }); // the retry a caller makes: still one copy
          expect({ ticks, copies: wholeCopies(await load(s), run) }).toEqual({ ticks, copies: 1 });
          outcomes.push(outcome);
        }
        expect(outcomes.length).toBe(13);
      }));
  });

  describe('a suspension is committed once (docs/run-control.md, "Approvals": already resumed)', () => {
    it('a second commit with the same suspensionId stores nothing and rejects with ResumeError already_resumed', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('suspension');
        await append(s, userItems('first', 2), { runId: 'resume-1', suspensionId: 'susp-1' });
        const err = await rejection(append(s, userItems('second', 3), { runId: 'resume-2', suspensionId: 'susp-1' }));
        const code = (err as { code?: unknown }).code;
        expect({ name: err.name, code }).toEqual({ name: 'ResumeError', code: 'already_resumed' });
        expect(await load(s)).toEqual(userItems('first', 2));
        // The refused run id was not used up by what stored nothing: a plain append of it stores.
        await append(s, userItems('third', 1), { runId: 'resume-3' });
        expect(await load(s)).toEqual([...userItems('first', 2), ...userItems('third', 1)]);
      }));

    it('a repeat of the stored commit (same runId) stores nothing and succeeds; another session is separate', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('suspension-repeat');
        await append(s, userItems('a', 1), { runId: 'resume-a', suspensionId: 'susp-a' });
        await append(s, userItems('a', 1), { runId: 'resume-a', suspensionId: 'susp-a' });
        expect(await load(s)).toEqual(userItems('a', 1));
        const other = store.session('suspension-other');
        await append(other, userItems('b', 1), { runId: 'resume-b', suspensionId: 'susp-a' });
        expect(await load(store.session('suspension-other'))).toEqual(userItems('b', 1));
      }));

    it('two commits of one suspension racing: exactly one stores, the other rejects already_resumed', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('suspension-race');
        const outcomes = await Promise.all(
          ['x', 'y'].map((who) =>
            append(s, userItems(who, 4), { runId: `race-${who}`, suspensionId: 'susp-race' }).then(
              () => 'stored',
              (err: { code?: string }) => err.code,
            ),
          ),
        );
        expect([...outcomes].sort()).toEqual(['already_resumed', 'stored']);
        const loaded = await load(s);
        expect(loaded.length).toBe(4);
      }));

    it('a suspensionId without a runId, or a bad one, is refused naming the field', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('suspension-bad');
        const noRun = await rejection(append(s, userItems('x', 1), { suspensionId: 's' }));
        expect(nameAndField(noRun)).toEqual({ name: 'ConfigurationError', field: 'options.runId' });
        const bad = await rejection(append(s, userItems('x', 1), { runId: 'r', suspensionId: '' }));
        expect(nameAndField(bad)).toEqual({ name: 'ConfigurationError', field: 'options.suspensionId' });
        expect(await load(s)).toEqual([]);
      }));
  });
}
