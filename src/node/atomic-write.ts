import { randomBytes } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { open, realpath, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Options of {@link atomicWriteFile}. */
export interface AtomicWriteOptions {
  /** Aborting it before the rename abandons the write: the target is untouched and the temp file removed. */
  readonly signal?: AbortSignal;
  /** File mode of a new file (subject to the umask, like `fs.writeFile`); an existing target keeps its own mode unless this is given. */
  readonly mode?: number;
}

/**
 * Writes `data` (a string is written as UTF-8) to `path` atomically: the bytes
 * go to a temp file in the same directory (`.<name>.<random>.tmp`), which is
 * fsynced, closed and renamed over the target; the directory is then fsynced
 * (best effort). Readers see either the old content or the new one, never a
 * half-written file. A symlink at `path` is followed (its target is replaced).
 *
 * This serves the tool author's contract (docs/cancellation.md): safe to abandon at any
 * await. On any failure, or when `options.signal` aborts before the rename,
 * the temp file is removed and the promise rejects (with the abort reason
 * when aborted); an abort after the rename has no effect (the write is done).
 * Throws what the fs calls throw (ENOENT for a missing directory, EISDIR, …).
 */
export async function atomicWriteFile(
  path: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const { signal } = options;
  signal?.throwIfAborted();
  const target = await realpath(path).catch(() => path);
  signal?.throwIfAborted();
  const dir = dirname(target);
  const tmp = join(dir, `.${basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
  const existingMode = options.mode === undefined ? await modeOf(target) : undefined;
  let handle: FileHandle | undefined;
  let committed = false;
  try {
    signal?.throwIfAborted();
    handle = await open(tmp, 'wx', options.mode ?? 0o666);
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
  }
  await syncDir(dir);
}

/** The permission bits of an existing regular file, or undefined. */
async function modeOf(path: string): Promise<number | undefined> {
  try {
    const s = await stat(path);
    return s.isFile() ? s.mode & 0o7777 : undefined;
  } catch {
    return undefined;
  }
}

/** fsyncs a directory so the rename is durable; best effort (some platforms refuse). */
async function syncDir(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch {
    // not supported here: the rename is still atomic, only its durability is weaker
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
