import { realpath } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigurationError } from '../errors.js';
import { tool, type Tool } from '../tools/tool.js';
import { writeInFolder } from './atomic-write.js';
import { openForWrite, openInside } from './confined.js';
import { searchFilesTool } from './fs-search.js';
import { countLines, readTextLines } from './read-text.js';
import { globMatcher, listingName, walk } from './walk.js';
import { friendly } from './workspace.js';

/** Options of {@link fsTools}. */
export interface FsToolsOptions {
  /** Leave out `write_file` (default false). */
  readonly readOnly?: boolean;
  /** Most bytes `read_file` returns (default 256 KiB); longer text is cut after a whole line, with a note. */
  readonly maxReadBytes?: number;
  /** Most lines `list_dir` and `search_files` return (default 200), with a note when there were more. */
  readonly maxResults?: number;
}

/** Settings shared by the workspace tools. */
export interface FsToolsSettings {
  readonly root: string;
  readonly maxReadBytes: number;
  readonly maxResults: number;
}

/**
 * Filesystem tools for an agent confined to the working folder `root`. Every
 * check is made on what was opened, not on a name (Linux; elsewhere on the
 * names, see docs/cli.md "What the file tools confine"): a file is opened without blocking
 * (`O_NONBLOCK`, so a FIFO or device never hangs the call), `fstat`ed (regular
 * files only) and its descriptor's real path must be inside `root`; a write
 * opens each folder on the way through the one before and creates, renames
 * and fsyncs its temp file through the last one's descriptor. `..`, absolute
 * paths and symlinks leading outside are refused; symlinks that stay inside
 * work. Returns, in this order:
 * - `list_dir { path = '.', recursive?, pattern? }`: one entry per line,
 *   relative to `path`, folders suffixed `/`, sorted; a recursive listing
 *   skips `node_modules` and `.git` (and says so) and does not follow
 *   symlinks; `pattern` is a simple glob (`*.ts`, `**\/*.md`; without `/` it
 *   matches base names). Past `maxResults` entries it says how many of how
 *   many are shown ("showing 200 of 501 entries").
 * - `read_file { path, startLine?, endLine? }`: the text of lines
 *   `startLine..endLine` (1-based, inclusive), cut at `maxReadBytes` with a
 *   note giving the file's true line count (counted by streaming it);
 *   refuses binary files (a NUL byte) and anything but a regular file.
 * - `search_files { pattern, path?, glob? }`: `file:line: text` lines (files
 *   relative to `root`); see {@link searchFilesTool}.
 * - `write_file { path, content }` (absent when `readOnly`): an atomic write
 *   (temp file, then rename) creating missing parent folders; returns
 *   `wrote N bytes to <path>`.
 * Names holding control characters, or starting with `[`, `(` or `"`, are listed as JSON strings (see `listingName`).
 *
 * Every tool honours `ctx.signal` (checked between files and folders, passed
 * to the fs calls that accept one) and is safe to abandon at any await; no
 * temp file is left behind. Errors (outside the root, missing file, binary
 * file, not a regular file) are thrown as `Error`s with a clear message,
 * which the engine turns into a tool error for the model.
 * Throws `ConfigurationError` for a `maxReadBytes`/`maxResults` that is not a
 * positive integer.
 */
export function fsTools(root: string, options: FsToolsOptions = {}): Tool<any, string>[] {
  const settings: FsToolsSettings = {
    root,
    maxReadBytes: positive('maxReadBytes', options.maxReadBytes, 256 * 1024),
    maxResults: positive('maxResults', options.maxResults, 200),
  };
  const tools: Tool<any, string>[] = [listDirTool(settings), readFileTool(settings), searchFilesTool(settings)];
  if (!options.readOnly) tools.push(writeFileTool(settings));
  return tools;
}

function positive(field: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(Number.isInteger(value) && value > 0))
    throw new ConfigurationError(`fsTools.${field}`, `must be a positive integer (got ${value})`);
  return value;
}

function listDirTool(s: FsToolsSettings) {
  return tool({
    name: 'list_dir',
    description:
      'List a folder of the workspace: one entry per line, folders end with "/". ' +
      'recursive lists sub-folders too (skipping node_modules and .git); pattern filters with a glob ' +
      'such as "*.ts" or "**/*.md".',
    parameters: z.object({
      path: z.string().default('.').describe('Folder, relative to the workspace root'),
      recursive: z.boolean().optional().describe('Also list sub-folders'),
      pattern: z.string().optional().describe('Glob filter, e.g. "*.ts" or "src/**/*.md"'),
    }),
    execute: ({ path, recursive, pattern }, ctx) =>
      friendly(path, ctx.signal, async () => {
        const rootReal = await realpath(s.root);
        const folder = await openInside(rootReal, path, 'dir', ctx.signal).catch((error: unknown) => {
          const notFolder = error instanceof Error && / is not a folder$/.test(error.message);
          throw notFolder ? new Error(`${(error as Error).message}; use read_file`) : error;
        });
        let found;
        try {
          found = await walk(folder, rootReal, recursive ?? false, ctx.signal);
        } finally {
          await folder.handle.close().catch(() => undefined);
        }
        let entries = found.entries;
        if (pattern !== undefined) {
          const match = globMatcher(pattern);
          entries = entries.filter((e) => match(e.rel));
        }
        entries.sort((a, b) => compareEntries(a.rel, b.rel));
        const skippedDirs = found.skippedDirs.map(listingName).join(', ');
        const skipped = skippedDirs === '' ? [] : [`[skipped folders: ${skippedDirs}]`];
        if (entries.length === 0) {
          const none = pattern === undefined ? '(empty folder)' : `(no entries match ${JSON.stringify(pattern)})`;
          return [none, ...skipped].join('\n');
        }
        const lines = entries.slice(0, s.maxResults).map((e) => listingName(e.rel) + (e.isDir ? '/' : ''));
        if (entries.length > lines.length) {
          const folders = entries.filter((e) => e.isDir).length;
          const kinds = `${plural(entries.length - folders, 'file')}, ${plural(folders, 'folder')}`;
          lines.push(`[showing ${lines.length} of ${entries.length} entries (${kinds}); narrow the path or pattern]`);
        }
        return [...lines, ...skipped].join('\n');
      }),
  });
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Sorts a listing so that a folder's entries follow it directly (`a/`, `a/x`, `a-b`). */
function compareEntries(a: string, b: string): number {
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  }
  return x.length - y.length;
}

function readFileTool(s: FsToolsSettings) {
  return tool({
    name: 'read_file',
    description:
      `Read a text file of the workspace, optionally lines startLine..endLine (1-based, inclusive). ` +
      `At most ${s.maxReadBytes} bytes are returned; binary files are refused.`,
    parameters: z.object({
      path: z.string().describe('File, relative to the workspace root'),
      startLine: z.number().int().min(1).optional().describe('First line to return (1-based)'),
      endLine: z.number().int().min(1).optional().describe('Last line to return (inclusive)'),
    }),
    execute: ({ path, startLine, endLine }, ctx) =>
      friendly(path, ctx.signal, async () => {
        const start = startLine ?? 1;
        const end = endLine ?? Number.POSITIVE_INFINITY;
        if (end < start) throw new Error(`endLine (${end}) is before startLine (${start})`);
        const file = await openInside(await realpath(s.root), path, 'file', ctx.signal);
        try {
          const slice = await readTextLines(file.handle, {
            startLine: start,
            endLine: end,
            maxBytes: s.maxReadBytes,
            signal: ctx.signal,
            displayPath: path,
          });
          if (slice.text === '') {
            if (slice.totalLines === 0) return '(empty file)';
            const total = slice.totalLines ?? (await countLines(file.handle, ctx.signal));
            return `(no lines in range: the file has ${total} line${total === 1 ? '' : 's'})`;
          }
          if (!slice.truncated) return slice.text;
          const total = await countLines(file.handle, ctx.signal);
          const sep = slice.text.endsWith('\n') ? '' : '\n';
          const next = slice.text.endsWith('\n') ? `; pass startLine=${slice.lastLine + 1} to read on` : '';
          const shown = `showing lines ${slice.firstLine}-${slice.lastLine} of ${total}`;
          return `${slice.text}${sep}[truncated at ${s.maxReadBytes} bytes: ${shown}${next}]`;
        } finally {
          await file.handle.close().catch(() => undefined);
        }
      }),
  });
}

function writeFileTool(s: FsToolsSettings) {
  return tool({
    name: 'write_file',
    description:
      'Create or replace a text file of the workspace with the given content (written atomically; ' +
      'missing folders are created).',
    parameters: z.object({
      path: z.string().describe('File, relative to the workspace root'),
      content: z.string().describe('The complete new content of the file'),
    }),
    execute: ({ path, content }, ctx) =>
      friendly(path, ctx.signal, async () => {
        const { folder, name } = await openForWrite(await realpath(s.root), path, ctx.signal);
        try {
          await writeInFolder(folder, name, content, { signal: ctx.signal });
        } finally {
          await folder.handle.close().catch(() => undefined);
        }
        return `wrote ${Buffer.byteLength(content, 'utf8')} bytes to ${path}`;
      }),
  });
}
