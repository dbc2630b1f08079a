/** What the contract suites share: the test framework's shape, and helpers that await any `MaybeAsync`. */
import { isObservable, lastValueFrom } from 'rxjs';
import type { Item } from '../../items.js';
import type { MaybeAsync, Session, SessionStore } from '../../session/session.js';

/** A test body. */
export type TestBody = () => unknown;

/** The framework's `it` (vitest, jest, mocha): name, body, timeout in ms; `skip` marks a part not applicable. */
export interface ContractIt {
  (name: string, body: TestBody, timeoutMs?: number): void;
  readonly skip?: (name: string, body: TestBody) => void;
}

/** The assertions the suites use (vitest's and jest's `expect` have them). */
export interface ContractAssertion {
  toEqual(expected: unknown): void;
  toBe(expected: unknown): void;
  toBeGreaterThanOrEqual(expected: number): void;
}

/** The test framework's functions, handed in so loopctl does not depend on one. */
export interface ContractFramework {
  describe(name: string, body: () => void): void;
  readonly it: ContractIt;
  expect(actual: unknown): ContractAssertion;
}

/** A fresh, empty store per test; the suite closes it at the end of the test. */
export type MakeStore = () => SessionStore | Promise<SessionStore>;

/** The last value of a `MaybeAsync` (a synchronous throw becomes a rejection). */
export async function settle<T>(call: () => MaybeAsync<T>): Promise<T> {
  const value = call();
  if (isObservable(value)) return lastValueFrom(value, { defaultValue: undefined as T });
  return await value;
}

/** The error `promise` rejects with; throws when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<{ name: string; field?: string; message: string }> {
  try {
    await promise;
  } catch (err) {
    return err as { name: string; field?: string; message: string };
  }
  throw new Error('expected a rejection, but it resolved');
}

/** `name` and `field` of an error, for one exact comparison. */
export const nameAndField = (err: { name: string; field?: string }): { name: string; field: string | undefined } => ({
  name: err.name,
  field: err.field,
});

/** Runs `body` on a fresh store and closes it, whatever happens. */
export async function withStore(makeStore: MakeStore, body: (store: SessionStore) => Promise<void>): Promise<void> {
  const store = await makeStore();
  try {
    await body(store);
  } finally {
    await store.close();
  }
}

/** Whether a session of a fresh store has an optional capability (`has`); the store is closed after. */
async function sessionHas(makeStore: MakeStore, has: (session: Session) => boolean): Promise<boolean> {
  const store = await makeStore();
  try {
    return has(store.session('probe'));
  } finally {
    await store.close();
  }
}

/**
 * Test bodies for a contract part about an optional `Session` capability (`has` says whether a session has it):
 * on a store whose sessions have it, `body` runs on a fresh store; on one without it, the part asserts only that
 * the capability is absent (the engine then does without it).
 */
export function ifSessionHas(
  makeStore: MakeStore,
  expect: ContractFramework['expect'],
  has: (session: Session) => boolean,
): (body: (store: SessionStore) => Promise<void>) => () => Promise<void> {
  return (body) => async () => {
    if (!(await sessionHas(makeStore, has))) {
      expect(await sessionHas(makeStore, has)).toBe(false);
      return;
    }
    await withStore(makeStore, body);
  };
}

/** `n` distinct user Items tagged `tag` (`tag-0`, `tag-1`, …). */
export function userItems(tag: string, n: number): Item[] {
  return Array.from({ length: n }, (_, i): Item => ({ type: 'user', id: `${tag}-${i}`, text: `${tag} ${i}` }));
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Valid Items a careless store would mangle: unpaired, duplicated and orphan tool calls (repair is the
 * engine's job: the store gives back exactly what it was given), NUL and other control characters,
 * lone surrogates, astral characters, quotes and SQL, JSON-looking text, empty strings, a 1 MiB text.
 */
/**
 * Assistant Items carrying provider parts (`providerParts`) as the adapters store them: an Anthropic turn with a
 * signed thinking block, a redacted one and a tool use; a Gemini turn with a thought part and a function call
 * carrying `thoughtSignature`s; a family the store knows nothing of, with keys in no sorted order, numbers,
 * nulls, nesting and non-ASCII text. A store gives them back byte for byte: a signature is replayed to the
 * provider unchanged, so even the order of keys must survive.
 */
export function providerPartItems(): Item[] {
  return [
    { type: 'user', id: 'p0', text: 'check the weather, think first' },
    {
      type: 'assistant',
      id: 'p1',
      text: '',
      toolCalls: [{ callId: 'toolu_01', name: 'weather', arguments: '{"city":"Zürich"}' }],
      providerParts: {
        family: 'anthropic',
        data: {
          content: [
            {
              type: 'thinking',
              thinking: 'The user wants Zürich.\nI should call weather.',
              signature: 'EqQBCkYIBxgCKkBs+/=',
            },
            { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
            { type: 'tool_use', id: 'toolu_01', name: 'weather', input: { city: 'Zürich' } },
          ],
        },
      },
    },
    { type: 'tool_result', callId: 'toolu_01', output: '21 °C', isError: false },
    {
      type: 'assistant',
      id: 'p2',
      text: 'It is 21 °C.',
      toolCalls: [],
      providerParts: {
        family: 'gemini',
        data: {
          parts: [
            { thought: true, text: 'Answer plainly.', thoughtSignature: 'CiQBVKhc7vB+ZK3mOHs=' },
            { text: 'It is 21 °C.', thoughtSignature: 'Cv4BAVKhc7s/ab==' },
          ],
        },
      },
    },
    {
      type: 'assistant',
      id: 'p3',
      text: 'x',
      toolCalls: [],
      providerParts: { family: 'other', data: { z: 1, a: [0.5, -1e-7, null, true, 'ß'], m: { y: {}, b: [] } } },
    },
  ];
}

export function hostileItems(): Item[] {
  const big = 'ü'.repeat(512 * 1024);
  return [
    { type: 'user', id: 'h0', text: '' },
    { type: 'user', id: 'h1', text: 'nul \u0000 bell \u0007 esc \u001b del \u007f' },
    { type: 'user', id: 'h2', text: 'lone \ud800 and \udfff surrogates, a pair 😀, rtl \u202e' },
    { type: 'user', id: "h3'); DROP TABLE loopctl_items; --", text: 'quote \' double " back \\ slash' },
    { type: 'user', id: 'h4', text: '{"type":"user","id":"x"} [1,2] null' },
    {
      type: 'assistant',
      id: 'h5',
      text: '',
      toolCalls: [
        { callId: 'c1', name: 'read', arguments: '{not json' },
        { callId: 'c1', name: 'read', arguments: '' },
        { callId: 'c2', name: '', arguments: '{"__proto__":{"polluted":true}}' },
      ],
    },
    { type: 'tool_result', callId: 'c-orphan', output: '', isError: true },
    { type: 'assistant', id: 'h6', text: 'half an answer', toolCalls: [], interrupted: true },
    { type: 'tool_result', callId: 'c2', output: big, isError: false, interrupted: false },
    { type: 'user', id: 'h1', text: 'the same id again' },
  ];
}
