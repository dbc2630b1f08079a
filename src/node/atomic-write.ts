import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { lstat, open, realpath, rename, rm } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { childPath, DIR_FLAGS, type Opened } from './confined.js';
import { holdTempFile } from './temp-files.js';

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NOCTTY } = constants;
/** A temp file is always new (`O_EXCL`): never a symlink, a FIFO or someone else's file. */
const TEMP_FLAGS = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY;

/** Options of {@link atomicWriteFile}. */
export interface AtomicWriteOptions {
  /** Aborting it before the rename abandons the write: the target is untouched and the temp file removed. */
  readonly signal?: AbortSignal;
  /**
   * File mode of a new file (subject to the umask, like `fs.writeFile`); an existing target keeps its own mode unless
   * this is given.
   */
  readonly mode?: number;
}

/**
 * Writes `data` (a string is written as UTF-8) to `path` atomically: the bytes
 * go to a temp file in the same directory (`.<name>.<random>.tmp`), which is
 * fsynced, closed and renamed over the target; the directory is then fsynced
 * (best effort). Readers see either the old content or the new one, never a
 * half-written file. A symlink at `path` is followed (its target is replaced).
 * The directory is opened once (never blocking, even on a FIFO) and the temp
 * file is created and renamed through that descriptor (see {@link writeInFolder}).
 *
 * This serves the tool author's contract (docs/cancellation.md): safe to abandon at any
 * await. On any failure, or when `options.signal` aborts before the rename,
 * the temp file is removed and the promise rejects (with the abort reason
 * when aborted); an abort after the rename has no effect (the write is done).
 * A process exit during the write removes the temp file too.
 * Throws what the fs calls throw (ENOENT for a missing directory, ENOTDIR, …).
 */
export async function atomicWriteFile(
  path: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  options.signal?.throwIfAborted();
  const target = await realpath(path).catch(() => path);
  options.signal?.throwIfAborted();
  const handle = await open(dirname(target), DIR_FLAGS);
  try {
    await writeInFolder({ handle, real: dirname(target) }, basename(target), data, options);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * The atomic write of {@link atomicWriteFile} into an open folder: the temp
 * file is created (`O_EXCL|O_NOFOLLOW`), renamed and fsynced through the
 * folder's descriptor (`/proc/self/fd/N/…` on Linux), so a folder swapped
 * for a symlink meanwhile does not redirect it. The temp file is registered
 * before it exists and removed on failure, abort or process exit. An
 * existing regular file at `name` (not a symlink) keeps its mode unless `options.mode` is given.
 */
export async function writeInFolder(
  folder: Opened,
  name: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const { signal } = options;
  const tmp = childPath(folder, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
  const target = childPath(folder, name);
  const existingMode = options.mode === undefined ? await modeOf(target) : undefined;
  const release = holdTempFile(tmp);
  let handle: FileHandle | undefined;
  let committed = false;
  try {
    signal?.throwIfAborted();
    handle = await open(tmp, TEMP_FLAGS, options.mode ?? 0o666);
    if (existingMode !== undefined) await handle.chmod(existingMode);
    signal?.throwIfAborted();
    await handle.writeFile(data, signal ? { signal } : {});
    signal?.throwIfAborted();
    await handle.sync();
    const h = handle;
    handle = undefined;
    await h.close();
    signal?.throwIfAborted();
    await rename(tmp, target);
    committed = true;
  } catch (error) {
    // fs calls given a signal reject with a generic AbortError: report the abort reason itself
    throw signal?.aborted ? signal.reason : error;
  } finally {
    if (!committed) {
      await handle?.close().catch(() => undefined);
      await rm(tmp, { force: true }).catch(() => undefined);
    }
    release();
  }
  await folder.handle.sync().catch(() => undefined); // durability of the rename; some platforms refuse
}

/**
 * The permission bits of an existing regular file at `path` itself, or
 * undefined. Never through a symlink: a name swapped for a link to a file
 * elsewhere must not lend the new file that file's mode (a setuid bit, say).
 */
async function modeOf(path: string): Promise<number | undefined> {
  try {
    const s = await lstat(path);
    return s.isFile() ? s.mode & 0o7777 : undefined;
  } catch {
    return undefined;
  }
}
