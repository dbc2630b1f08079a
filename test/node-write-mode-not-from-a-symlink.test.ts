/**
 * A write keeps the mode of the regular file it replaces. When a concurrent
 * process swaps the name for a symlink to a file outside the workspace
 * between the folder check and the write (the race that
 * test/services/cli-confinement-race.test.ts runs), the write still lands
 * inside (the rename replaces the link itself), and it must not take the
 * outside file's mode either (e.g. its setuid bit): the mode is read from
 * the name itself, never through a symlink.
 */
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeInFolder } from '../src/node/atomic-write.js';
import { openForWrite } from '../src/node/confined.js';

let base: string;
let root: string;
let outside: string;

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'loopctl-write-mode-')));
  root = join(base, 'root');
  outside = join(base, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(join(outside, 'tool'), 'OUTSIDE\n');
  chmodSync(join(outside, 'tool'), 0o4750);
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

describe('the mode of a replaced file', () => {
  it('a name swapped for a symlink to an outside file after the check: written inside, with a fresh mode', async () => {
    const { folder, name } = await openForWrite(root, 'w.sh');
    try {
      symlinkSync(join(outside, 'tool'), join(root, 'w.sh')); // the swap, after the folder was checked
      await writeInFolder(folder, name, 'echo hi\n');
    } finally {
      await folder.handle.close();
    }
    const written = lstatSync(join(root, 'w.sh'));
    expect(written.isFile()).toBe(true);
    expect(readFileSync(join(root, 'w.sh'), 'utf8')).toBe('echo hi\n');
    expect(written.mode & 0o7000).toBe(0); // no setuid/setgid taken from the outside file
    expect(written.mode & 0o777).toBe(0o666 & ~process.umask());
    expect(readFileSync(join(outside, 'tool'), 'utf8')).toBe('OUTSIDE\n');
  });

  it('a regular file replaced inside keeps its own mode', async () => {
    writeFileSync(join(root, 'run.sh'), 'old\n');
    chmodSync(join(root, 'run.sh'), 0o750);
    const { folder, name } = await openForWrite(root, 'run.sh');
    try {
      await writeInFolder(folder, name, 'new\n');
    } finally {
      await folder.handle.close();
    }
    expect(lstatSync(join(root, 'run.sh')).mode & 0o7777).toBe(0o750);
  });
});
