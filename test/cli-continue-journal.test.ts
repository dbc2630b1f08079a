/**
 * `loopctl --continue` and the stopped run's journal, in-process (`main`) with the offline model and a temp
 * LOOPCTL_DATA_DIR: a journal that cannot be read is reported once in words and discarded, so the next --continue
 * is clean; while another loopctl holds the conversation, --continue is refused before it announces a continue,
 * and the stopped run's journal stays for later.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/app.js';
import { SqliteSessionStore } from '../src/sqlite/index.js';
import { cliEnv } from './cli-helpers.js';
import { tempDirs } from './support/session-stores.js';

const dirs = tempDirs('loopctl-cli-continue-journal-');
afterAll(() => dirs.removeAll());

async function cli(argv: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  const out = { text: '', isTTY: false, write: (t: string) => void (out.text += t) };
  const err = { text: '', isTTY: false, write: (t: string) => void (err.text += t) };
  const exit = (code: number): never => {
    throw new Error(`exit ${code}`);
  };
  const code = await main(argv, env, { stdout: out, stderr: err, exit });
  return { code, stderr: err.text };
}

/** A folder with a saved conversation (one completed run); its store file and session id. */
async function saved(): Promise<{ dir: string; env: NodeJS.ProcessEnv; file: string; id: string }> {
  const dir = dirs.make();
  writeFileSync(path.join(dir, 'a.txt'), 'one\n');
  const data = path.join(dirs.make(), 'data');
  const env = cliEnv({ LOOPCTL_DATA_DIR: data });
  expect((await cli(['--cwd', dir, 'list the .txt files'], env)).code).toBe(0);
  const file = path.join(data, 'sessions.db');
  const store = new SqliteSessionStore(file);
  const id = (await store.list())[0]!.id;
  await store.close();
  return { dir, env, file, id };
}

function putJournalRow(file: string, id: string, runId: string, items: string, turn = 1): void {
  const db = new Database(file);
  db.prepare('INSERT INTO loopctl_journal (session_id, run_id, turn, items, stored_at) VALUES (?,?,?,?,?)').run(
    id,
    runId,
    turn,
    items,
    Date.now(),
  );
  db.close();
}

const journalRows = (file: string): number => {
  const db = new Database(file, { readonly: true });
  const n = (db.prepare('SELECT count(*) AS n FROM loopctl_journal').get() as { n: number }).n;
  db.close();
  return n;
};

describe('loopctl --continue and the stopped run’s journal', () => {
  it('a journal that cannot be read is reported once in words and discarded; the next --continue is clean', async () => {
    const { dir, env, file, id } = await saved();
    putJournalRow(file, id, 'bad-run', '{oops');
    const first = await cli(['--cwd', dir, '--continue', 'list the .txt files'], env);
    expect(first.code, first.stderr).toBe(0);
    const said = new RegExp(
      String.raw`the stopped run's journal could not be read \(.*turn 1 of run "bad-run".* is not JSON.*\) ` +
        'and was discarded; the conversation is as it was before that run\n',
    );
    expect(first.stderr).toMatch(said);
    expect(first.stderr).not.toContain('cannot be continued');
    expect(first.stderr).toContain('[loopctl] completed');
    expect(journalRows(file)).toBe(0);
    const second = await cli(['--cwd', dir, '--continue', 'list the .txt files'], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).not.toContain('journal could not be read');
    expect(second.stderr).not.toContain('continued first');
  }, 60_000);

  it('a journal with a missing turn is reported once in words, naming the gap, and discarded', async () => {
    const { dir, env, file, id } = await saved();
    putJournalRow(file, id, 'gap-run', JSON.stringify([{ type: 'user', id: 'u1', text: 'list the .txt files' }]));
    putJournalRow(file, id, 'gap-run', JSON.stringify([{ type: 'user', id: 'u3', text: 'later' }]), 3);
    const first = await cli(['--cwd', dir, '--continue', 'list the .txt files'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain(
      "the stopped run's journal could not be read (tampered: run gap-run's journal has turn 3 after turn 1 " +
        '(turn 2 is missing)',
    );
    expect(first.stderr).toContain('and was discarded; the conversation is as it was before that run\n');
    expect(first.stderr).not.toContain('continuing the stopped run');
    expect(journalRows(file)).toBe(0);
  }, 60_000);

  it('a stopped run id with control characters is shown escaped: nothing from the file reaches the terminal raw', async () => {
    const { dir, env, file, id } = await saved();
    putJournalRow(file, id, 'evil\u001b]0;PWNED\u0007\u001b[2J', '{oops');
    const first = await cli(['--cwd', dir, '--continue', 'list the .txt files'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    expect(first.stderr).toContain('of run "evil\\x1b]0;PWNED\\x07\\x1b[2J"');
    expect(first.stderr).toContain('and was discarded');
    expect(journalRows(file)).toBe(0);
  }, 60_000);

  it('journal rows left under a run whose commit is stored are removed once, in words; the next --continue is clean', async () => {
    const { dir, env, file, id } = await saved();
    const db = new Database(file, { readonly: true });
    const committed = (db.prepare('SELECT run_id FROM loopctl_runs WHERE session_id = ?').pluck().get(id) as string)!;
    db.close();
    putJournalRow(file, id, committed, JSON.stringify([{ type: 'user', id: 'u1', text: 'list the .txt files' }]));
    const first = await cli(['--cwd', dir, '--continue', 'list the .txt files'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain(
      `[loopctl] the stopped run had completed (its commit is stored): its leftover journal was removed\n`,
    );
    expect(first.stderr).toContain('[loopctl] completed');
    expect(journalRows(file)).toBe(0);
    const second = await cli(['--cwd', dir, '--continue', 'list the .txt files'], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).not.toContain('continued first');
    expect(second.stderr).not.toContain('leftover journal');
  }, 60_000);

  it('while another loopctl holds the conversation, --continue is refused without announcing a continue; the journal stays', async () => {
    const { dir, env, file, id } = await saved();
    const items = [{ type: 'user', id: 'u1', text: 'how many lines' }];
    putJournalRow(file, id, 'stopped-run', JSON.stringify(items));
    const other = new SqliteSessionStore(file);
    const lease = await other.session(id).acquire('the-other-loopctl', { ttlMs: 60_000 });
    try {
      const refused = await cli(['--cwd', dir, '--continue', 'list the .txt files'], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).not.toContain('continued first');
      expect(refused.stderr).not.toContain('continuing the stopped run');
      expect(journalRows(file)).toBe(1);
    } finally {
      await lease.release();
      await other.close();
    }
  }, 60_000);

  it('a new conversation whose first run does not complete is said not to be created, and --continue finds none', async () => {
    const dir = dirs.make();
    writeFileSync(path.join(dir, 'a.txt'), 'one\n');
    const env = cliEnv({ LOOPCTL_DATA_DIR: path.join(dirs.make(), 'data') });
    const failed = await cli(['--cwd', dir, '--max-turns', '1', 'how many lines in a.txt'], env);
    expect(failed.code, failed.stderr).toBe(1);
    const name = /conversation (\S+) \(new; loopctl --continue resumes it\)/.exec(failed.stderr)?.[1];
    expect(name).toBeDefined();
    expect(failed.stderr).toContain(
      `[loopctl] conversation ${name} was not created: its run did not complete, so nothing resumes it\n`,
    );
    const next = await cli(['--cwd', dir, '--continue', 'list the .txt files'], env);
    expect(next.stderr).toContain('this folder had no saved conversation to continue');
    const done = await cli(['--cwd', dir, '--continue', 'list the .txt files'], env);
    expect(done.stderr).not.toContain('was not created');
  }, 60_000);
});
