import { unlinkSync } from 'node:fs';

/** Temp files being written now (paths through their folder's descriptor while it is open). */
const live = new Set<string>();

/**
 * Registers the temp file `path` before it is created and returns its
 * release (call it once the file is renamed or removed). While any is held,
 * process 'exit' removes them, synchronously, so an exit in the middle of a
 * write leaves none behind; {@link removeTempFilesSync} does the same before
 * an exit that skips 'exit' (a signal re-raised after a second Ctrl-C).
 */
export function holdTempFile(path: string): () => void {
  if (live.size === 0) process.on('exit', removeTempFilesSync);
  live.add(path);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    live.delete(path);
    if (live.size === 0) process.off('exit', removeTempFilesSync);
  };
}

/** Removes every temp file being written now (missing ones are ignored); synchronous, for exit paths. */
export function removeTempFilesSync(): void {
  for (const path of live) {
    try {
      unlinkSync(path);
    } catch {
      // not created yet, or already renamed: nothing to remove
    }
  }
}
