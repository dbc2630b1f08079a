/**
 * A refused journal argument (docs/sessions.md, "The run journal": bad input is a `ConfigurationError` naming the
 * field) says in words what it got, told apart from a good value: a string in quotes (the turn "1" is not the
 * turn 1), a missing claim as undefined, an empty id as "", a long or unprintable id escaped and cut.
 */
import { describe, expect, it } from 'vitest';
import { MemorySession, resumeRun, defineAgent } from 'loopctl';
import { scriptedModel } from 'loopctl/testing';

const items = [{ type: 'user', id: 'u1', text: 'hi' }] as const;

function refusal(f: () => unknown): { field: string; message: string } {
  try {
    f();
  } catch (err) {
    return { field: (err as { field: string }).field, message: (err as Error).message };
  }
  throw new Error('not refused');
}

describe('a refused journal argument says what it got', () => {
  const s = new MemorySession();

  it('a string turn or claim is quoted: "1" is not 1', () => {
    expect(refusal(() => s.journalTurn('r', '1' as never, [...items]))).toEqual({
      field: 'turn',
      message: 'turn: must be a whole number ≥ 1 (got "1", a string)',
    });
    expect(refusal(() => s.journalTurn('r', 1, [...items], { claim: '2' as never }))).toEqual({
      field: 'options.claim',
      message: 'options.claim: must be a whole number ≥ 1 (got "2", a string)',
    });
    expect(refusal(() => s.journalTurn('r', 1.5, [...items])).message).toBe(
      'turn: must be a whole number ≥ 1 (got 1.5)',
    );
  });

  it('a missing fence claim is undefined, not NaN', () => {
    expect(refusal(() => s.fenceJournal('r', undefined as never))).toEqual({
      field: 'claim',
      message: 'claim: must be a whole number ≥ 1 (got undefined)',
    });
  });

  it('an empty, a number, a NUL-bearing or an overlong run id is quoted, escaped and cut', async () => {
    const rule = 'runId: must be a non-empty string of at most 1024 characters, well-formed Unicode without NUL';
    expect(refusal(() => s.readJournal('')).message).toBe(`${rule} (got "", a string)`);
    expect(refusal(() => s.readJournal(42 as never)).message).toBe(`${rule} (got 42)`);
    expect(refusal(() => s.readJournal('a\u0000b')).message).toBe(`${rule} (got "a\\u0000b", a string)`);
    const long = refusal(() => s.discardJournal('x'.repeat(5000))).message;
    expect(long).toBe(`${rule} (got "${'x'.repeat(60)}…", a string of 5000 characters)`);
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['x']) });
    await expect(resumeRun(agent, '', { session: s })).rejects.toThrow(`${rule} (got "", a string)`);
  });
});
