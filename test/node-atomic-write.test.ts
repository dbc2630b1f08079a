import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { atomicWriteFile } from '../src/node/index.js';

let dir: string;
let target: string;
const OLD = 'a'.repeat(1024);
const NEW = 'b'.repeat(4 * 1024 * 1024);

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'loopctl-aw-'));
  target = join(dir, 'file.txt');
  await writeFile(target, OLD);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('atomicWriteFile', () => {
  it('replaces the content and leaves no temp file', async () => {
    await atomicWriteFile(target, 'new content');
    expect(await readFile(target, 'utf8')).toBe('new content');
    await atomicWriteFile(join(dir, 'bytes.bin'), new Uint8Array([1, 2, 3]));
    expect([...(await readFile(join(dir, 'bytes.bin')))]).toEqual([1, 2, 3]);
    expect((await readdir(dir)).sort()).toEqual(['bytes.bin', 'file.txt']);
  });

  it('readers see either the old or the new content, never a mix', async () => {
    let done = false;
    const write = atomicWriteFile(target, NEW).then(() => {
      done = true;
    });
    const seen = new Set<string>();
    while (!done) {
      const content = await readFile(target, 'utf8');
      seen.add(content === OLD ? 'old' : content === NEW ? 'new' : `torn (${content.length} bytes)`);
    }
    await write;
    expect([...seen].filter((s) => s !== 'old' && s !== 'new')).toEqual([]);
    expect(await readFile(target, 'utf8')).toBe(NEW);
    expect(await readdir(dir)).toEqual(['file.txt']);
  });

  it('an already-aborted signal rejects with its reason and touches nothing', async () => {
    const controller = new AbortController();
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(atomicWriteFile(target, NEW, { signal: controller.signal })).rejects.toBe(reason);
    expect(await readFile(target, 'utf8')).toBe(OLD);
    expect(await readdir(dir)).toEqual(['file.txt']);
  });

  it('an abort at any point leaves the old content (or the whole new one) and no temp file', async () => {
    let aborted = 0;
    for (let ticks = 0; ticks < 40; ticks++) {
      await writeFile(target, OLD);
      const controller = new AbortController();
      const reason = new Error(`stop after ${ticks} ticks`);
      const write = atomicWriteFile(target, NEW, { signal: controller.signal }).then(
        () => 'written',
        (e: unknown) => {
          expect(e).toBe(reason);
          return 'aborted';
        },
      );
      for (let i = 0; i < ticks; i++) await tick();
      controller.abort(reason);
      const outcome = await write;
      if (outcome === 'aborted') aborted++;
      expect(await readFile(target, 'utf8')).toBe(outcome === 'aborted' ? OLD : NEW);
      expect(await readdir(dir)).toEqual(['file.txt']);
    }
    expect(aborted).toBeGreaterThan(0);
  });

  it('a failed rename removes the temp file', async () => {
    const sub = join(dir, 'sub');
    await mkdir(sub);
    await writeFile(join(sub, 'inner.txt'), 'x');
    await expect(atomicWriteFile(sub, 'data')).rejects.toThrow();
    expect((await readdir(dir)).sort()).toEqual(['file.txt', 'sub']);
    await expect(atomicWriteFile(join(dir, 'missing', 'f.txt'), 'data')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('keeps the mode of an existing file, or applies the given one', async () => {
    await chmod(target, 0o600);
    await atomicWriteFile(target, 'x');
    expect((await stat(target)).mode & 0o777).toBe(0o600);
    await atomicWriteFile(join(dir, 'new.sh'), 'y', { mode: 0o700 });
    expect((await stat(join(dir, 'new.sh'))).mode & 0o700).toBe(0o700);
  });

  it('follows a symlink at the path (the link stays, its target is replaced)', async () => {
    const link = join(dir, 'link.txt');
    await symlink(target, link);
    await atomicWriteFile(link, 'via link');
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readFile(target, 'utf8')).toBe('via link');
  });
});
