import { readFile, realpath, stat } from 'node:fs/promises';
import { basename, relative, sep } from 'node:path';
import { z } from 'zod';
import { tool } from '../tools/tool.js';
import { globMatcher, walk } from './walk.js';
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
 * the workspace root, `/`-separated; line 1-based), in path order, at most
 * `maxResults` of them with a note when capped, or `no matches`. Checks
 * `ctx.signal` before each file. A catastrophic regex runs synchronously and
 * cannot be interrupted (one file at a time).
 */
export function searchFilesTool(s: SearchSettings) {
  return tool({
    name: 'search_files',
    description:
      'Search the text files of the workspace for lines matching a JavaScript regular expression (or a plain string). ' +
      'Returns "file:line: text" lines. path limits the search to a folder or file; glob filters file names, e.g. "*.ts".',
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
        const start = await resolveInside(rootReal, path, { signal });
        const info = await stat(start);
        if (!info.isDirectory() && !info.isFile()) throw new Error(`${JSON.stringify(path)} is not a regular file or folder`);
        const files = info.isDirectory()
          ? (await walk(start, true, signal)).filter((e) => e.isFile)
          : [{ rel: basename(start), abs: start }];
        const match = glob === undefined ? () => true : globMatcher(glob);
        const out: string[] = [];
        let capped = false;
        for (const file of files) {
          if (!match(file.rel)) continue;
          signal.throwIfAborted();
          if ((await stat(file.abs)).size > MAX_SEARCH_FILE_BYTES) continue;
          const bytes = await readFile(file.abs, { signal });
          if (bytes.includes(0)) continue;
          const name = relative(rootReal, file.abs).split(sep).join('/');
          const lines = bytes.toString('utf8').split(/\r?\n/);
          for (let i = 0; i < lines.length; i++) {
            if (!regex.test(lines[i]!)) continue;
            if (out.length === s.maxResults) {
              capped = true;
              break;
            }
            out.push(`${name}:${i + 1}: ${clip(lines[i]!)}`);
          }
          if (capped) break;
        }
        if (out.length === 0) return 'no matches';
        if (capped) out.push(`[results capped at ${s.maxResults}; narrow the pattern, path or glob]`);
        return out.join('\n');
      }),
  });
}

function clip(line: string): string {
  return line.length > MAX_MATCH_LINE_CHARS ? `${line.slice(0, MAX_MATCH_LINE_CHARS)}…` : line;
}
