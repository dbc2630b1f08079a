/**
 * Confinement (in-process part): the workspace tools check what they opened, not a
 * name. A FIFO or a device never blocks a call, symlinks that stay inside
 * work, a write goes through its folder's descriptor and leaves no temp file
 * (even when the process exits in the middle). The race itself, with a
 * helper swapping names, is in test/services/cli-confinement-race.test.ts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { fsTools, PathOutsideRootError } from '../src/node/index.js';
import type { Tool } from '../src/tools/tool.js';
import { bundledScript } from './support/bundle-script.js';
import { repoRoot } from './support/openai-server.js';
import { fakeToolContext } from './support/tool-context.js';

let base: string;
let root: string;
let outside: string;

async function call(name: string, args: unknown, signal?: AbortSignal): Promise<unknown> {
  const t = (fsTools(root) as Tool[]).find((x) => x.name === name)!;
  return await t.execute((t.parameters as z.ZodType).parse(args), fakeToolContext(signal));
}

/** Every entry under `dir`, recursively, relative. */
function tree(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'loopctl-confine-')));
  root = join(base, 'root');
  outside = join(base, 'outside');
  mkdirSync(join(root, 'd'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(root, 'inside.txt'), 'inside\n');
  writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE\n');
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

describe('reads are checked on the descriptor', () => {
  it('a FIFO is refused at once (opened without blocking), by read_file and by search_files', async () => {
    execFileSync('mkfifo', [join(root, 'pipe')]);
    const refusal = '"pipe" is not a regular file (it is a FIFO); only regular files can be read';
    await expect(call('read_file', { path: 'pipe' })).rejects.toThrow(refusal);
    await expect(call('search_files', { pattern: 'x', path: 'pipe' })).rejects.toThrow(refusal);
    // the walk passes the FIFO by
    expect(await call('search_files', { pattern: 'inside' })).toBe('inside.txt:1: inside');
  });

  it('a symlink to a device is refused as outside; one to a file inside works', async () => {
    symlinkSync('/dev/zero', join(root, 'zero'));
    symlinkSync(join(root, 'inside.txt'), join(root, 'd', 'link.txt'));
    await expect(call('read_file', { path: 'zero' })).rejects.toBeInstanceOf(PathOutsideRootError);
    expect(await call('read_file', { path: 'd/link.txt' })).toBe('inside\n');
  });
});

describe('writes go through the folder descriptor', () => {
  it('missing folders created inside; a symlinked folder leading outside refused, nothing left', async () => {
    symlinkSync(outside, join(root, 'out'));
    expect(await call('write_file', { path: 'new/sub/w.txt', content: 'one' })).toBe('wrote 3 bytes to new/sub/w.txt');
    expect(readFileSync(join(root, 'new/sub/w.txt'), 'utf8')).toBe('one');
    for (const path of ['out/w.txt', 'out/sub/w.txt']) {
      await expect(call('write_file', { path, content: 'pwned' }), path).rejects.toBeInstanceOf(PathOutsideRootError);
    }
    expect(tree(outside)).toEqual(['secret.txt']);
    expect(tree(root).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('a write through a symlink inside replaces its target; one to a file outside is refused', async () => {
    symlinkSync('../inside.txt', join(root, 'd', 'alias.txt'));
    symlinkSync(join(outside, 'secret.txt'), join(root, 'd', 'secret.txt'));
    expect(await call('write_file', { path: 'd/alias.txt', content: 'new' })).toBe('wrote 3 bytes to d/alias.txt');
    expect(readFileSync(join(root, 'inside.txt'), 'utf8')).toBe('new');
    expect(readFileSync(join(root, 'd', 'alias.txt'), 'utf8')).toBe('new');
    const write = call('write_file', { path: 'd/secret.txt', content: 'pwned' });
    await expect(write).rejects.toBeInstanceOf(PathOutsideRootError);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('OUTSIDE\n');
  });

  it('a temp file being written is removed when the process exits, or dies by a re-raised signal', async () => {
    // Registered before it exists (as writeInFolder does), then the process ends in the middle of the write.
    const script = join(root, 'ending.ts');
    const module = JSON.stringify(join(repoRoot, 'src/node/temp-files.ts'));
    writeFileSync(
      script,
      [
        `import { writeFileSync } from 'node:fs';`,
        `import { holdTempFile, removeTempFilesSync } from ${module};`,
        `const [tmp, ending] = process.argv.slice(2);`,
        `holdTempFile(tmp);`,
        `writeFileSync(tmp, 'half');`,
        `if (ending === 'exit') process.exit(3);`,
        `removeTempFilesSync();`,
        `process.kill(process.pid, 'SIGINT');`,
      ].join('\n'),
    );
    const bundle = await bundledScript(script);
    const run = (ending: string) => {
      const tmp = join(root, 'd', `.w.txt.${ending}.tmp`);
      const child = spawnSync(process.execPath, [bundle, tmp, ending], { cwd: repoRoot, encoding: 'utf8' });
      return { status: child.status, signal: child.signal, stderr: child.stderr, left: existsSync(tmp) };
    };
    expect(run('exit')).toEqual({ status: 3, signal: null, stderr: '', left: false });
    expect(run('signal')).toEqual({ status: null, signal: 'SIGINT', stderr: '', left: false });
    expect(readdirSync(join(root, 'd'))).toEqual([]);
  });
});

describe('truthful caps and skips', () => {
  it('read_file of a large file states its true line count, counted by streaming it', async () => {
    writeFileSync(join(root, 'big.txt'), 'line\n'.repeat(300_000)); // 1.5 MB: over the 256 KiB read cap
    const text = (await call('read_file', { path: 'big.txt' })) as string;
    expect(text.split('\n').at(-1)).toBe(
      '[truncated at 262144 bytes: showing lines 1-52428 of 300000; pass startLine=52429 to read on]',
    );
  });

  it('search_files reports the files it skipped and why', async () => {
    writeFileSync(join(root, 'huge.log'), `needle\n${'x'.repeat(4 * 1024 * 1024)}`);
    writeFileSync(join(root, 'huge2.log'), `needle\n${'y'.repeat(4 * 1024 * 1024)}`);
    writeFileSync(join(root, 'blob.bin'), Buffer.from([110, 101, 101, 100, 108, 101, 0]));
    writeFileSync(join(root, 'small.txt'), 'a needle here\n');
    expect(await call('search_files', { pattern: 'needle' })).toBe(
      'small.txt:1: a needle here\n[skipped: 2 files over 4 MB, 1 binary file]',
    );
    expect(existsSync(join(root, 'huge.log'))).toBe(true);
  });
});
