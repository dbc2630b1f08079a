/**
 * Saved conversations end to end: the CLI as a child process with the offline model, a temp LOOPCTL_DATA_DIR in
 * every test (never the real home), terminals through util-linux `script`. --continue across invocations, Ctrl-C
 * leaving the stored conversation as it was (one task and the prompt loop), file modes, `sessions rm` asking on a
 * terminal and refusing on a pipe, a corrupt or later file left untouched, a full disk ending the run
 * session_error with the history intact, two processes on one conversation, and the CLI without better-sqlite3.
 * Every wait is for an output marker, never a sleep.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  cliEnv,
  ensureBuilt,
  occurrences,
  removeTempFolders,
  repoRoot,
  runBin,
  runBinInPty,
  spawnCli,
  tempFolder,
  waitFor,
} from '../cli-helpers.js';

beforeAll(() => ensureBuilt(), 180_000);
afterAll(removeTempFolders);

/** A project folder and a data folder (not yet created: the CLI makes it) with the environment pointing at it. */
function setup(delayMs = 0) {
  const dir = tempFolder({ 'a.txt': 'one\ntwo\nthree\n', 'b.txt': 'x\n' });
  const data = path.join(tempFolder(), 'data');
  const env = cliEnv({ LOOPCTL_DATA_DIR: data, LOOPCTL_OFFLINE_DELAY_MS: String(delayMs) });
  return { dir, data, env, db: path.join(data, 'sessions.db') };
}

const FIRST = [
  '> how many lines in a.txt',
  '[tool] read_file path: a.txt',
  '  = one\\ntwo\\nthree\\n',
  '(offline model)',
  'a.txt has 3 lines.',
].join('\n');
const SECOND = [
  '> list the .txt files',
  '[tool] list_dir path: ., recursive: true, pattern: *.txt',
  '  = a.txt\\nb.txt',
  '(offline model)',
  'I found 2 .txt files:',
  '- a.txt',
  '- b.txt',
].join('\n');

/** The name the header gave a new conversation. */
const newName = (stderr: string): string => {
  const name = /^\[loopctl\] conversation (\S+) \(new; loopctl --continue resumes it\)$/m.exec(stderr)?.[1];
  if (name === undefined) throw new Error(`no new conversation in:\n${stderr}`);
  return name;
};

/** `loopctl sessions …` in `dir`; resolves with its exit code and output. */
const sessions = (dir: string, env: NodeJS.ProcessEnv, ...args: string[]) =>
  runBin(['sessions', ...args], dir, env).done;

/** The stored conversations of the file, read directly: [id, items] each. */
function stored(db: string): [string, number][] {
  const raw = new Database(db, { readonly: true });
  try {
    return raw.prepare('SELECT id, items FROM loopctl_sessions ORDER BY id').raw().all() as [string, number][];
  } finally {
    raw.close();
  }
}

describe('--continue and sessions show', () => {
  it('--continue across two invocations keeps the first run; show lists both; file 0600, folder 0700', async () => {
    const { dir, data, env, db } = setup();
    const first = await runBin(['how many lines in a.txt'], dir, env).done;
    expect(first.code, first.stderr).toBe(0);
    const name = newName(first.stderr);
    const second = await runBin(['--continue', 'list the .txt files'], dir, env).done;
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain(`\n[loopctl] conversation ${name} (continued: 4 items)\n`);

    const show = await sessions(dir, env, 'show');
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toBe(`${FIRST}\n\n${SECOND}\n`);
    expect(show.stderr).toMatch(
      new RegExp(`^\\[loopctl\\] conversation ${name} · 8 items · updated [-0-9: ]{19} · folder ${dir}\\n$`),
    );
    const byName = await sessions(dir, env, 'show', name);
    expect(byName.stdout).toBe(show.stdout);

    const list = await sessions(dir, env, 'list');
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`^NAME +ITEMS  UPDATED\\n${name} +8  [-0-9: ]{19}\\n$`));
    expect(list.stderr).toBe(`[loopctl] saved conversations in ${db}\n`);

    expect(statSync(data).mode & 0o777).toBe(0o700);
    const files = readdirSync(data);
    expect(files).toContain('sessions.db');
    for (const file of files) expect([file, statSync(path.join(data, file)).mode & 0o777]).toEqual([file, 0o600]);
  });

  it('--session NAME names one; a plain run starts a new one; --no-save saves nothing', async () => {
    const { dir, env, db } = setup();
    expect((await runBin(['--session', 'work', 'how many lines in a.txt'], dir, env).done).code).toBe(0);
    expect((await runBin(['how many lines in a.txt'], dir, env).done).code).toBe(0);
    const again = await runBin(['--session', 'work', 'list the .txt files'], dir, env).done;
    expect(again.stderr).toContain('\n[loopctl] conversation work (continued: 4 items)\n');
    const unsaved = await runBin(['--no-save', 'list the .txt files'], dir, env).done;
    expect(unsaved.stderr).toContain('\n[loopctl] conversation not saved (--no-save)\n');
    expect((await sessions(dir, env, 'show', 'work')).stdout).toBe(`${FIRST}\n\n${SECOND}\n`);
    expect(
      stored(db)
        .map(([id, items]) => [id.slice(0, dir.length + 1), items])
        .sort(),
    ).toEqual([
      [`${dir}#`, 4],
      [`${dir}#`, 8],
    ]);
  });
});

describe('a cancelled run leaves the stored conversation unchanged', () => {
  it('Ctrl-C on a terminal in the middle of a --continue run: exit 130, the conversation as it was', async () => {
    const { dir, env, db } = setup();
    expect((await runBin(['how many lines in a.txt'], dir, env).done).code).toBe(0);
    const before = await sessions(dir, env, 'show');
    const slow = { ...env, LOOPCTL_OFFLINE_DELAY_MS: '500' };
    const cli = runBinInPty(['--continue', 'list the .txt files'], dir, slow);
    await waitFor('the tool call', () => cli.screen().includes('[tool] list_dir'), 20_000);
    cli.type('\x03');
    const { code, screen } = await cli.done;
    expect(code, screen).toBe(130);
    expect(screen).toContain('[loopctl] cancelled (reason: SIGINT');
    expect(await sessions(dir, env, 'show')).toEqual(before);
    expect(stored(db).map(([, items]) => items)).toEqual([4]);
  });

  it('the prompt loop commits each completed run; a run cancelled with Ctrl-C adds nothing', async () => {
    const { dir, env } = setup();
    const cli = runBinInPty(['--session', 'work'], dir, { ...env, LOOPCTL_OFFLINE_DELAY_MS: '300' });
    await waitFor('the interactive hint', () => cli.screen().includes('[loopctl] interactive:'), 20_000);
    expect(cli.screen()).toContain('[loopctl] conversation work (new; loopctl --session work resumes it)');
    cli.type('how many lines in a.txt\r');
    await waitFor('the first run to complete', () => occurrences(cli.screen(), '[loopctl] completed') === 1, 20_000);
    cli.type('list the .txt files\r');
    await waitFor("the second run's tool call", () => cli.screen().includes('[tool] list_dir'), 20_000);
    cli.type('\x03');
    await waitFor('the second run cancelled', () => cli.screen().includes('[loopctl] cancelled'), 20_000);
    cli.type('/quit\r');
    const { code, screen } = await cli.done;
    expect(code, screen).toBe(0);
    expect((await sessions(dir, env, 'show', 'work')).stdout).toBe(`${FIRST}\n`);

    const next = await runBin(['--session', 'work', 'list the .txt files'], dir, env).done;
    expect(next.stderr).toContain('\n[loopctl] conversation work (continued: 4 items)\n');
    expect((await sessions(dir, env, 'show', 'work')).stdout).toBe(`${FIRST}\n\n${SECOND}\n`);
  });
});

describe('loopctl sessions rm', () => {
  it('on a pipe without --yes: refused with exit 2, nothing deleted; with --yes: deleted', async () => {
    const { dir, env, db } = setup();
    await runBin(['--session', 'work', 'how many lines in a.txt'], dir, env).done;
    const refused = await runBin(['sessions', 'rm', 'work'], dir, env, 'pipe').done;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      'loopctl: sessions rm: stdin is not a terminal to ask on; add --yes to delete without asking\n' +
        "Try 'loopctl --help'.\n",
    );
    expect(stored(db)).toEqual([[`${dir}#work`, 4]]);

    const missing = await runBin(['sessions', 'rm', 'work', 'nope', '--yes'], dir, env).done;
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      `loopctl: no conversation "nope" in ${dir} (loopctl sessions list shows them); nothing was deleted\n`,
    );
    expect(stored(db)).toEqual([[`${dir}#work`, 4]]);

    const yes = await runBin(['sessions', 'rm', 'work', '--yes'], dir, env).done;
    expect(yes.code).toBe(0);
    expect(yes.stderr).toBe('[loopctl] deleted conversation work (4 items)\n');
    expect(stored(db)).toEqual([]);
  });

  it('on a terminal it asks: "n" keeps the conversation, "y" deletes it', async () => {
    const { dir, env, db } = setup();
    await runBin(['--session', 'work', 'how many lines in a.txt'], dir, env).done;
    for (const [answer, kept] of [
      ['n', true],
      ['y', false],
    ] as const) {
      const cli = runBinInPty(['sessions', 'rm', 'work'], dir, env);
      await waitFor('the question', () => cli.screen().includes('delete conversation work (4 items)? [y/N] '));
      cli.type(`${answer}\r`);
      const { code, screen } = await cli.done;
      expect(code, screen).toBe(0);
      const said = kept ? '[loopctl] nothing was deleted' : '[loopctl] deleted conversation work (4 items)';
      expect(screen).toContain(said);
      expect(stored(db)).toEqual(kept ? [[`${dir}#work`, 4]] : []);
    }
  });
});

describe('a file loopctl cannot use is left as it is', () => {
  it('a corrupt file: one clear line, exit 1, for a run and for sessions; the file untouched', async () => {
    const { dir, data, env, db } = setup();
    mkdirSync(data);
    const junk = Buffer.from('SQLite format 3\0'.padEnd(4096, '\x01'), 'latin1');
    writeFileSync(db, junk);
    const commands = [['how many lines in a.txt'], ['--continue', 'hi'], ['sessions', 'list'], ['sessions', 'show']];
    for (const args of commands) {
      const { code, stdout, stderr } = await runBin(args, dir, env).done;
      expect([args, code, stdout]).toEqual([args, 1, '']);
      expect(stderr).toBe(
        `loopctl: ${db}: not a readable SQLite database; the file is left as it is; move the file away to start ` +
          'afresh, or run with --no-save\n',
      );
    }
    expect(readFileSync(db).equals(junk)).toBe(true);
    expect(readdirSync(data)).toEqual(['sessions.db']);
  });

  it('a file from a later loopctl: one line naming the versions, exit 1, its conversations kept', async () => {
    const { dir, env, db } = setup();
    await runBin(['--session', 'work', 'how many lines in a.txt'], dir, env).done;
    const raw = new Database(db);
    raw.prepare('UPDATE loopctl_schema SET version = 99').run();
    raw.close();
    const before = readFileSync(db);
    const { code, stderr } = await runBin(['--continue', 'hi'], dir, env).done;
    expect(code).toBe(1);
    expect(stderr).toBe(
      `loopctl: ${db}: schema version 99 was written by a later loopctl (this one reads version 3); the file is ` +
        'left as it is; use that loopctl, or run with --no-save\n',
    );
    expect(readFileSync(db).equals(before)).toBe(true);
    expect(stored(db)).toEqual([[`${dir}#work`, 4]]);
  });
});

describe('a full disk', () => {
  it('a commit finding the disk full ends session_error, the history intact; with room again runs go on', async () => {
    // The data folder is a 1 MB tmpfs in a mount namespace of the CLI's own (unshare: root here); the test fills
    // it through /proc/<pid>/root, the CLI's view of its mounts. Piped tasks keep the store open between runs.
    const probe = spawnSync('unshare', ['-m', 'true'], { encoding: 'utf8' });
    if (probe.status !== 0) throw new Error(`this spec needs a mount namespace (unshare -m, as root): ${probe.stderr}`);
    const { dir, data, env } = setup();
    mkdirSync(data);
    const cli = spawnCli('unshare', ['-m', 'sh', '-c', mountThenRun(data, ['--session', 's'])], {
      cwd: dir,
      env,
      stdin: 'pipe',
    });
    const completed = (n: number) =>
      waitFor(`${n} completed`, () => occurrences(cli.stderr(), '[loopctl] completed') >= n);
    cli.send('how many lines in a.txt');
    await completed(1);
    const inside = `/proc/${cli.child.pid}/root${data}`;
    expect(readdirSync(inside)).toContain('sessions.db'); // the tmpfs, as the CLI sees it
    await fill(path.join(inside, 'filler'));
    cli.send('list the .txt files');
    await waitFor('the failed commit', () => cli.stderr().includes('[loopctl] failed (session_error)'), 20_000);
    expect(cli.stderr()).toContain('the disk or database is full (SQLITE_FULL) (nothing of this run was saved)');
    rmSync(path.join(inside, 'filler'));
    // `loopctl sessions show` in the CLI's mount namespace (SQLite resolves /proc/<pid>/root away).
    const nsenter = ['-t', String(cli.child.pid), '-m', process.execPath, BIN];
    const show = () => spawnCli('nsenter', [...nsenter, 'sessions', 'show', 's', '--cwd', dir], { cwd: dir, env }).done;
    const shown = await show();
    expect(shown.stdout, shown.stderr).toBe(`${FIRST}\n`); // the first run only
    cli.send('list the .txt files');
    await completed(2);
    expect((await show()).stdout).toBe(`${FIRST}\n\n${SECOND}\n`);
    cli.child.stdin!.end();
    const { code, stderr } = await cli.done;
    expect(code, stderr).toBe(0); // the last line's run completed
  });
});

/** A shell command that mounts a 1 MB tmpfs on `data`, then runs the CLI with `args` in its place. */
function mountThenRun(data: string, args: readonly string[]): string {
  const words = [process.execPath, BIN, ...args].map((w) => `'${w}'`).join(' ');
  return `mount -t tmpfs -o size=1m,mode=700 none '${data}' && exec ${words}`;
}

/** Writes zeros to `file` until the disk is full (ENOSPC). */
function fill(file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const dd = spawn('dd', ['if=/dev/zero', `of=${file}`, 'bs=4096'], { stdio: 'ignore' });
    dd.on('error', reject);
    dd.on('close', () => (existsSync(file) ? resolve() : reject(new Error('dd wrote nothing'))));
  });
}

describe('one run per conversation across processes', () => {
  it('a second loopctl on a running conversation is refused with exit 1; once the first ends it goes on', async () => {
    const { dir, env } = setup();
    // 1.5 s between two words of the answer: the second process (started once the first is at its tool call)
    // has several seconds to start on a loaded machine while the first still holds the conversation.
    const slowEnv = { ...env, LOOPCTL_OFFLINE_DELAY_MS: '1500' };
    const slow = runBin(['--session', 's', 'how many lines in a.txt'], dir, slowEnv);
    await waitFor("the slow run's tool call", () => slow.stderr().includes('[tool] read_file'), 20_000);
    const refused = await runBin(['--session', 's', 'list the .txt files'], dir, env).done;
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `\nloopctl: another loopctl process (pid ${slow.child.pid}) is running on this conversation: wait for it to ` +
        'end, or leave out --continue and --session to start a new one\n',
    );
    expect((await slow.done).code).toBe(0);
    const after = await runBin(['--session', 's', 'list the .txt files'], dir, env).done;
    expect(after.code).toBe(0);
    expect((await sessions(dir, env, 'show', 's')).stdout).toBe(`${FIRST}\n\n${SECOND}\n`);
  });
});

describe('a SIGKILLed loopctl does not lock its conversation', () => {
  it('the next loopctl on the same conversation runs at once: the dead process holds no lease', async () => {
    const { dir, env } = setup();
    const slowEnv = { ...env, LOOPCTL_OFFLINE_DELAY_MS: '300' };
    const doomed = runBin(['--session', 's', 'how many lines in a.txt'], dir, slowEnv);
    await waitFor("the doomed run's tool call", () => doomed.stderr().includes('[tool] read_file'), 20_000);
    doomed.child.kill('SIGKILL'); // no release, no cleanup: its lease row stays, live for 30 s
    expect((await doomed.done).code).toBe(128 + 9);
    const started = performance.now();
    const next = await runBin(['--session', 's', 'list the .txt files'], dir, env).done;
    const tookMs = Math.round(performance.now() - started);
    console.log(
      `after SIGKILL of the holder: the next run exited ${next.code} after ${tookMs} ms (lease ttl 30000 ms)`,
    );
    expect(next.stderr).not.toContain('is running on this conversation');
    expect(next.code, next.stderr).toBe(0);
    expect((await sessions(dir, env, 'show', 's')).stdout).toBe(`${SECOND}\n`); // the killed run committed nothing
  });
});

describe('without better-sqlite3', () => {
  it('one line says conversations are not saved and how to fix it; --continue refused; nothing created', async () => {
    // The built CLI in a folder whose node_modules holds every package but better-sqlite3.
    const root = tempFolder();
    cpSync(path.join(repoRoot, 'dist'), path.join(root, 'dist'), { recursive: true });
    cpSync(path.join(repoRoot, 'package.json'), path.join(root, 'package.json'));
    mkdirSync(path.join(root, 'node_modules'));
    for (const name of readdirSync(path.join(repoRoot, 'node_modules'))) {
      if (name === 'better-sqlite3') continue;
      symlinkSync(path.join(repoRoot, 'node_modules', name), path.join(root, 'node_modules', name));
    }
    const { dir, data, env } = setup();
    const bin = path.join(root, 'dist/bin/loopctl.js');
    const run = await spawnCli(process.execPath, [bin, 'how many lines in a.txt'], { cwd: dir, env }).done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('(offline model)\na.txt has 3 lines.\n');
    expect(run.stderr.split('\n').filter((l) => l.includes('not saved'))).toEqual([
      '[loopctl] conversations are not saved: better-sqlite3 cannot be loaded ' +
        "(Cannot find package 'better-sqlite3'); install better-sqlite3@12.11.1 to save them, or pass --no-save",
    ]);
    const cont = await spawnCli(process.execPath, [bin, '--continue', 'hi'], { cwd: dir, env }).done;
    expect(cont.code).toBe(1);
    expect(cont.stderr).toBe(
      'loopctl: --continue needs the saved conversations, but better-sqlite3 cannot be loaded: Cannot find package ' +
        "'better-sqlite3'\n",
    );
    expect(existsSync(data)).toBe(false);
  });
});
