import { lstat, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { LoopctlError } from '../errors.js';

/**
 * A path given to a workspace tool resolves (symlinks followed) outside the
 * working folder. `path` is the path as given; `root` the folder's real path.
 */
export class PathOutsideRootError extends LoopctlError {
  override readonly name: string = 'PathOutsideRootError';
  constructor(
    readonly path: string,
    readonly root: string,
  ) {
    super(
      `path ${JSON.stringify(path)} is outside the working folder ${root} ` +
        '(symlinks are followed); use a path inside it',
    );
  }
}

/** @returns true when `e` is a {@link PathOutsideRootError}. */
export const isPathOutsideRootError = (e: unknown): e is PathOutsideRootError => e instanceof PathOutsideRootError;

/**
 * Resolves a user- or model-supplied `relPath` against the working folder
 * `root` and returns its real absolute path: `fs.realpath` of the path
 * (symlinks followed), or, for a path that does not exist yet, the realpath of
 * its nearest existing parent joined with the missing segments. Absolute
 * paths are accepted only when they land inside.
 *
 * Throws {@link PathOutsideRootError} when the real path is not `root`'s real
 * path or below it; a plain `Error` for a broken symlink on the way (its
 * target cannot be checked); `root` itself must exist (ENOENT otherwise).
 * The check is made at call time: a symlink swapped in afterwards is not seen
 * (this is a guard against mistakes, not a sandbox).
 */
export async function resolveInside(
  root: string,
  relPath: string,
  options: { signal?: AbortSignal } = {},
): Promise<string> {
  const rootReal = await realpath(root);
  const wanted = resolve(rootReal, relPath);
  const missing: string[] = [];
  let probe = wanted;
  let real: string;
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      real = await realpath(probe);
      break;
    } catch (error) {
      if (code(error) !== 'ENOENT') throw error;
      if (await exists(probe)) {
        throw new Error(`path ${JSON.stringify(relPath)} goes through a broken symbolic link`, { cause: error });
      }
      const parent = dirname(probe);
      if (parent === probe) throw error;
      missing.unshift(basename(probe));
      probe = parent;
    }
  }
  const full = missing.length > 0 ? join(real, ...missing) : real;
  if (!isInside(rootReal, full)) throw new PathOutsideRootError(relPath, rootReal);
  return full;
}

/** @returns true when `path` is `root` or below it (both absolute and normalised). */
export function isInside(root: string, path: string): boolean {
  if (path === root) return true;
  const rel = relative(root, path);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/** The `code` of a Node.js system error, if any. */
export function code(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error
    ? String((error as { code: unknown }).code)
    : undefined;
}

const MESSAGES: Record<string, string> = {
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a parent of it is not a directory',
  EISDIR: 'is a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ELOOP: 'too many levels of symbolic links',
  ENAMETOOLONG: 'the name is too long',
};

/**
 * Rewrites a Node.js fs error about the user-supplied `path` into an `Error`
 * whose message a model can act on (`"a/b.txt": no such file or directory`),
 * keeping the original as `cause`. Other errors are returned as is. Once
 * `signal` has aborted, any error becomes `signal.reason` (fs calls given a
 * signal reject with a generic `AbortError`; callers expect the reason).
 */
export function describeFsError(error: unknown, path: string, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason;
  const text = MESSAGES[code(error) ?? ''];
  return text === undefined ? error : new Error(`${JSON.stringify(path)}: ${text}`, { cause: error });
}

/**
 * Runs `body`, rewriting fs errors about `path` with {@link describeFsError} (abort reasons pass through unchanged).
 */
export async function friendly<T>(path: string, signal: AbortSignal, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    throw describeFsError(error, path, signal);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}
