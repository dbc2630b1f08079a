import { execFileSync, spawn } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { closeSync, constants, existsSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TimeoutError } from '../src/errors.js';
import { shellTool, type ShellToolOptions } from '../src/node/index.js';
import { bundledScript } from './support/bundle-script.js';
import { fakeToolContext } from './support/tool-context.js';

let root: string;
const groups: number[] = [];
/** Named pipes a test made: one a command never opened is opened here, so its reader's blocked open returns. */
const pipes: string[] = [];

/** This process's 'exit' listeners before any shell ran: the tool holds one more only while a group may be alive. */
let exitListenersBefore: number;
beforeAll(() => {
  exitListenersBefore = process.listenerCount('exit');
});

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'loopctl-sh-'));
  held = written('held');
});

afterEach(async () => {
  for (const file of pipes.splice(0)) {
    try {
      closeSync(openSync(file, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {
      // ENXIO: no reader waits on it (it was read)
    }
  }
  for (const pgid of groups.splice(0)) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  // Every hold released (the shell's 'exit' event seen) before the next test counts the listeners.
  await exitListeners(exitListenersBefore);
  await rm(root, { recursive: true, force: true });
});

const ctx = fakeToolContext;

async function run(
  command: string,
  signal = new AbortController().signal,
  options?: ShellToolOptions,
): Promise<unknown> {
  const t = shellTool(root, options);
  return await t.execute((t.parameters as any).parse({ command }), ctx(signal));
}

/**
 * The text the command under test writes into the named pipe `root/name` (read until the writer closes it). A
 * command writes `$$` there once it runs (`echo $$ > pid`): the test waits on that write, never on a clock. The
 * pipe is made before the command starts; its writer blocks until the test reads.
 */
function written(name: string): Promise<string> {
  const file = join(root, name);
  execFileSync('mkfifo', [file]);
  pipes.push(file);
  return readFile(file, 'utf8').then((text) => text.trim());
}

/** {@link written}: the pid the command wrote, which is its process group (the tool starts the shell detached). */
async function groupOf(name: string): Promise<number> {
  const pgid = Number(await written(name));
  expect(pgid).toBeGreaterThan(1);
  groups.push(pgid);
  return pgid;
}

/**
 * Resolves when every process the command under test started has exited, which no event of this process tells
 * (the group's members are not its children). The command's first step opens the named pipe `root/held` for
 * writing (`exec 3> held`); every process it starts inherits that descriptor, and this read of the pipe ends
 * (end of file) when the last of them is gone: an exit, never a clock (a zombie holds no descriptor).
 */
async function allExited(): Promise<void> {
  await held;
}
let held: Promise<string>;

/** The group's members once {@link allExited}: none (zombies left out), where /proc says so. */
async function groupGone(pgid: number): Promise<void> {
  await allExited();
  if (existsSync('/proc')) expect(await groupMembers(pgid)).toBe(0);
}

/** Resolves on the 'removeListener' event that leaves this process with `count` 'exit' listeners (or at once). */
function exitListeners(count: number): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (process.listenerCount('exit') !== count) return;
      process.off('removeListener', check);
      resolve();
    };
    process.on('removeListener', check);
    check();
  });
}

/**
 * Members of process group `pgid` per /proc (Linux) that are alive: not zombies and not exiting. A process that is
 * exiting has closed its descriptors (which is what ended {@link allExited}'s read) a moment before the kernel makes
 * it a zombie; in that moment /proc lists it with its old state but no descriptors, so a member counts only while it
 * still holds one (every command here keeps at least stdin, stdout and stderr while it runs).
 */
async function groupMembers(pgid: number): Promise<number> {
  let n = 0;
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || Number(fields[2]) !== pgid) continue;
    const descriptors = await readdir(`/proc/${name}/fd`).catch(() => []);
    if (descriptors.length > 0) n++;
  }
  return n;
}

describe('run_shell', () => {
  it('resolves with the exit code and the output', async () => {
    expect(await run('echo hi')).toBe('exit code 0\nhi\n');
    expect(await run('echo oops >&2; exit 3')).toBe('exit code 3\noops\n');
    await writeFile(join(root, 'marker.txt'), 'in root\n');
    expect(await run('cat marker.txt')).toBe('exit code 0\nin root\n');
    expect(await run('cat < /dev/stdin; echo done')).toBe('exit code 0\ndone\n');
  });

  it('caps the output with a note', async () => {
    expect(await run('printf abcdefghij', undefined, { maxOutputBytes: 4 })).toBe(
      'exit code 0\nabcd\n[output truncated: 6 more bytes not shown]',
    );
  });

  it('leaves no abort listener after a normal completion', async () => {
    const controller = new AbortController();
    await run('true', controller.signal);
    expect(getEventListeners(controller.signal, 'abort').length).toBe(0);
  });

  it('on abort kills the whole process group, rejects with the reason and leaves no listener', async () => {
    const controller = new AbortController();
    const reason = { type: 'user', text: 'stop' };
    const pid = groupOf('pid');
    const background = written('background');
    // The shell, a second shell and its background sleep (which has written its pid when `background` is read).
    const result = run(
      `exec 3> held; echo $$ > pid; sh -c 'sleep 30 & echo $! > background; sleep 30'`,
      controller.signal,
      { killGraceMs: 100 }, // the tool's hold on the 'exit' listener ends with this timer; afterEach waits for it
    ).then(
      (v) => ({ ok: v }),
      (e: unknown) => ({ error: e }),
    );
    const pgid = await pid;
    expect(Number(await background)).toBeGreaterThan(1);
    if (existsSync('/proc')) expect(await groupMembers(pgid)).toBeGreaterThanOrEqual(3);
    expect(getEventListeners(controller.signal, 'abort').length).toBe(1);

    controller.abort(reason);
    expect(await result).toEqual({ error: reason });
    expect(((await result) as { error: unknown }).error).toBe(reason);
    expect(getEventListeners(controller.signal, 'abort').length).toBe(0);
    await groupGone(pgid);
  });

  it('escalates to SIGKILL when the group ignores SIGTERM', async () => {
    const controller = new AbortController();
    const pid = groupOf('pid');
    const result = run(`trap '' TERM; exec 3> held; echo $$ > pid; sleep 30`, controller.signal, {
      killGraceMs: 100,
    }).catch((e: unknown) => e);
    const pgid = await pid;
    controller.abort('stop');
    expect(await result).toBe('stop');
    await groupGone(pgid);
  });

  it('holds one process "exit" listener only while a group may be alive (none left after a run or a kill)', async () => {
    const before = process.listenerCount('exit');
    const [startedA, startedB] = [groupOf('a'), groupOf('b')];
    const a = run('echo $$ > a; sleep 30').catch(() => undefined);
    const b = run('echo $$ > b; sleep 30').catch(() => undefined);
    const [pgidA, pgidB] = [await startedA, await startedB];
    expect(process.listenerCount('exit')).toBe(before + 1); // one listener for both groups
    process.kill(-pgidA, 'SIGKILL');
    await a;
    expect(process.listenerCount('exit')).toBe(before + 1); // b is still held
    process.kill(-pgidB, 'SIGKILL');
    await b;
    expect(process.listenerCount('exit')).toBe(before);

    const controller = new AbortController();
    const startedC = groupOf('c');
    const ignoring = run(`trap '' TERM; exec 3> held; echo $$ > c; sleep 30`, controller.signal, {
      killGraceMs: 100,
    }).catch((e: unknown) => e);
    const pgidC = await startedC;
    controller.abort('stop');
    expect(await ignoring).toBe('stop');
    await groupGone(pgidC);
    // The abort rejected at once; the kill's hold on the listener ends when its 100 ms grace timer fires.
    await exitListeners(before);
  });

  it.each([
    ['exits while the command runs', 'exit'],
    ['aborts the call, then exits within the grace period', 'abort'],
  ])('the group does not outlive the process when it %s (a command that ignores SIGTERM)', async (_, mode) => {
    const script = join(root, 'child.ts');
    execFileSync('mkfifo', [join(root, 'pid')]);
    await writeFile(
      script,
      `import { readFileSync, writeFileSync } from 'node:fs';
import { runShell } from ${JSON.stringify(SHELL_TOOL)};
const controller = new AbortController();
runShell("trap '' TERM; exec 3> held; echo $$ > pid; sleep 30", {
  cwd: process.argv[2],
  signal: controller.signal,
  killGraceMs: 60_000,
}).catch(() => undefined);
// 'pid' is a named pipe: this read returns once the shell has run its trap and written its pid.
writeFileSync('pid.txt', readFileSync('pid', 'utf8'));
if (process.argv[3] === 'abort') controller.abort('stop');
process.exit(0);
`,
    );
    const child = spawn(process.execPath, [await bundledScript(script), root, mode], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, stderr).toBe(0);
    const pgid = Number(readFileSyncTrim(join(root, 'pid.txt')));
    expect(pgid).toBeGreaterThan(1);
    groups.push(pgid);
    // Killed on the child's 'exit' (the 60 s grace never ran).
    await groupGone(pgid);
  });

  it('an already-aborted signal rejects without running anything', async () => {
    const controller = new AbortController();
    controller.abort('early');
    await expect(run('echo ran > ran.txt', controller.signal)).rejects.toBe('early');
    expect(existsSync(join(root, 'ran.txt'))).toBe(false);
    expect(getEventListeners(controller.signal, 'abort').length).toBe(0);
  });

  it('kills the group and rejects with a TimeoutError after timeoutMs', async () => {
    const controller = new AbortController();
    const error = await run('sleep 30', controller.signal, { timeoutMs: 100, killGraceMs: 100 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ kind: 'tool', timeoutMs: 100 });
    expect(getEventListeners(controller.signal, 'abort').length).toBe(0);
  });
});

function readFileSyncTrim(path: string): string {
  return readFileSync(path, 'utf8').trim();
}

const SHELL_TOOL = fileURLToPath(new URL('../src/node/shell-tool.ts', import.meta.url));
