import { mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { fsTools, PathOutsideRootError, resolveInside } from '../src/node/index.js';
import type { Tool } from '../src/tools/tool.js';
import { fakeToolContext } from './support/tool-context.js';

let base: string;
let root: string;
let outside: string;

const ctx = fakeToolContext;

async function call(tools: Tool[], name: string, args: unknown, signal?: AbortSignal): Promise<unknown> {
  const t = tools.find((x) => x.name === name);
  if (!t) throw new Error(`no tool ${name}`);
  const parsed = (t.parameters as z.ZodType).parse(args);
  return await t.execute(parsed, ctx(signal));
}

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'loopctl-fs-'));
  root = join(base, 'root');
  outside = join(base, 'outside');
  const files: Record<string, string | Buffer> = {
    'a.txt': 'one\ntwo\nthree\n',
    'src/main.ts': 'const x = 1;\n// TODO: fix\nexport {};\n',
    'src/util.ts': '// helper\nexport const y = 2; // TODO later\nconst z = f(y;\n',
    'src/deep/notes.md': '# Notes\nTODO: write\n',
    'docs/readme.md': 'hello\n',
    'node_modules/pkg/index.js': '// TODO in deps\n',
    '.git/config': 'TODO\n',
    'bin.dat': Buffer.from([104, 105, 0, 1, 2]),
  };
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(join(root, rel, '..'), { recursive: true });
    await writeFile(join(root, rel), content);
  }
  await mkdir(outside);
  await writeFile(join(outside, 'secret.txt'), 'TODO secret\n');
  await symlink(outside, join(root, 'escape'));
  await symlink(join(outside, 'secret.txt'), join(root, 'escape-file'));
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('list_dir', () => {
  it('lists one folder, sorted, folders suffixed with /, symlinks not followed', async () => {
    expect(await call(fsTools(root), 'list_dir', {})).toBe(
      ['.git/', 'a.txt', 'bin.dat', 'docs/', 'escape', 'escape-file', 'node_modules/', 'src/'].join('\n'),
    );
    expect(await call(fsTools(root), 'list_dir', { path: 'src' })).toBe('deep/\nmain.ts\nutil.ts');
  });

  it('lists recursively, skipping node_modules and .git and saying so', async () => {
    expect(await call(fsTools(root), 'list_dir', { recursive: true })).toBe(
      [
        'a.txt',
        'bin.dat',
        'docs/',
        'docs/readme.md',
        'escape',
        'escape-file',
        'src/',
        'src/deep/',
        'src/deep/notes.md',
        'src/main.ts',
        'src/util.ts',
        '[skipped folders: .git, node_modules]',
      ].join('\n'),
    );
  });

  it('filters with a glob pattern', async () => {
    const tools = fsTools(root);
    expect(await call(tools, 'list_dir', { recursive: true, pattern: '*.ts' })).toBe(
      'src/main.ts\nsrc/util.ts\n[skipped folders: .git, node_modules]',
    );
    expect(await call(tools, 'list_dir', { path: 'src', recursive: true, pattern: '**/*.md' })).toBe('deep/notes.md');
    expect(await call(tools, 'list_dir', { path: 'src', recursive: true, pattern: '*.{md,txt}' })).toBe(
      'deep/notes.md',
    );
    expect(await call(tools, 'list_dir', { pattern: '*.rs' })).toBe('(no entries match "*.rs")');
  });

  it('caps at maxResults with a note giving the true total', async () => {
    expect(await call(fsTools(root, { maxResults: 3 }), 'list_dir', { recursive: true })).toBe(
      'a.txt\nbin.dat\ndocs/\n[showing 3 of 11 entries (8 files, 3 folders); narrow the path or pattern]\n' +
        '[skipped folders: .git, node_modules]',
    );
  });
});

describe('read_file', () => {
  it('reads a whole file and line ranges', async () => {
    const tools = fsTools(root);
    expect(await call(tools, 'read_file', { path: 'a.txt' })).toBe('one\ntwo\nthree\n');
    expect(await call(tools, 'read_file', { path: 'a.txt', startLine: 2, endLine: 2 })).toBe('two\n');
    expect(await call(tools, 'read_file', { path: 'a.txt', startLine: 3 })).toBe('three\n');
    expect(await call(tools, 'read_file', { path: 'a.txt', endLine: 1 })).toBe('one\n');
    expect(await call(tools, 'read_file', { path: 'a.txt', startLine: 5 })).toBe(
      '(no lines in range: the file has 3 lines)',
    );
    await expect(call(tools, 'read_file', { path: 'a.txt', startLine: 3, endLine: 2 })).rejects.toThrow(
      'endLine (2) is before startLine (3)',
    );
  });

  it('truncates at maxReadBytes after a whole line, with a note giving the true line count', async () => {
    expect(await call(fsTools(root, { maxReadBytes: 9 }), 'read_file', { path: 'a.txt' })).toBe(
      'one\ntwo\n[truncated at 9 bytes: showing lines 1-2 of 3; pass startLine=3 to read on]',
    );
    await writeFile(join(root, 'long.txt'), 'abcdefghij');
    expect(await call(fsTools(root, { maxReadBytes: 4 }), 'read_file', { path: 'long.txt' })).toBe(
      'abcd\n[truncated at 4 bytes: showing lines 1-1 of 1]',
    );
  });

  it('refuses binary files, folders and missing files with clear errors', async () => {
    const tools = fsTools(root);
    await expect(call(tools, 'read_file', { path: 'bin.dat' })).rejects.toThrow(
      '"bin.dat" looks like a binary file (it contains a NUL byte); only text files can be read',
    );
    await expect(call(tools, 'read_file', { path: 'src' })).rejects.toThrow('"src" is a folder; use list_dir');
    await expect(call(tools, 'read_file', { path: 'nope.txt' })).rejects.toThrow(
      '"nope.txt": no such file or directory',
    );
  });

  it('follows a symlink that stays inside the root', async () => {
    await symlink(join(root, 'a.txt'), join(root, 'link.txt'));
    expect(await call(fsTools(root), 'read_file', { path: 'link.txt', endLine: 1 })).toBe('one\n');
  });

  it('rejects with the abort reason when ctx.signal has aborted', async () => {
    const controller = new AbortController();
    const reason = new Error('user stop');
    controller.abort(reason);
    await expect(call(fsTools(root), 'read_file', { path: 'a.txt' }, controller.signal)).rejects.toBe(reason);
  });
});

describe('search_files', () => {
  it('finds a plain word in the right files and lines, skipping node_modules, .git and symlinks; says so', async () => {
    expect(await call(fsTools(root), 'search_files', { pattern: 'TODO' })).toBe(
      [
        'src/deep/notes.md:2: TODO: write',
        'src/main.ts:2: // TODO: fix',
        'src/util.ts:2: export const y = 2; // TODO later',
        '[skipped: 1 binary file]',
      ].join('\n'),
    );
  });

  it('takes a regex, or a plain string when the regex is invalid', async () => {
    const tools = fsTools(root);
    expect(await call(tools, 'search_files', { pattern: 'TODO:\\s+\\w+$' })).toBe(
      'src/deep/notes.md:2: TODO: write\nsrc/main.ts:2: // TODO: fix\n[skipped: 1 binary file]',
    );
    expect(await call(tools, 'search_files', { pattern: 'f(y', glob: '*.ts' })).toBe('src/util.ts:3: const z = f(y;');
    expect(await call(tools, 'search_files', { pattern: 'zzz' })).toBe('no matches\n[skipped: 1 binary file]');
  });

  it('limits to a path and a glob, and caps the results stating the true total', async () => {
    const tools = fsTools(root);
    expect(await call(tools, 'search_files', { pattern: 'TODO', glob: '*.md' })).toBe(
      'src/deep/notes.md:2: TODO: write',
    );
    expect(await call(tools, 'search_files', { pattern: 'TODO', path: 'src', glob: '*.ts' })).toBe(
      'src/main.ts:2: // TODO: fix\nsrc/util.ts:2: export const y = 2; // TODO later',
    );
    expect(await call(tools, 'search_files', { pattern: 'o', path: 'a.txt' })).toBe('a.txt:1: one\na.txt:2: two');
    expect(await call(fsTools(root, { maxResults: 1 }), 'search_files', { pattern: 'TODO' })).toBe(
      'src/deep/notes.md:2: TODO: write\n[showing 1 of 3 matching lines; narrow the pattern, path or glob]\n' +
        '[skipped: 1 binary file]',
    );
  });
});

describe('write_file', () => {
  it('writes atomically, creating parent folders, and leaves no temp file', async () => {
    const tools = fsTools(root);
    expect(await call(tools, 'write_file', { path: 'new/dir/file.txt', content: 'héllo' })).toBe(
      'wrote 6 bytes to new/dir/file.txt',
    );
    expect(await readFile(join(root, 'new/dir/file.txt'), 'utf8')).toBe('héllo');
    expect(await readdir(join(root, 'new/dir'))).toEqual(['file.txt']);
    expect(await call(tools, 'write_file', { path: 'a.txt', content: 'replaced\n' })).toBe('wrote 9 bytes to a.txt');
    expect(await readFile(join(root, 'a.txt'), 'utf8')).toBe('replaced\n');
    expect((await readdir(root)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('is absent when readOnly', () => {
    expect(fsTools(root, { readOnly: true }).map((t) => t.name)).toEqual(['list_dir', 'read_file', 'search_files']);
    expect(fsTools(root).map((t) => t.name)).toEqual(['list_dir', 'read_file', 'search_files', 'write_file']);
  });
});

describe('paths outside the root', () => {
  const outsidePaths = () => [
    '../outside/secret.txt',
    '../x',
    join(outside, 'secret.txt'),
    'escape/secret.txt',
    'escape-file',
  ];

  it.each(['read_file', 'list_dir', 'search_files'])('%s refuses them', async (name) => {
    for (const path of [...outsidePaths(), outside, 'escape']) {
      const args = name === 'search_files' ? { pattern: 'TODO', path } : { path };
      await expect(call(fsTools(root), name, args), path).rejects.toBeInstanceOf(PathOutsideRootError);
    }
  });

  it('write_file refuses them and writes nothing outside', async () => {
    for (const path of [...outsidePaths(), 'escape/new.txt', 'escape/sub/new.txt']) {
      await expect(call(fsTools(root), 'write_file', { path, content: 'pwned' }), path).rejects.toBeInstanceOf(
        PathOutsideRootError,
      );
    }
    expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe('TODO secret\n');
    expect((await readdir(outside)).sort()).toEqual(['secret.txt']);
    expect((await readdir(base)).sort()).toEqual(['outside', 'root']);
  });

  it('resolveInside accepts absolute paths inside and names the path in its message', async () => {
    const real = await realpath(root);
    expect(await resolveInside(root, join(root, 'a.txt'))).toBe(join(real, 'a.txt'));
    expect(await resolveInside(root, 'no/such/file')).toBe(join(real, 'no/such/file'));
    expect(await resolveInside(root, '.')).toBe(real);
    await expect(resolveInside(root, '../x')).rejects.toThrow(`path "../x" is outside the working folder ${real}`);
  });
});
