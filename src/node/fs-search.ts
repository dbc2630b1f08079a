import { realpath } from 'node:fs/promises';
import { basename, relative, sep } from 'node:path';
import { z } from 'zod';
import { tool } from '../tools/tool.js';
import { openVerified, type Opened } from './confined.js';
import { globMatcher, listingName, walk, type WalkEntry } from './walk.js';
import { friendly, resolveInside } from './workspace.js';

/** Files larger than this (bytes) are skipped by `search_files`. */
export const MAX_SEARCH_FILE_BYTES = 4 * 1024 * 1024;
/** Matched lines longer than this (characters) are cut, with `…`. */
export const MAX_MATCH_LINE_CHARS = 300;

/** What search_files reads of fsTools' settings (structural: fs-tools.ts imports this file, so no import cycle). */
interface SearchSettings {
  readonly root: string;
  readonly maxResults: number;
}

/**
 * Compiles a `search_files` pattern: a JavaScript regex source, or, when it is
 * not a valid regex, the plain string (matched literally). Case-sensitive.
 */
export function searchPattern(pattern: string): RegExp {
  try {
    return new RegExp(pattern);
  } catch {
    return new RegExp(pattern.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&'));
  }
}

/**
 * The `search_files { pattern, path = '.', glob? }` tool: searches the regular
 * files under `path` (recursively, skipping `node_modules`, `.git`, symlinks,
 * binary files and files over {@link MAX_SEARCH_FILE_BYTES}) for lines matching
 * `pattern` (see {@link searchPattern}), keeping files whose path relative to
 * `path` matches the `glob`. Returns `file:line: text` lines (file relative to
 * the workspace root, `/`-separated; line 1-based), in path order, or `no
 * matches`. A file name that could be misread there (a control character, a
 * `:N:` of its own, a leading quote or bracket) is written as a JSON string. Past
 * `maxResults` lines it keeps counting and says how many of how many are shown
 * ("showing 200 of 537 matching lines"); skipped files are reported with the
 * reason ("skipped: 3 files over 4 MB, 1 binary file").
 * Each file is opened as the read tool opens it (descriptor checked inside
 * the workspace, never blocking). Checks `ctx.signal` before each file. A
 * catastrophic regex runs synchronously and cannot be interrupted (one file
 * at a time).
 */
export function searchFilesTool(s: SearchSettings) {
  return tool({
    name: 'search_files',
    description:
      'Search the text files of the workspace for lines matching a JavaScript regular expression ' +
      '(or a plain string). ' +
      'Returns "file:line: text" lines. path limits the search to a folder or file; glob filters file ' +
      'names, e.g. "*.ts".',
    parameters: z.object({
      pattern: z.string().min(1).describe('JavaScript regex source, or a plain string'),
      path: z.string().default('.').describe('Folder or file to search, relative to the workspace root'),
      glob: z.string().optional().describe('Only files matching this glob, e.g. "*.ts" or "src/**/*.md"'),
    }),
    execute: ({ pattern, path, glob }, ctx) =>
      friendly(path, ctx.signal, async () => {
        const { signal } = ctx;
        const regex = searchPattern(pattern);
        const rootReal = await realpath(s.root);
        const files = await filesUnder(rootReal, path, signal);
        const match = glob === undefined ? () => true : globMatcher(glob);
        const out: string[] = [];
        let total = 0;
        let tooBig = 0;
        let binary = 0;
        for (const file of files) {
          if (!match(file.rel)) continue;
          signal.throwIfAborted();
          const text = await readSmallText(rootReal, file, signal);
          if (text === 'too big') tooBig++;
          else if (text === 'binary') binary++;
          if (typeof text !== 'object') continue;
          const name = resultName(relative(rootReal, file.abs).split(sep).join('/'));
          const lines = text.value.split(/\r?\n/);
          for (let i = 0; i < lines.length; i++) {
            if (!regex.test(lines[i]!)) continue;
            total++;
            if (out.length < s.maxResults) out.push(`${name}:${i + 1}: ${clip(lines[i]!)}`);
          }
        }
        const notes: string[] = [];
        if (total > out.length) {
          notes.push(`[showing ${out.length} of ${total} matching lines; narrow the pattern, path or glob]`);
        }
        const skipped = [
          tooBig > 0 ? `${tooBig} file${tooBig === 1 ? '' : 's'} over ${MAX_SEARCH_FILE_BYTES / 1024 / 1024} MB` : '',
          binary > 0 ? `${binary} binary file${binary === 1 ? '' : 's'}` : '',
        ].filter(Boolean);
        if (skipped.length > 0) notes.push(`[skipped: ${skipped.join(', ')}]`);
        return [...(out.length === 0 ? ['no matches'] : out), ...notes].join('\n');
      }),
  });
}

/** The regular files to search: the walk of a folder (verified like list_dir), or the one file `path` names. */
async function filesUnder(
  rootReal: string,
  path: string,
  signal: AbortSignal,
): Promise<{ rel: string; abs: string }[]> {
  const target = await resolveInside(rootReal, path, { signal });
  let folder: Opened;
  try {
    folder = await openVerified(rootReal, target, { kind: 'dir', shownPath: path, signal });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOTDIR') throw error;
    const file = await openVerified(rootReal, target, { kind: 'file', shownPath: path, signal });
    await file.handle.close().catch(() => undefined);
    return [{ rel: basename(file.real), abs: file.real }];
  }
  try {
    return (await walk(folder, rootReal, true, signal)).entries.filter((e: WalkEntry) => e.isFile);
  } finally {
    await folder.handle.close().catch(() => undefined);
  }
}

/**
 * The text of one file found by the walk, opened without following a symlink
 * and checked inside the workspace; `'too big'` over {@link MAX_SEARCH_FILE_BYTES},
 * `'binary'` with a NUL byte, `'gone'` when it cannot be opened as a regular
 * file any more (removed or swapped meanwhile).
 */
async function readSmallText(rootReal: string, file: { rel: string; abs: string }, signal: AbortSignal) {
  let opened: Opened;
  try {
    opened = await openVerified(rootReal, file.abs, { kind: 'file', shownPath: file.rel, noFollow: true, signal });
  } catch {
    signal.throwIfAborted();
    return 'gone' as const;
  }
  try {
    if ((await opened.handle.stat()).size > MAX_SEARCH_FILE_BYTES) return 'too big' as const;
    const bytes = await opened.handle.readFile({ signal });
    if (bytes.includes(0)) return 'binary' as const;
    return { value: bytes.toString('utf8') };
  } finally {
    await opened.handle.close().catch(() => undefined);
  }
}

/**
 * A file name as a `file:line: text` result shows it: as {@link listingName} does, and also as a JSON string
 * when it holds a `:N:` of its own, so the line cannot read as another file and line.
 */
function resultName(rel: string): string {
  const name = listingName(rel);
  return name === rel && /:\d+:/.test(rel) ? JSON.stringify(rel) : name;
}

function clip(line: string): string {
  return line.length > MAX_MATCH_LINE_CHARS ? `${line.slice(0, MAX_MATCH_LINE_CHARS)}…` : line;
}
