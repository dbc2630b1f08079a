/**
 * A `kill -9` of loopctl mid-run, then `loopctl --continue`: the killed run goes on from its last completed turn (its
 * journal in the SQLite conversation file), says so in words, runs no tool of a completed turn again, commits once,
 * and then the new task runs. The CLI as a child process with the offline model in a temp LOOPCTL_DATA_DIR; the kill
 * waits for the journal row (read from the file), never a sleep.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, ensureBuilt, occurrences, removeTempFolders, runBin, tempFolder, waitFor } from '../cli-helpers.js';

beforeAll(() => ensureBuilt(), 180_000);
afterAll(removeTempFolders);

/** How many completed turns the conversation file's journal holds (0 while it does not exist yet); a turn's
 * response journalled before its tools is a row under a negative turn, not counted. */
function journalRows(db: string, where = 'WHERE turn > 0'): number {
  try {
    const file = new Database(db, { readonly: true, fileMustExist: true });
    try {
      return (file.prepare(`SELECT count(*) AS n FROM loopctl_journal ${where}`).get() as { n: number }).n;
    } finally {
      file.close();
    }
  } catch {
    return 0;
  }
}

describe('loopctl --continue after kill -9', () => {
  it('continues the killed run from its last completed turn, says so, runs no completed tool again', async () => {
    const dir = tempFolder({ 'a.txt': 'one\ntwo\nthree\n', 'b.txt': 'x\n' });
    const data = path.join(tempFolder(), 'data');
    const env = cliEnv({ LOOPCTL_DATA_DIR: data });
    const db = path.join(data, 'sessions.db');
    // A saved conversation for --continue to find.
    expect((await runBin(['list the .txt files'], dir, env).done).code).toBe(0);
    // The run to kill: its turn 1 reads a.txt; its turn 2 answers 2 s a word, so it is killed in turn 2, after the
    // journal of turn 1 was written at turn 2's entry.
    const doomed = runBin(['--continue', 'how many lines in a.txt'], dir, { ...env, LOOPCTL_OFFLINE_DELAY_MS: '2000' });
    await waitFor('the journal of turn 1', () => journalRows(db) === 1, 20_000);
    doomed.child.kill('SIGKILL');
    const killed = await doomed.done;
    expect(killed.code).toBe(128 + 9);
    expect(killed.stdout).not.toContain('a.txt has 3 lines.');

    const next = await runBin(['--continue', 'list the .txt files'], dir, env).done;
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toContain('its last run stopped before it ended and is continued first');
    expect(next.stderr).toContain('continuing the stopped run from its last completed turn (turn 1)');
    const readsAgain = occurrences(next.stderr, '[tool] read_file');
    expect(readsAgain).toBe(0); // turn 1's read_file is journalled: it does not run again
    expect(next.stdout).toContain('a.txt has 3 lines.');
    expect(occurrences(next.stderr, '[tool] list_dir')).toBe(1); // then the new task
    expect(occurrences(next.stderr, '[loopctl] completed')).toBe(2);
    const show = await runBin(['sessions', 'show', '--cwd', dir], dir, env).done;
    expect(occurrences(show.stdout, '> how many lines in a.txt')).toBe(1);
    expect(occurrences(show.stdout, 'a.txt has 3 lines.')).toBe(1);
    expect(occurrences(show.stdout, '> list the .txt files')).toBe(2);
    expect(journalRows(db, '')).toBe(0); // the commit sealed it, responses included
    console.log(
      `kill -9 then --continue: read_file executions ${occurrences(killed.stderr, '[tool] read_file') + readsAgain}, ` +
        `completed runs ${occurrences(next.stderr, '[loopctl] completed')}, journal rows left ${journalRows(db)}`,
    );
  }, 60_000);
});
