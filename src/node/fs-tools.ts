import { mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { ConfigurationError } from '../errors.js';
import { tool, type Tool } from '../tools/tool.js';
import { atomicWriteFile } from './atomic-write.js';
import { searchFilesTool } from './fs-search.js';
import { readTextLines } from './read-text.js';
import { globMatcher, walk } from './walk.js';
import { friendly, resolveInside } from './workspace.js';

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
 * Filesystem tools for an agent confined to the working folder `root`
 * (every path is checked with {@link resolveInside}: `..`, absolute paths
 * and symlinks leading outside are refused). Returns, in this order:
 * - `list_dir { path = '.', recursive?, pattern? }`: one entry per line,
 *   relative to `path`, folders suffixed `/`, sorted; a recursive listing
 *   skips `node_modules` and `.git` and does not follow symlinks; `pattern` is
 *   a simple glob (`*.ts`, `**\/*.md`; without `/` it matches base names).
 * - `read_file { path, startLine?, endLine? }`: the text of lines
 *   `startLine..endLine` (1-based, inclusive), cut at `maxReadBytes` with a
 *   note; refuses binary files (a NUL byte).
 * - `search_files { pattern, path?, glob? }`: `file:line: text` lines (files
 *   relative to `root`); see {@link searchFilesTool}.
 * - `write_file { path, content }` (absent when `readOnly`): an atomic write
 *   ({@link atomicWriteFile}) creating missing parent folders; returns
 *   `wrote N bytes to <path>`.
 *
 * Every tool honours `ctx.signal` (checked between files and folders, passed
 * to the fs calls that accept one) and is safe to abandon at any await. Errors
 * (outside the root, missing file, binary file) are thrown as `Error`s with a
 * clear message, which the engine turns into a tool error for the model.
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
      'recursive lists sub-folders too (skipping node_modules and .git); pattern filters with a glob such as "*.ts" or "**/*.md".',
    parameters: z.object({
      path: z.string().default('.').describe('Folder, relative to the workspace root'),
      recursive: z.boolean().optional().describe('Also list sub-folders'),
      pattern: z.string().optional().describe('Glob filter, e.g. "*.ts" or "src/**/*.md"'),
    }),
    execute: ({ path, recursive, pattern }, ctx) =>
      friendly(path, ctx.signal, async () => {
        const dir = await resolveInside(s.root, path, { signal: ctx.signal });
        if (!(await stat(dir)).isDirectory()) throw new Error(`${JSON.stringify(path)} is not a folder; use read_file`);
        let entries = await walk(dir, recursive ?? false, ctx.signal);
        if (pattern !== undefined) {
          const match = globMatcher(pattern);
          entries = entries.filter((e) => match(e.rel));
        }
        entries.sort((a, b) => compareEntries(a.rel, b.rel));
        if (entries.length === 0) return pattern === undefined ? '(empty folder)' : `(no entries match ${JSON.stringify(pattern)})`;
        const lines = entries.slice(0, s.maxResults).map((e) => (e.isDir ? `${e.rel}/` : e.rel));
        const more = entries.length - lines.length;
        if (more > 0) lines.push(`[${more} more entries not shown; narrow the path or pattern]`);
        return lines.join('\n');
      }),
  });
}

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
        const file = await resolveInside(s.root, path, { signal: ctx.signal });
        const info = await stat(file);
        if (info.isDirectory()) throw new Error(`${JSON.stringify(path)} is a folder; use list_dir`);
        if (!info.isFile()) throw new Error(`${JSON.stringify(path)} is not a regular file`);
        const slice = await readTextLines(file, {
          startLine: start,
          endLine: end,
          maxBytes: s.maxReadBytes,
          signal: ctx.signal,
          displayPath: path,
        });
        if (slice.text === '') {
          if (slice.totalLines === 0) return '(empty file)';
          return `(no lines in range: the file has ${slice.totalLines ?? 'fewer'} lines)`;
        }
        if (!slice.truncated) return slice.text;
        const sep = slice.text.endsWith('\n') ? '' : '\n';
        const next = slice.text.endsWith('\n') ? `; pass startLine=${slice.lastLine + 1} to read on` : '';
        return `${slice.text}${sep}[truncated at ${s.maxReadBytes} bytes: showing lines ${slice.firstLine}-${slice.lastLine}${next}]`;
      }),
  });
}

function writeFileTool(s: FsToolsSettings) {
  return tool({
    name: 'write_file',
    description:
      'Create or replace a text file of the workspace with the given content (written atomically; missing folders are created).',
    parameters: z.object({
      path: z.string().describe('File, relative to the workspace root'),
      content: z.string().describe('The complete new content of the file'),
    }),
    execute: ({ path, content }, ctx) =>
      friendly(path, ctx.signal, async () => {
        const file = await resolveInside(s.root, path, { signal: ctx.signal });
        const existing = await stat(file).catch(() => undefined);
        if (existing?.isDirectory()) throw new Error(`${JSON.stringify(path)} is a folder; give a file path`);
        ctx.signal.throwIfAborted();
        await mkdir(dirname(file), { recursive: true });
        await atomicWriteFile(file, content, { signal: ctx.signal });
        return `wrote ${Buffer.byteLength(content, 'utf8')} bytes to ${path}`;
      }),
  });
}
