import { spawn } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TimeoutError } from '../src/errors.js';
import { shellTool, type ShellToolOptions } from '../src/node/index.js';
import { fakeToolContext } from './support/tool-context.js';

let root: string;
const groups: number[] = [];

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'loopctl-sh-'));
});

afterEach(async () => {
  for (const pgid of groups.splice(0)) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
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

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (e) {
    expect((e as NodeJS.ErrnoException).code).toBe('ESRCH');
    return false;
  }
}

/** Polls until `check` holds (generous bound: "it happened", not a timing assertion). */
async function eventually(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await sleep(20);
  }
  return check();
}

/** Members of process group `pgid` per /proc (Linux), zombies excluded. */
async function groupMembers(pgid: number): Promise<number> {
  let n = 0;
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] !== 'Z' && Number(fields[2]) === pgid) n++;
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
    const pidFile = join(root, 'pid');
    const result = run(`echo $$ > pid; sh -c 'sleep 30 & sleep 30'`, controller.signal).then(
      (v) => ({ ok: v }),
      (e: unknown) => ({ error: e }),
    );
    expect(await eventually(() => existsSync(pidFile) && readFileSyncTrim(pidFile) !== '')).toBe(true);
    const pgid = Number(readFileSyncTrim(pidFile));
    groups.push(pgid);
    if (existsSync('/proc')) expect(await eventually(async () => (await groupMembers(pgid)) >= 3)).toBe(true);
    expect(getEventListeners(controller.signal, 'abort').length).toBe(1);

    controller.abort(reason);
    expect(await result).toEqual({ error: reason });
    expect(((await result) as { error: unknown }).error).toBe(reason);
    expect(getEventListeners(controller.signal, 'abort').length).toBe(0);
    expect(await eventually(() => !groupAlive(pgid))).toBe(true);
  });

  it('escalates to SIGKILL when the group ignores SIGTERM', async () => {
    const controller = new AbortController();
    const result = run(`trap '' TERM; echo $$ > pid; sleep 30`, controller.signal, { killGraceMs: 100 }).catch(
      (e: unknown) => e,
    );
    const pidFile = join(root, 'pid');
    expect(await eventually(() => existsSync(pidFile) && readFileSyncTrim(pidFile) !== '')).toBe(true);
    const pgid = Number(readFileSyncTrim(pidFile));
    groups.push(pgid);
    controller.abort('stop');
    expect(await result).toBe('stop');
    expect(await eventually(() => !groupAlive(pgid))).toBe(true);
  });

  it('holds one process "exit" listener only while a group may be alive (none left after a run or a kill)', async () => {
    const before = process.listenerCount('exit');
    const started = async (file: string) => {
      expect(await eventually(() => existsSync(join(root, file)) && readFileSyncTrim(join(root, file)) !== '')).toBe(
        true,
      );
      const pgid = Number(readFileSyncTrim(join(root, file)));
      groups.push(pgid);
      return pgid;
    };
    const a = run('echo $$ > a; sleep 30').catch(() => undefined);
    const b = run('echo $$ > b; sleep 30').catch(() => undefined);
    const [pgidA, pgidB] = [await started('a'), await started('b')];
    expect(process.listenerCount('exit')).toBe(before + 1); // one listener for both groups
    process.kill(-pgidA, 'SIGKILL');
    await a;
    expect(process.listenerCount('exit')).toBe(before + 1); // b is still held
    process.kill(-pgidB, 'SIGKILL');
    await b;
    expect(process.listenerCount('exit')).toBe(before);

    const controller = new AbortController();
    const ignoring = run(`trap '' TERM; echo $$ > c; sleep 30`, controller.signal, { killGraceMs: 100 }).catch(
      (e: unknown) => e,
    );
    const pgidC = await started('c');
    controller.abort('stop');
    expect(await ignoring).toBe('stop');
    expect(await eventually(() => !groupAlive(pgidC))).toBe(true);
    expect(await eventually(() => process.listenerCount('exit') === before)).toBe(true);
  });

  it.each([
    ['exits while the command runs', 'exit'],
    ['aborts the call, then exits within the grace period', 'abort'],
  ])('the group does not outlive the process when it %s (a command that ignores SIGTERM)', async (_, mode) => {
    const script = join(root, 'child.ts');
    await writeFile(
      script,
      `import { existsSync } from 'node:fs';
import { runShell } from ${JSON.stringify(SHELL_TOOL)};
const controller = new AbortController();
runShell("trap '' TERM; echo $$ > pid; sleep 30", {
  cwd: process.argv[2],
  signal: controller.signal,
  killGraceMs: 60_000,
}).catch(() => undefined);
const timer = setInterval(() => {
  if (!existsSync('pid')) return;
  clearInterval(timer);
  if (process.argv[3] === 'abort') controller.abort('stop');
  process.exit(0);
}, 10);
`,
    );
    const child = spawn(process.execPath, ['--import', TSX_LOADER, script, root, mode], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, stderr).toBe(0);
    const pgid = Number(readFileSyncTrim(join(root, 'pid')));
    groups.push(pgid);
    // Killed on the child's 'exit' (the 60 s grace never ran); a zombie may linger until it is reaped.
    expect(
      await eventually(async () => !groupAlive(pgid) || (existsSync('/proc') && (await groupMembers(pgid)) === 0)),
    ).toBe(true);
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
    const error = await run('sleep 30', controller.signal, { timeoutMs: 100 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ kind: 'tool', timeoutMs: 100 });
    expect(getEventListeners(controller.signal, 'abort').length).toBe(0);
  });
});

function readFileSyncTrim(path: string): string {
  return readFileSync(path, 'utf8').trim();
}

const SHELL_TOOL = fileURLToPath(new URL('../src/node/shell-tool.ts', import.meta.url));
/** tsx's loader (`--import` resolves a bare name from the child's folder, a temp one here). */
const TSX_LOADER = new URL('../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
