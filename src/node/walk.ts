import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { childPath, DESCRIPTOR_PATHS, openVerified, type Opened } from './confined.js';

/** Folder names a recursive walk never enters (nor lists). */
export const SKIPPED_DIRS: ReadonlySet<string> = new Set(['node_modules', '.git']);

/** One entry found by {@link walk}: `rel` is relative to the walked folder, with `/` separators. */
export interface WalkEntry {
  readonly rel: string;
  /** Real path (the folder's verified real path joined with the name). */
  readonly abs: string;
  readonly isDir: boolean;
  /** A regular file (not a symlink, socket, …). */
  readonly isFile: boolean;
}

/** What {@link walk} found, and the folders it did not enter ({@link SKIPPED_DIRS}), relative, `/`-separated. */
export interface WalkResult {
  readonly entries: WalkEntry[];
  readonly skippedDirs: string[];
}

/**
 * Lists the open, verified folder `folder` (of the workspace `rootReal`),
 * sorted by name; when `recursive`, descends into sub-folders (never through
 * symlinks, never into {@link SKIPPED_DIRS}). Each folder is read through its
 * descriptor, and each sub-folder is opened through its parent's descriptor
 * without following a symlink and checked inside `rootReal`, so a folder
 * swapped for a symlink meanwhile is not entered. Checks `signal` before each
 * folder. Symlinks are listed as plain entries, never followed.
 */
export async function walk(
  folder: Opened,
  rootReal: string,
  recursive: boolean,
  signal: AbortSignal,
): Promise<WalkResult> {
  const entries: WalkEntry[] = [];
  const skippedDirs: string[] = [];
  const visit = async (dir: Opened, prefix: string): Promise<void> => {
    signal.throwIfAborted();
    const where = DESCRIPTOR_PATHS ? `/proc/self/fd/${dir.handle.fd}` : dir.real;
    const found = await readdir(where, { withFileTypes: true });
    found.sort((a, b) => compare(a.name, b.name));
    for (const entry of found) {
      const isDir = entry.isDirectory();
      const rel = prefix + entry.name;
      if (recursive && isDir && SKIPPED_DIRS.has(entry.name)) {
        skippedDirs.push(rel);
        continue;
      }
      entries.push({ rel, abs: join(dir.real, entry.name), isDir, isFile: entry.isFile() });
      if (!recursive || !isDir) continue;
      let sub: Opened;
      try {
        const options = { kind: 'dir', shownPath: rel, noFollow: true, signal } as const;
        sub = await openVerified(rootReal, childPath(dir, entry.name), options);
      } catch {
        signal.throwIfAborted();
        continue; // swapped for a symlink or removed meanwhile: listed, not entered
      }
      try {
        await visit(sub, `${rel}/`);
      } finally {
        await sub.handle.close().catch(() => undefined);
      }
    }
  };
  await visit(folder, '');
  return { entries, skippedDirs };
}

/** Code-unit order (deterministic, locale-independent). */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Compiles a simple glob into a matcher of `/`-separated relative paths:
 * `*` and `?` match within one segment, `**` across segments (`**\/` also
 * matches no folder at all), `{a,b}` is an alternative; everything else is
 * literal. A pattern without `/` is matched against the base name only (so
 * `*.ts` matches at any depth), like `.gitignore`.
 */
export function globMatcher(pattern: string): (rel: string) => boolean {
  const re = new RegExp(`^${globSource(pattern)}$`);
  if (pattern.includes('/')) return (rel) => re.test(rel);
  return (rel) => re.test(rel.slice(rel.lastIndexOf('/') + 1));
}

function globSource(pattern: string): string {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      if (pattern[i + 2] === '/') {
        out += '(?:.*/)?';
        i += 2;
      } else {
        out += '.*';
        i += 1;
      }
    } else if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '{') {
      const end = pattern.indexOf('}', i);
      if (end < 0) out += '\\{';
      else {
        const options = pattern
          .slice(i + 1, end)
          .split(',')
          .map(globSource);
        out += `(?:${options.join('|')})`;
        i = end;
      }
    } else out += c.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  return out;
}

const UNSAFE_NAME = /[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

/**
 * A file name as a line of a listing shows it: as is, or, when it holds a
 * control or bidi character, as a JSON string with every such character
 * escaped (`"a\nb.md"`), so each entry stays on its own line and no escape
 * sequence reaches whoever prints the listing. A name starting with `[`, `(`
 * or `"` is a JSON string too (`"[WIP] plan.md"`): a listing's own notes
 * start with `[` or `(`, and no name may read as one. `JSON.parse` gives the
 * name back.
 */
export function listingName(rel: string): string {
  if (!UNSAFE_NAME.test(rel) && !/^[[("]/.test(rel)) return rel;
  const hex = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  return JSON.stringify(rel).replace(/[\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g, hex);
}
