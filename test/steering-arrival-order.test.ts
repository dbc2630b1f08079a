import { NEVER, tap } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { CancelSignal, Mailbox, MemorySession, defineAgent, run, type Item, type RunEvent } from '../src/index.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';

/**
 * "Arrival order" (docs/steering.md): steering queued before a run started
 * goes immediately before the input's last `user` Item in the run's first
 * request (a string input is one such Item; an input with no `user` Item gets
 * it after the input); steering pushed once the run started (also from the
 * first turn's turnStarted hook) comes after the input.
 */

const counterIds = (): (() => string) => {
  let n = 0;
  return () => `s${++n}`;
};

/** One run on `mailbox` with `input`; S3 is pushed from turn 1's turnStarted hook when `pushFromHook`. */
async function firstRequest(
  mailbox: Mailbox,
  input: string | readonly Item[],
  pushFromHook: boolean,
  history: Item[] = [],
) {
  const model = scriptedModel(['the answer']);
  const agent = defineAgent({ name: 'a', instructions: '', model });
  const session = new MemorySession(history);
  const events: RunEvent[] = await collectEvents(
    run(agent, input, {
      mailbox,
      session,
      idGenerator: sequentialIds(),
      hooks: { turnStarted: ({ turn }) => void (pushFromHook && turn === 1 && mailbox.push('S3')) },
    }),
  );
  expect(events.at(-1)).toMatchObject({ type: 'run_completed' });
  const request = model.requests[0]!.items;
  const ids = request.map((i) => (i.type === 'tool_result' ? i.callId : i.id));
  expect(new Set(ids).size).toBe(ids.length); // each item once
  // The committed session holds the same order (then the answer).
  expect(session.items.slice(0, request.length)).toEqual(request);
  const injected = events.flatMap((e) => (e.type === 'user_message_injected' ? [e.id] : []));
  return { request, injected };
}

const user = (id: string, text: string): Item => ({ type: 'user', id, text });
const assistant = (id: string, text: string): Item => ({ type: 'assistant', id, text, toolCalls: [] });

describe('steering queued before a run keeps its arrival order', () => {
  for (const pushFromHook of [false, true]) {
    const variant = pushFromHook ? ", S3 pushed from turn 1's turnStarted hook" : '';
    const s3 = pushFromHook ? ', S3' : '';
    it(`string input M with S1, S2 queued before the run${variant}: S1, S2, M${s3}`, async () => {
      const mailbox = new Mailbox({ idGenerator: counterIds() });
      mailbox.push('S1');
      mailbox.push('S2');
      const { request, injected } = await firstRequest(mailbox, 'M', pushFromHook);
      expect(request).toEqual([
        user('s1', 'S1'),
        user('s2', 'S2'),
        user('item-1', 'M'),
        ...(pushFromHook ? [user('s3', 'S3')] : []),
      ]);
      expect(injected).toEqual(pushFromHook ? ['s1', 's2', 's3'] : ['s1', 's2']);
    });

    it(`Item[] history input [A, X, B] with S1, S2 queued before the run${variant}: A, X, S1, S2, B${s3}`, async () => {
      const mailbox = new Mailbox({ idGenerator: counterIds() });
      mailbox.push('S1');
      mailbox.push('S2');
      const input = [user('a', 'A'), assistant('x', 'X'), user('b', 'B')];
      const { request } = await firstRequest(mailbox, input, pushFromHook, [user('h', 'stored earlier')]);
      expect(request).toEqual([
        user('h', 'stored earlier'),
        user('a', 'A'),
        assistant('x', 'X'),
        user('s1', 'S1'),
        user('s2', 'S2'),
        user('b', 'B'),
        ...(pushFromHook ? [user('s3', 'S3')] : []),
      ]);
    });
  }

  it('Item[] input without a user Item: the queued steering follows the input', async () => {
    const mailbox = new Mailbox({ idGenerator: counterIds() });
    mailbox.push('S1');
    const { request } = await firstRequest(mailbox, [assistant('x', 'X')], true);
    expect(request).toEqual([assistant('x', 'X'), user('s1', 'S1'), user('s2', 'S3')]);
  });

  it('steering a cancelled run gave back counts as queued before the next run: S1, S2, M', async () => {
    const mailbox = new Mailbox({ idGenerator: counterIds() });
    const cancel = new CancelSignal();
    const first = defineAgent({ name: 'a', instructions: '', model: scriptedModel([{ text: ['x'], hold: NEVER }]) });
    const ended = await collectEvents(
      run(first, 'earlier task', {
        mailbox,
        cancel,
        hooks: { turnStarted: () => void (mailbox.push('S1'), mailbox.push('S2')) },
      }).pipe(tap((e) => void (e.type === 'text_delta' && cancel.cancel('stop')))),
    );
    expect(ended.at(-1)).toMatchObject({ type: 'run_cancelled', undelivered: [{ id: 's1' }, { id: 's2' }] });
    const { request } = await firstRequest(mailbox, 'M', false);
    expect(request).toEqual([user('s1', 'S1'), user('s2', 'S2'), user('item-1', 'M')]);
  });
});
