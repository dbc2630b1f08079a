import { spawn } from 'node:child_process';
import { checkDurationMs } from '../duration.js';
import { z } from 'zod';
import { TimeoutError } from '../errors.js';
import { tool, type Tool } from '../tools/tool.js';

/** Options of {@link shellTool} and {@link runShell}. */
export interface ShellToolOptions {
  /**
   * The command's own deadline in ms (default 120 000): on expiry its process group is killed and the call rejects with
   * a `TimeoutError` (kind `tool`).
   */
  readonly timeoutMs?: number;
  /** Most bytes of output kept (default 64 KiB); the rest is dropped, with a note. */
  readonly maxOutputBytes?: number;
  /** Ms between SIGTERM and SIGKILL when the group is killed (default 2000). */
  readonly killGraceMs?: number;
}

/**
 * The `run_shell { command }` tool: runs `/bin/sh -c command` in `root` and
 * resolves with `exit code N\n<output>` (see {@link runShell}).
 *
 * NOT sandboxed: the command runs with this process's user, environment and
 * permissions and can read or change anything they can, inside `root` or
 * not. Give it only to agents you would let type in your terminal.
 *
 * @throws {ConfigurationError} naming `options.timeoutMs` or `options.killGraceMs` for a duration that is not
 *   a number of ms up to 2³¹−1 (`MAX_DURATION_MS`).
 */
export function shellTool(root: string, options: ShellToolOptions = {}): Tool<{ command: string }, string> {
  if (options.timeoutMs !== undefined) checkDurationMs(options.timeoutMs, 'options.timeoutMs', { min: 1 });
  if (options.killGraceMs !== undefined) checkDurationMs(options.killGraceMs, 'options.killGraceMs');
  return tool({
    name: 'run_shell',
    description:
      'Run a shell command (/bin/sh -c) in the workspace folder. ' +
      'Returns "exit code N" then the combined stdout and stderr. ' +
      'stdin is closed; the command is killed if it runs too long.',
    parameters: z.object({ command: z.string().min(1).describe('The shell command line') }),
    execute: ({ command }, ctx) => runShell(command, { ...options, cwd: root, signal: ctx.signal }),
  });
}

/**
 * Runs `/bin/sh -c command` with `cwd`, in its own process group
 * (`detached`), stdin ignored, stdout and stderr collected together in arrival
 * order (at most `maxOutputBytes`). Resolves when the shell exited and its
 * output streams closed, with `exit code N\n<output>` (or
 * `killed by signal SIG\n<output>`). Background processes that closed their
 * output are left running, as in a terminal.
 *
 * When `signal` aborts (or the deadline expires) the whole process group gets
 * SIGTERM, then SIGKILL after `killGraceMs` if any member is still alive, and
 * the promise rejects at once with `signal.reason` (or a `TimeoutError`); the
 * processes' exit is not awaited. An already-aborted signal rejects without
 * spawning. No listener is left on `signal` once the promise settles.
 * Rejects with the spawn error if the shell cannot be started (e.g. `cwd` is
 * missing). Not sandboxed (see {@link shellTool}).
 *
 * The group cannot outlive this process: while the shell runs, and while a
 * kill is in its grace period, this process's 'exit' SIGKILLs the group
 * synchronously (a CLI that exits right after Ctrl-C would otherwise leave a
 * command that ignores SIGTERM running, since the grace timer dies with the
 * process). The 'exit' listener is removed when no group needs it. Only a
 * death the process cannot see (SIGKILL of Node itself) escapes this.
 */
export function runShell(
  command: string,
  options: ShellToolOptions & { cwd: string; signal?: AbortSignal },
): Promise<string> {
  const { cwd, signal } = options;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const maxBytes = options.maxOutputBytes ?? 64 * 1024;
  const graceMs = options.killGraceMs ?? 2000;
  return new Promise<string>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const child = spawn('/bin/sh', ['-c', command], { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    // Until the shell exits, our own exit kills its group (background jobs it leaves behind are not ours to kill).
    const release = child.pid === undefined ? () => undefined : killGroupOnExit(child.pid);
    child.once('exit', release);
    const chunks: Buffer[] = [];
    let kept = 0;
    let dropped = 0;
    let settled = false;
    const collect = (chunk: Buffer): void => {
      const take = Math.min(Math.max(maxBytes - kept, 0), chunk.length);
      if (take > 0) chunks.push(chunk.subarray(0, take));
      kept += take;
      dropped += chunk.length - take;
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);

    const settle = (finish: () => void): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      clearTimeout(timer);
      finish();
    };
    const stop = (reason: unknown): void => {
      if (settled) return;
      killGroup(child.pid, graceMs);
      child.stdout.destroy();
      child.stderr.destroy();
      settle(() => reject(reason));
    };
    const onAbort = (): void => stop(signal?.reason);
    const timer = setTimeout(
      () => stop(new TimeoutError('tool', timeoutMs, `the command was killed after ${timeoutMs} ms`)),
      timeoutMs,
    );
    signal?.addEventListener('abort', onAbort, { once: true });

    child.on('error', (error) => {
      release();
      settle(() => reject(error));
    });
    child.on('close', (code, sig) => {
      const head = code === null ? `killed by signal ${sig}` : `exit code ${code}`;
      const note = dropped > 0 ? `\n[output truncated: ${dropped} more bytes not shown]` : '';
      settle(() => resolve(`${head}\n${Buffer.concat(chunks).toString('utf8')}${note}`));
    });
  });
}

/**
 * Sends SIGTERM to the process group `pid` (a detached child leads its own
 * group), then SIGKILL after `graceMs` ms if any member is still alive. The
 * grace timer is unref'd (it never keeps Node alive); should the process exit
 * before it fires, the group is SIGKILLed on 'exit' instead (see
 * {@link killGroupOnExit}). A group already gone is ignored.
 */
export function killGroup(pid: number | undefined, graceMs: number): void {
  if (pid === undefined) return;
  if (!signalGroup(pid, 'SIGTERM')) return;
  const release = killGroupOnExit(pid);
  setTimeout(() => {
    if (signalGroup(pid, 0)) signalGroup(pid, 'SIGKILL');
    release();
  }, graceMs).unref();
}

/** Process groups to SIGKILL when this process exits, with how many holders each has. */
const doomed = new Map<number, number>();

function killDoomedGroups(): void {
  for (const pgid of doomed.keys()) signalGroup(pgid, 'SIGKILL');
}

/**
 * Makes the process group `pgid` die with this process: on process 'exit'
 * (`process.exit`, the end of the event loop, an uncaught exception) it gets
 * SIGKILL, synchronously. Returns the idempotent release. One 'exit' listener
 * serves all held groups and is removed when the last one is released.
 */
function killGroupOnExit(pgid: number): () => void {
  if (doomed.size === 0) process.on('exit', killDoomedGroups);
  doomed.set(pgid, (doomed.get(pgid) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const holders = (doomed.get(pgid) ?? 1) - 1;
    if (holders > 0) doomed.set(pgid, holders);
    else doomed.delete(pgid);
    if (doomed.size === 0) process.off('exit', killDoomedGroups);
  };
}

/** @returns false when the group no longer exists (ESRCH). */
function signalGroup(pid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, sig);
    return true;
  } catch {
    return false;
  }
}
