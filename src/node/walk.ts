import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Folder names a recursive walk never enters (nor lists). */
export const SKIPPED_DIRS: ReadonlySet<string> = new Set(['node_modules', '.git']);

/** One entry found by {@link walk}: `rel` is relative to the walked folder, with `/` separators. */
export interface WalkEntry {
  readonly rel: string;
  readonly abs: string;
  readonly isDir: boolean;
  /** A regular file (not a symlink, socket, …). */
  readonly isFile: boolean;
}

/**
 * Lists the folder `dir` (real path), sorted by name; when `recursive`,
 * descends into sub-folders (never through symlinks, never into
 * {@link SKIPPED_DIRS}). Checks `signal` before each folder is read. Symlinks
 * are listed as plain entries, never followed.
 */
export async function walk(dir: string, recursive: boolean, signal: AbortSignal): Promise<WalkEntry[]> {
  const out: WalkEntry[] = [];
  const visit = async (abs: string, prefix: string): Promise<void> => {
    signal.throwIfAborted();
    const entries = await readdir(abs, { withFileTypes: true });
    entries.sort((a, b) => compare(a.name, b.name));
    for (const entry of entries) {
      const isDir = entry.isDirectory();
      if (recursive && isDir && SKIPPED_DIRS.has(entry.name)) continue;
      const rel = prefix + entry.name;
      const child = join(abs, entry.name);
      out.push({ rel, abs: child, isDir, isFile: entry.isFile() });
      if (recursive && isDir) await visit(child, `${rel}/`);
    }
  };
  await visit(dir, '');
  return out;
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
        const options = pattern.slice(i + 1, end).split(',').map(globSource);
        out += `(?:${options.join('|')})`;
        i = end;
      }
    } else out += c.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  return out;
}
