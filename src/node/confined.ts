import { constants, existsSync, type Stats } from 'node:fs';
import { lstat, mkdir, open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { basename, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { LoopctlError } from '../errors.js';
import { isInside, PathOutsideRootError, resolveInside } from './workspace.js';

const { O_RDONLY, O_NONBLOCK, O_NOCTTY, O_DIRECTORY, O_NOFOLLOW } = constants;

/** Flags of every read open: never blocks on a FIFO or a device, never becomes a controlling terminal. */
export const READ_FLAGS = O_RDONLY | O_NONBLOCK | O_NOCTTY;
/** Flags of every folder open. */
export const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_NOCTTY;

/**
 * True where `/proc/self/fd` names each open descriptor (Linux): the
 * confinement checks are made on descriptors. Elsewhere they fall back to
 * the names (`realpath` after the open), which a concurrent swap can race.
 */
export const DESCRIPTOR_PATHS = existsSync('/proc/self/fd');

/** A path given to a workspace tool names something that is not a regular file (a FIFO, a device, a socket). */
export class NotRegularFileError extends LoopctlError {
  override readonly name: string = 'NotRegularFileError';
  constructor(
    readonly path: string,
    readonly kind: string,
  ) {
    super(`${JSON.stringify(path)} is not a regular file (it is ${kind}); only regular files can be read`);
  }
}

/** An open, verified file or folder of the workspace: its handle and its real path (inside the root). */
export interface Opened {
  readonly handle: FileHandle;
  readonly real: string;
}

/**
 * The real path of what `handle` has open: `/proc/self/fd/N` read as a link
 * (the check is made on the descriptor, not on a name), else `realpath(name)`.
 * Linux appends " (deleted)" to the link of a removed file, so that suffix
 * is dropped only when `stats` (the descriptor's `fstat`) says no name links
 * to it any more; a live file may well be named "notes (deleted)".
 * @throws Error when the file was deleted meanwhile.
 */
export async function descriptorPath(handle: FileHandle, name: string, stats: Stats): Promise<string> {
  if (!DESCRIPTOR_PATHS) return realpath(name);
  const real = await readlink(`/proc/self/fd/${handle.fd}`);
  if (!isAbsolute(real) || stats.nlink === 0) {
    throw new Error(`${JSON.stringify(name)} was removed while it was opened`);
  }
  return real;
}

/** A name inside an opened folder: through its descriptor (`/proc/self/fd/N/name`), else through its real path. */
export function childPath(folder: Opened, name: string): string {
  return DESCRIPTOR_PATHS ? `/proc/self/fd/${folder.handle.fd}/${name}` : join(folder.real, name);
}

function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return 'a folder';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  if (stats.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * Opens `path` (symlinks followed, or not with `noFollow`) as a regular file
 * (`kind: 'file'`, flags {@link READ_FLAGS}) or a folder (`kind: 'dir'`),
 * then checks what was opened: `fstat` of the descriptor (the kind), and its
 * real path inside `rootReal`. Nothing is read before both checks pass, so a
 * name swapped for a symlink or a FIFO between any two steps is refused,
 * never followed outside or blocked on.
 * @throws PathOutsideRootError (`shownPath` names it) when the descriptor is
 *   outside; NotRegularFileError for a FIFO, device or socket; an Error for a
 *   folder given as a file (or the reverse); what `open` throws (ENOENT, …).
 */
export async function openVerified(
  rootReal: string,
  path: string,
  options: { kind: 'file' | 'dir'; shownPath: string; noFollow?: boolean; signal?: AbortSignal },
): Promise<Opened> {
  options.signal?.throwIfAborted();
  const flags = (options.kind === 'dir' ? DIR_FLAGS : READ_FLAGS) | (options.noFollow ? O_NOFOLLOW : 0);
  const handle = await open(path, flags);
  try {
    options.signal?.throwIfAborted();
    const stats = await handle.stat();
    if (options.kind === 'file' && !stats.isFile()) {
      if (stats.isDirectory()) throw new Error(`${JSON.stringify(options.shownPath)} is a folder; use list_dir`);
      throw new NotRegularFileError(options.shownPath, kindOf(stats));
    }
    if (options.kind === 'dir' && !stats.isDirectory()) {
      throw new Error(`${JSON.stringify(options.shownPath)} is not a folder`);
    }
    const real = await descriptorPath(handle, path, stats);
    if (!isInside(rootReal, real)) throw new PathOutsideRootError(options.shownPath, rootReal);
    options.signal?.throwIfAborted();
    return { handle, real };
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
}

/**
 * Opens `relPath` of the workspace `rootReal` (real path) as a verified file
 * or folder. The name is checked first ({@link resolveInside}: clear errors
 * for a path outside, even one that does not exist), then what was opened is
 * checked again on its descriptor (see {@link openVerified}): the second
 * check is the one a concurrent swap cannot race.
 */
export async function openInside(
  rootReal: string,
  relPath: string,
  kind: 'file' | 'dir',
  signal?: AbortSignal,
): Promise<Opened> {
  const real = await resolveInside(rootReal, relPath, signal ? { signal } : {});
  return openVerified(rootReal, real, { kind, shownPath: relPath, ...(signal ? { signal } : {}) });
}

/** Longest chain of symlinks a write follows to its final name. */
const MAX_LINKS = 8;

/**
 * The folder a write of `relPath` goes to, opened and verified, and the name
 * to write in it. The folders on the way are opened one at a time, each
 * through the descriptor of the one before (`/proc/self/fd/N/part`) and each
 * checked inside `rootReal`; a missing one is created there (`mkdir` never
 * follows a symlink at that name), so nothing is created outside even when a
 * folder is swapped for a symlink meanwhile. When the final name is a symlink
 * whose target is inside, the write goes to the target (as before), checked
 * the same way.
 * @throws PathOutsideRootError when the path, a folder on the way or a
 *   symlink's target is outside; an Error when the path names the root or a
 *   folder.
 */
export async function openForWrite(
  rootReal: string,
  relPath: string,
  signal?: AbortSignal,
): Promise<{ folder: Opened; name: string }> {
  let wanted = await resolveInside(rootReal, relPath, signal ? { signal } : {});
  for (let hop = 0; ; hop++) {
    const rel = relative(rootReal, wanted);
    if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) {
      if (rel === '') throw new Error(`${JSON.stringify(relPath)} is the working folder itself; give a file path`);
      throw new PathOutsideRootError(relPath, rootReal);
    }
    const folder = await openFolders(rootReal, rel.split(sep).slice(0, -1), relPath, signal);
    const name = basename(wanted);
    try {
      const info = await lstat(childPath(folder, name)).catch(() => undefined);
      if (info?.isDirectory()) throw new Error(`${JSON.stringify(relPath)} is a folder; give a file path`);
      if (!info?.isSymbolicLink()) return { folder, name };
      if (hop >= MAX_LINKS) throw new Error(`path ${JSON.stringify(relPath)}: too many levels of symbolic links`);
      const target = await readlink(childPath(folder, name));
      wanted = resolve(folder.real, target);
    } catch (error) {
      await folder.handle.close().catch(() => undefined);
      throw error;
    }
    await folder.handle.close().catch(() => undefined);
  }
}

async function openFolders(
  rootReal: string,
  parts: readonly string[],
  shownPath: string,
  signal?: AbortSignal,
): Promise<Opened> {
  let folder = await openVerified(rootReal, rootReal, { kind: 'dir', shownPath: '.', ...(signal ? { signal } : {}) });
  try {
    for (const part of parts) {
      const next = childPath(folder, part);
      let opened: Opened;
      try {
        opened = await openVerified(rootReal, next, { kind: 'dir', shownPath, ...(signal ? { signal } : {}) });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        await mkdir(next).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== 'EEXIST') throw e;
        });
        opened = await openVerified(rootReal, next, { kind: 'dir', shownPath, ...(signal ? { signal } : {}) });
      }
      await folder.handle.close().catch(() => undefined);
      folder = opened;
    }
    return folder;
  } catch (error) {
    await folder.handle.close().catch(() => undefined);
    throw error;
  }
}
