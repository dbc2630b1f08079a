/**
 * The CLI's saved conversations, in-process: where the file goes (LOOPCTL_DATA_DIR, XDG_DATA_HOME, ~), its modes,
 * how conversations are named and keyed by the folder's real path, which one --continue / --session / --new pick,
 * the lease that keeps two loopctl processes off one conversation, and how `sessions show` and `list` print what
 * models and files wrote (through the sanitiser). The CLI as a child process: test/services/cli-sessions.test.ts.
 */
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { Item } from '../src/items.js';
import { parseCli, type CliOptions } from '../src/cli/args.js';
import { dataDir, ensureSessionsFile } from '../src/cli/store/data-dir.js';
import { folderKey, nameProblem, newName, sessionId, splitId } from '../src/cli/store/names.js';
import { ConversationBusyError, openConversation } from '../src/cli/store/conversation.js';
import { StoreError } from '../src/cli/store/open-store.js';
import { listTable, safeJsonLine, transcript } from '../src/cli/sessions/transcript.js';
import { SqliteSessionStore } from '../src/sqlite/index.js';
import { tempDirs } from './support/session-stores.js';

const dirs = tempDirs('loopctl-cli-store-');
afterAll(() => dirs.removeAll());

const mode = (file: string) => statSync(file).mode & 0o777;

describe('where the conversations are saved', () => {
  it('LOOPCTL_DATA_DIR, else $XDG_DATA_HOME/loopctl, else $HOME/.local/share/loopctl', () => {
    expect(dataDir({ LOOPCTL_DATA_DIR: '/srv/x/', XDG_DATA_HOME: '/d', HOME: '/h' })).toBe('/srv/x/');
    expect(dataDir({ XDG_DATA_HOME: '/d', HOME: '/h' })).toBe('/d/loopctl');
    expect(dataDir({ LOOPCTL_DATA_DIR: '', XDG_DATA_HOME: '', HOME: '/h' })).toBe('/h/.local/share/loopctl');
    // A relative XDG_DATA_HOME is ignored, as the XDG base directory rules say.
    expect(dataDir({ XDG_DATA_HOME: 'rel', HOME: '/h' })).toBe('/h/.local/share/loopctl');
    expect(dataDir({})).toBe(path.join(homedir(), '.local/share/loopctl'));
  });

  it('a relative LOOPCTL_DATA_DIR is a usage error naming it', () => {
    expect(() => dataDir({ LOOPCTL_DATA_DIR: 'data' })).toThrow(
      'LOOPCTL_DATA_DIR must be an absolute path (got "data")',
    );
  });

  it('creates the folder 0700 (and missing parents) and the file 0600, whatever the umask allowed', () => {
    const dir = path.join(dirs.make(), 'a', 'b', 'loopctl');
    const old = process.umask(0o000);
    try {
      expect(ensureSessionsFile(dir)).toBe(path.join(dir, 'sessions.db'));
    } finally {
      process.umask(old);
    }
    expect([mode(dir), mode(path.join(dir, 'sessions.db'))]).toEqual([0o700, 0o600]);
    expect(statSync(path.join(dir, 'sessions.db')).size).toBe(0);
  });

  it('an existing file is opened as it is: never truncated, its mode kept', () => {
    const dir = dirs.make();
    writeFileSync(path.join(dir, 'sessions.db'), 'not mine to change', { mode: 0o640 });
    ensureSessionsFile(dir);
    expect(readFileSync(path.join(dir, 'sessions.db'), 'utf8')).toBe('not mine to change');
    expect(mode(path.join(dir, 'sessions.db'))).toBe(0o640);
  });
});

describe('conversation names and session ids', () => {
  it('an id is <folder>#<name>; split at the last #, so a folder may hold # and a name may not', () => {
    expect(sessionId('/home/a/pro#ject', 'work')).toBe('/home/a/pro#ject#work');
    expect(splitId('/home/a/pro#ject#work')).toEqual({ folder: '/home/a/pro#ject', name: 'work' });
    expect(splitId('no-hash')).toBeUndefined();
    expect(splitId('/x#')).toBeUndefined();
  });

  it('a folder whose real path would make the id too long is keyed by its SHA-256', () => {
    expect(folderKey('/home/a')).toBe('/home/a');
    const long = `/${'d'.repeat(950)}`;
    expect(folderKey(long)).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(folderKey(long)).toBe(folderKey(long));
  });

  it('names: printable, at most 100 characters, no # or control character', () => {
    expect(nameProblem('fix the login bug')).toBeUndefined();
    expect(nameProblem('ünïcødé-名前')).toBeUndefined();
    expect(nameProblem('a\u202eb')).toBe('holds "#" or a control character');
    expect(nameProblem('a\ud800')).toBe('is not well-formed Unicode');
  });

  it('a new name is the local start time and four hex digits', () => {
    expect(newName(new Date(2025, 0, 31, 14, 25, 3), '9f0c')).toBe('2025-01-31-142503-9f0c');
    expect(newName()).toMatch(/^\d{4}-\d\d-\d\d-\d{6}-[0-9a-f]{4}$/);
  });
});

/** The options of `loopctl [flags] x` run in `cwd`. */
function options(cwd: string, ...flags: string[]): CliOptions {
  const command = parseCli(['--cwd', cwd, ...flags, 'x'], {}, false);
  if (command.kind !== 'run') throw new Error('not a run');
  return command.options;
}

const user = (text: string): Item => ({ type: 'user', id: text, text });

describe('which conversation a command continues', () => {
  /** A data folder, a project folder, and the environment pointing at the data folder. */
  function setup() {
    const data = dirs.make();
    const project = dirs.make();
    return { project, env: { LOOPCTL_DATA_DIR: data }, file: path.join(data, 'sessions.db') };
  }

  it("no flag: a new one each time; --continue: the folder's last; --session: by name; --no-save: memory", async () => {
    const { project, env, file } = setup();
    const first = await openConversation(options(project), env);
    const generated = /^conversation \d{4}-\d\d-\d\d-\d{6}-[0-9a-f]{4} \(new; loopctl --continue resumes it\)$/;
    expect(first.note).toMatch(generated);
    await first.session.append([user('one')], { runId: 'r1' });
    await first.close();

    const again = await openConversation(options(project), env);
    expect(await again.session.load()).toEqual([]);
    await again.close();

    const named = await openConversation(options(project, '--session', 'work'), env);
    expect(named.note).toBe('conversation work (new; loopctl --session work resumes it)');
    await named.session.append([user('w1'), user('w2')], { runId: 'r2' });
    await named.close();

    const cont = await openConversation(options(project, '--continue'), env);
    expect(cont.note).toBe('conversation work (continued: 2 items)'); // the most recently updated one
    expect(await cont.session.load()).toEqual([user('w1'), user('w2')]);
    await cont.close();

    const unsaved = await openConversation(options(project, '--no-save'), env);
    expect(unsaved.note).toBe('conversation not saved (--no-save)');
    await unsaved.session.append([user('gone')], { runId: 'r3' });
    await unsaved.close();

    const store = new SqliteSessionStore(file);
    const infos = await store.list();
    await store.close();
    expect(infos.map((i) => [splitId(i.id)?.folder, i.items])).toEqual([
      [project, 2],
      [project, 1],
    ]);
  });

  it('the folder is keyed by its real path: a symlink to it continues the same conversation', async () => {
    const { project, env } = setup();
    const link = path.join(dirs.make(), 'link');
    symlinkSync(project, link);
    const a = await openConversation(options(project, '--session', 's'), env);
    await a.session.append([user('one')], { runId: 'r1' });
    await a.close();
    const b = await openConversation(options(link, '--continue'), env);
    expect(await b.session.load()).toEqual([user('one')]);
    await b.close();
    const other = await openConversation(options(dirs.make(), '--continue'), env);
    expect(other.note).toMatch(
      /\(new; this folder had no saved conversation to continue; loopctl --continue resumes it\)$/,
    );
    await other.close();
  });

  it('--session NAME --new refuses a name that exists, and changes nothing', async () => {
    const { project, env } = setup();
    const a = await openConversation(options(project, '--session', 's'), env);
    await a.session.append([user('one')], { runId: 'r1' });
    await a.close();
    await expect(openConversation(options(project, '--session', 's', '--new'), env)).rejects.toThrow(
      new StoreError(
        'conversation "s" exists in this folder already: drop --new to continue it, or delete it with ' +
          'loopctl sessions rm s',
      ),
    );
  });

  it('one run per conversation across processes: a second holder is refused until the first lets go', async () => {
    const { project, env } = setup();
    const a = await openConversation(options(project, '--session', 's'), env);
    const b = await openConversation(options(project, '--session', 's'), env); // a second store on the file
    let release!: () => void;
    // SQLite writes the lease row synchronously, inside this call.
    const held = a.hold(
      () => undefined,
      () => new Promise<void>((resolve) => (release = resolve)),
    );
    const refused = await b
      .hold(
        () => undefined,
        async () => 'ran',
      )
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConversationBusyError);
    expect((refused as Error).message).toBe(
      `another loopctl process (pid ${process.pid}) is running on this conversation: wait for it to end, ` +
        'or leave out --continue and --session to start a new one',
    );
    release();
    await held;
    expect(
      await b.hold(
        () => undefined,
        async () => 'ran',
      ),
    ).toBe('ran');
    await a.close();
    await b.close();
  });

  it('the session runs get has no acquire: the CLI holds the lease, the engine never takes a second one', async () => {
    const { project, env } = setup();
    const c = await openConversation(options(project), env);
    // recordCallStart and the run journal pass through to the store (durable across a kill); no acquire.
    expect(Object.keys(c.session).sort()).toEqual([
      'append',
      'discardJournal',
      'journalResponse',
      'journalTurn',
      'load',
      'readJournal',
      'recordCallStart',
    ]);
    await c.close();
  });

  it('a corrupt file is a StoreError naming it, and is left as it was', async () => {
    const { project, env, file } = setup();
    writeFileSync(file, 'these are not conversations\n'.repeat(100));
    const error = await openConversation(options(project), env).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toBe(
      `${file}: not a readable SQLite database; the file is left as it is; move the file away to start afresh, ` +
        'or run with --no-save',
    );
    expect(readFileSync(file, 'utf8')).toBe('these are not conversations\n'.repeat(100));
  });

  it("a sessions.db SQLite cannot open (a folder) is a StoreError naming the file and SQLite's code, its cause kept", async () => {
    const { project, env, file } = setup();
    mkdirSync(file);
    const error = await openConversation(options(project), env).catch((e: unknown) => e);
    console.log(`a folder named sessions.db: ${String(error)}`);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toBe(
      `${file}: the database cannot be opened: unable to open database file (SQLITE_CANTOPEN); run with --no-save`,
    );
    expect((error as Error).cause).toMatchObject({ code: 'SQLITE_CANTOPEN' });
    expect(statSync(file).isDirectory()).toBe(true);
  });

  it('a data folder that cannot be made is a StoreError naming the file, the errno and the culprit', async () => {
    const { project } = setup();
    const blocker = path.join(dirs.make(), 'file');
    writeFileSync(blocker, '');
    const env = { LOOPCTL_DATA_DIR: path.join(blocker, 'data') };
    await expect(openConversation(options(project), env)).rejects.toThrow(
      `cannot create ${path.join(blocker, 'data', 'sessions.db')} for the saved conversations: ` +
        `EEXIST: file already exists, mkdir '${blocker}'`,
    );
  });
});

describe('sessions show and list print stored text through the sanitiser', () => {
  const hostile: Item[] = [
    { type: 'user', id: 'u', text: 'read \x1b[2Jevil.md\nplease' },
    {
      type: 'assistant',
      id: 'a',
      text: '',
      toolCalls: [{ callId: 'c', name: 'read_file', arguments: '{"path":"\u202eevil.md"}' }],
    },
    { type: 'tool_result', callId: 'c', output: `\x1b]0;pwned\x07${'x'.repeat(300)}`, isError: false },
    { type: 'assistant', id: 'b', text: 'It says \x9b31mhi\r\n', toolCalls: [] },
    { type: 'user', id: 'u2', text: 'and now?' },
    { type: 'assistant', id: 'c2', text: 'no', toolCalls: [{ callId: 'd', name: 'write_file', arguments: '{}' }] },
    { type: 'tool_result', callId: 'd', output: 'refused by the user', isError: true },
  ];

  it('tasks, answers, tool calls and clipped results, every control character escaped', () => {
    expect(transcript(hostile)).toBe(
      [
        '> read \\x1b[2Jevil.md',
        '  please',
        '[tool] read_file path: \\u202eevil.md',
        `  = \\x1b]0;pwned\\x07${'x'.repeat(199 - 16)}… (310 characters)`,
        'It says \\x9b31mhi',
        '',
        '> and now?',
        'no',
        '[tool] write_file',
        '  ! refused by the user',
        '',
      ].join('\n'),
    );
    expect(transcript([])).toBe('');
  });

  it('--json: one Item a line, the same JSON once parsed, with DEL, C1 and bidi characters escaped', () => {
    const lines = hostile.map(safeJsonLine);
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual(hostile);
    expect(lines.join('')).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/);
    expect(lines[3]).toBe('{"type":"assistant","id":"b","text":"It says \\u009b31mhi\\r\\n","toolCalls":[]}\n');
  });

  it('list: NAME ITEMS UPDATED, and FOLDER with --all', () => {
    const at = new Date(2025, 0, 31, 14, 25, 3).getTime();
    const info = (id: string, items: number) => ({ id, items, createdAt: at, updatedAt: at });
    const rows = [
      { name: 'work', folder: '/p', info: info('/p#work', 12) },
      { name: '2025-01-31-142503-9f0c', folder: '/q\x1b', info: info('/q\x1b#2025-01-31-142503-9f0c', 4) },
    ];
    expect(listTable(rows, false)).toBe(
      'NAME                    ITEMS  UPDATED\n' +
        'work                       12  2025-01-31 14:25:03\n' +
        '2025-01-31-142503-9f0c      4  2025-01-31 14:25:03\n',
    );
    expect(listTable(rows, true).split('\n')).toEqual([
      'NAME                    ITEMS  UPDATED              FOLDER',
      'work                       12  2025-01-31 14:25:03  /p',
      '2025-01-31-142503-9f0c      4  2025-01-31 14:25:03  /q\\x1b',
      '',
    ]);
  });
});

describe('a Ctrl-C while another process holds the store', () => {
  it("ends the wait for the conversation's lease at once: the (cancelled) run starts without it", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const data = dirs.make();
    const project = dirs.make();
    const conversation = await openConversation(options(project, '--session', 's'), { LOOPCTL_DATA_DIR: data });
    const other = new Database(path.join(data, 'sessions.db'));
    try {
      other.prepare('BEGIN IMMEDIATE').run(); // another loopctl committing: the lease write must wait
      const stop = new AbortController();
      let outcome: unknown = 'waiting';
      const held = conversation.hold(
        () => undefined,
        async () => 'ran',
        stop.signal,
      );
      void held.then((value) => (outcome = value));
      await vi.advanceTimersByTimeAsync(1000); // one second into the store's 5 s wait for the lock
      expect(outcome).toBe('waiting');
      stop.abort('SIGINT');
      await vi.advanceTimersByTimeAsync(0); // no time passes: the wait ends on the abort itself
      expect(outcome).toBe('ran');
      other.prepare('COMMIT').run();
      await vi.advanceTimersByTimeAsync(100); // the abandoned wait gets the lease, and gives it back
      const leases = other.prepare('SELECT count(*) AS n FROM loopctl_leases').get() as { n: number };
      expect(leases.n).toBe(0);
    } finally {
      vi.useRealTimers();
      if (other.inTransaction) other.prepare('ROLLBACK').run();
      other.close();
      await conversation.close();
    }
  });
});
