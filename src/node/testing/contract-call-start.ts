/**
 * The `recordCallStart` part of `sessionContract` (docs/sessions.md, "A resumed call starts once"): a
 * resumed call's start is recorded once per `(suspensionId, callId)`, racing records included.
 */
import type { Item } from '../../items.js';
import type { Session } from '../../session/session.js';
import {
  nameAndField,
  rejection,
  settle,
  userItems,
  ifSessionHas,
  type ContractFramework,
  type MakeStore,
} from './kit.js';

const load = (s: Session): Promise<readonly Item[]> => settle(() => s.load());
const record = (s: Session, suspensionId: string, callId: string): Promise<boolean> =>
  settle(() => s.recordCallStart!(suspensionId, callId));

export function callStartContract({ describe, it, expect }: ContractFramework, makeStore: MakeStore): void {
  describe('a resumed call starts once (docs/sessions.md: recordCallStart)', () => {
    // Each part checks first that the store has the method; without it the store records nothing
    // and the engine keeps the starts in its own process: the parts then assert only that.
    const withRecorder = ifSessionHas(makeStore, expect, (s) => typeof s.recordCallStart === 'function');

    it(
      'the first record of (suspensionId, callId) gives true, every later one false; other keys are separate',
      withRecorder(async (store) => {
        const s = store.session('starts');
        const answers = [
          await record(s, 'susp-1', 'call-a'),
          await record(s, 'susp-1', 'call-a'),
          await record(s, 'susp-1', 'call-a'),
          await record(s, 'susp-1', 'call-b'),
          await record(s, 'susp-2', 'call-a'),
          await record(store.session('starts'), 'susp-1', 'call-b'), // a new handle sees the record
          await record(store.session('starts-other'), 'susp-1', 'call-a'), // another session is separate
        ];
        expect(answers).toEqual([true, false, false, true, true, false, true]);
      }),
    );

    it(
      'ids that would collide when joined stay apart ("a:b" + "c" is not "a" + "b:c")',
      withRecorder(async (store) => {
        const s = store.session('joined');
        expect([await record(s, 'a:b', 'c'), await record(s, 'a', 'b:c'), await record(s, 'a:b', 'c')]).toEqual([
          true,
          true,
          false,
        ]);
      }),
    );

    it(
      'a record is not Items: the session is not created, load and list are unchanged',
      withRecorder(async (store) => {
        const fresh = store.session('record-only');
        expect(await record(fresh, 'susp', 'call')).toBe(true);
        expect(await load(fresh)).toEqual([]);
        expect((await store.list()).map((i) => i.id)).toEqual([]);
        const used = store.session('with-items');
        await settle(() => used.append(userItems('u', 2), { runId: 'r1' }));
        const [before] = await store.list();
        expect(await record(used, 'susp', 'call')).toBe(true);
        expect(await load(used)).toEqual(userItems('u', 2));
        expect(await store.list()).toEqual([before]);
        // A record does not use up a run id: a commit whose runId looks like nothing recorded still stores.
        await settle(() => used.append(userItems('v', 1), { runId: 'call' }));
        expect((await load(used)).length).toBe(3);
      }),
    );

    it(
      'ten records of one call racing: exactly one gives true',
      withRecorder(async (store) => {
        const s = store.session('race');
        const answers = await Promise.all(Array.from({ length: 10 }, () => record(s, 'susp-race', 'call-race')));
        expect(answers.filter((a) => a).length).toBe(1);
        expect(await record(s, 'susp-race', 'call-race')).toBe(false);
      }),
    );

    it(
      'a bad id is refused naming suspensionId or callId, and records nothing',
      withRecorder(async (store) => {
        const s = store.session('bad-ids');
        const bad = await rejection(record(s, '', 'call'));
        expect(nameAndField(bad)).toEqual({ name: 'ConfigurationError', field: 'suspensionId' });
        const badCall = await rejection(record(s, 'susp', 42 as unknown as string));
        expect(nameAndField(badCall)).toEqual({ name: 'ConfigurationError', field: 'callId' });
        const long = await rejection(record(s, 'susp', 'c'.repeat(1024)));
        expect(nameAndField(long)).toEqual({ name: 'ConfigurationError', field: 'callId' });
        expect(await record(s, 'susp', 'call')).toBe(true); // nothing was recorded by the refusals
      }),
    );

    it(
      'records move with rename and go with delete',
      withRecorder(async (store) => {
        const from = store.session('from');
        await settle(() => from.append(userItems('f', 1), { runId: 'r1' }));
        expect(await record(from, 'susp', 'call')).toBe(true);
        await store.rename('from', 'to');
        expect(await record(store.session('to'), 'susp', 'call')).toBe(false);
        expect(await record(store.session('from'), 'susp', 'moved-away')).toBe(true);
        expect(await store.delete('to')).toBe(true);
        expect(await record(store.session('to'), 'susp', 'call')).toBe(true);
        // 'to' now holds a record but no session: a rename onto it succeeds, and 'to' has the moved records.
        const other = store.session('other');
        await settle(() => other.append(userItems('o', 1), { runId: 'r2' }));
        expect(await record(other, 'susp-o', 'call')).toBe(true);
        await store.rename('other', 'to');
        expect(await load(store.session('to'))).toEqual(userItems('o', 1));
        expect(await record(store.session('to'), 'susp-o', 'call')).toBe(false);
      }),
    );
  });
}
