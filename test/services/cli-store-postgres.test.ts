/**
 * `--store postgres://…` (and LOOPCTL_DATABASE_URL): the CLI's saved conversations in the local Postgres, each
 * test in its own schema (dropped after it), the CLI as a child process with the offline model. The schema's
 * tables are made on first use; --continue goes on from the run before, in another process; `sessions` lists,
 * shows and deletes them there; nothing goes to sessions.db; a server that does not answer is one line and exit
 * 1, a URL that is not postgres:// exit 2. Every wait is for the child to end, never a sleep.
 */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, ensureBuilt, removeTempFolders, runBin, tempFolder } from '../cli-helpers.js';
import { postgresFixture } from './support/postgres.js';

const { pool, freshSchema } = postgresFixture();
beforeAll(() => ensureBuilt(), 180_000);
afterAll(removeTempFolders);

const env = process.env;
const url = (schema: string) =>
  `postgres://${env['PGUSER']}@${env['PGHOST']}:${env['PGPORT']}/${env['PGDATABASE']}?schema=${schema}`;

function setup() {
  const dir = tempFolder({ 'a.txt': 'one\ntwo\nthree\n' });
  const data = path.join(tempFolder(), 'data');
  return { dir, data, env: cliEnv({ LOOPCTL_DATA_DIR: data }) };
}

describe('loopctl --store postgres://…', () => {
  it('saves in the schema (made on first use); --continue resumes it in the next process', async () => {
    const schema = freshSchema();
    const { dir, data, env: childEnv } = setup();
    const first = await runBin(['--store', url(schema), 'how many lines in a.txt'], dir, childEnv).done;
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('a.txt has 3 lines.');
    // The hint names the store: a bare `loopctl --continue` would look in sessions.db and start a new one.
    expect(first.stderr).toMatch(
      /\(new; loopctl --continue resumes it, with the same --store or LOOPCTL_DATABASE_URL\)\n/,
    );
    const tables = await pool.query<{ table_name: string }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
      [schema],
    );
    expect(tables.rows.map((r) => r.table_name)).toEqual([
      'loopctl_items',
      'loopctl_journal',
      'loopctl_leases',
      'loopctl_runs',
      'loopctl_schema',
      'loopctl_sessions',
    ]);
    const saved = await pool.query<{ id: string; n: number }>(
      `SELECT session_id AS id, count(*)::int AS n FROM "${schema}".loopctl_items GROUP BY session_id`,
    );
    expect(saved.rows).toHaveLength(1);
    const firstItems = saved.rows[0]!.n;
    expect(firstItems).toBeGreaterThanOrEqual(4); // the task, the tool call, its result, the answer

    const second = await runBin(['--store', url(schema), '--continue', 'list the .txt files'], dir, childEnv).done;
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain(`(continued: ${firstItems} items)`);
    const after = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".loopctl_items`);
    expect(after.rows[0]!.n).toBeGreaterThan(firstItems);
    expect(existsSync(path.join(data, 'sessions.db'))).toBe(false);
  }, 60_000);

  it('LOOPCTL_DATABASE_URL picks it too; loopctl sessions lists, shows and deletes there', async () => {
    const schema = freshSchema();
    const { dir, env: base } = setup();
    const childEnv = { ...base, LOOPCTL_DATABASE_URL: url(schema) };
    const run = await runBin(['--session', 'pg-one', 'how many lines in a.txt'], dir, childEnv).done;
    expect(run.code, run.stderr).toBe(0);
    const list = await runBin(['sessions'], dir, childEnv).done;
    expect(list.code, list.stderr).toBe(0);
    expect(list.stderr).toContain(`saved conversations in postgres://`);
    expect(list.stderr).toContain(`(schema ${schema})`);
    expect(list.stdout).toMatch(/^pg-one +\d+ /m);
    const show = await runBin(['sessions', 'show', 'pg-one', '--store', url(schema)], dir, base).done;
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain('> how many lines in a.txt');
    const rm = await runBin(['sessions', 'rm', 'pg-one', '--yes'], dir, childEnv).done;
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.stderr).toContain('[loopctl] deleted conversation pg-one');
    const left = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".loopctl_sessions`);
    expect(left.rows[0]!.n).toBe(0);
  }, 60_000);

  it('a server that does not answer: one line naming it, exit 1; a URL that is not postgres://: exit 2', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const { dir, env: childEnv } = setup();
    const down = `postgres://postgres:secret@127.0.0.1:${port}/test`;
    const refused = await runBin(['--store', down, 'how many lines in a.txt'], dir, childEnv).done;
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toEqual([
      `loopctl: the saved conversations in postgres://postgres:***@127.0.0.1:${port}/test (schema loopctl) ` +
        `cannot be used: connect ECONNREFUSED 127.0.0.1:${port}`,
    ]);
    const wrong = await runBin(['--store', 'mysql://h/db', 'x'], dir, childEnv).done;
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toBe(
      'loopctl: option --store must be a postgres:// URL, e.g. postgres://user@127.0.0.1:5432/db?schema=loopctl ' +
        `(got "mysql://h/db")\nTry 'loopctl --help'.\n`,
    );
  }, 60_000);
});
