/**
 * An output that fails for another reason than a closed reader: stdout on a full disk (`/dev/full`, every write
 * fails with ENOSPC). The answer is lost, so the command must say so and fail: one `loopctl:` line on stderr naming
 * stdout and the cause, exit 1 — not the quiet exit 141 of `| head -1`, which tells a script that its reader
 * went away on purpose. A closed pipe (EPIPE) stays quiet with 141 (test/cli-offline.test.ts).
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliEnv, ensureBuilt, removeTempFolders, tempFolder } from './cli-helpers.js';

beforeAll(() => ensureBuilt(), 180_000);
afterAll(removeTempFolders);

/** Runs the bin with `fd` as its stdout; resolves with its exit code and stderr. */
async function withStdout(fd: number, args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: tempFolder({ 'a.md': 'one\ntwo\n' }),
    env: cliEnv(),
    stdio: ['ignore', fd, 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  return { code, stderr };
}

describe('stdout that cannot be written (a full disk)', () => {
  it.each([
    ['the answer', ['--no-save', 'how many lines in a.md']],
    ['the events of --json', ['--no-save', '--json', 'how many lines in a.md']],
  ])('%s: one loopctl: line naming stdout and ENOSPC, exit 1, no stack trace', async (_what, args) => {
    const full = openSync('/dev/full', 'w');
    try {
      const { code, stderr } = await withStdout(full, args);
      const lines = stderr.split('\n').filter((line) => line.startsWith('loopctl:'));
      console.log(`exit ${code}; ${lines.join(' | ')}`);
      expect(code).toBe(1);
      expect(lines).toEqual([
        'loopctl: cannot write to stdout: ENOSPC: no space left on device, write; what was not written is lost',
      ]);
      expect(stderr).not.toMatch(/Unhandled|\n\s+at /);
    } finally {
      closeSync(full);
    }
  });
});
