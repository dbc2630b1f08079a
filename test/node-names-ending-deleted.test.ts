/**
 * The workspace tools read the real path of what they opened from
 * `/proc/self/fd/N`, where Linux appends " (deleted)" to a removed file's
 * path. A file or folder whose own name ends with " (deleted)" is a live
 * entry like any other: it is read, listed, searched and written into, and
 * nothing under it is silently left out of a listing.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { fsTools } from '../src/node/index.js';
import type { Tool } from '../src/tools/tool.js';
import { fakeToolContext } from './support/tool-context.js';

let root: string;

async function call(name: string, args: unknown): Promise<unknown> {
  const t = (fsTools(root) as Tool[]).find((x) => x.name === name)!;
  return await t.execute((t.parameters as z.ZodType).parse(args), fakeToolContext());
}

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'loopctl-deleted-names-')));
  writeFileSync(join(root, 'notes (deleted)'), 'one\ntwo\n');
  mkdirSync(join(root, 'old (deleted)'));
  writeFileSync(join(root, 'old (deleted)', 'f.md'), 'TODO here\n');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('names that end with " (deleted)"', () => {
  it('a file so named is read', async () => {
    expect(await call('read_file', { path: 'notes (deleted)' })).toBe('one\ntwo\n');
  });

  it('a folder so named is listed, entered by a recursive listing and by a search', async () => {
    expect(await call('list_dir', { path: 'old (deleted)' })).toBe('f.md');
    expect(await call('list_dir', { recursive: true })).toBe('notes (deleted)\nold (deleted)/\nold (deleted)/f.md');
    expect(await call('search_files', { pattern: 'TODO' })).toBe('old (deleted)/f.md:1: TODO here');
  });

  it('a file is written into a folder so named', async () => {
    expect(await call('write_file', { path: 'old (deleted)/new.md', content: 'x\n' })).toBe(
      'wrote 2 bytes to old (deleted)/new.md',
    );
    expect(readFileSync(join(root, 'old (deleted)', 'new.md'), 'utf8')).toBe('x\n');
  });
});
