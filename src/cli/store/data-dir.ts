import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { UsageError } from '../args.js';

/** The file in the data folder that holds the saved conversations. */
export const SESSIONS_FILE = 'sessions.db';

/**
 * The folder of the CLI's saved conversations: `LOOPCTL_DATA_DIR` when set
 * (non-empty), else `$XDG_DATA_HOME/loopctl`, else `~/.local/share/loopctl`
 * (an `XDG_DATA_HOME` that is empty or relative is ignored, as the XDG base
 * directory rules say). `HOME` from `env` first, then the account's home.
 * @throws UsageError naming `LOOPCTL_DATA_DIR` when it is a relative path
 *   (the folder loopctl runs in is not always the one it was started from).
 */
export function dataDir(env: NodeJS.ProcessEnv): string {
  const own = env['LOOPCTL_DATA_DIR'];
  if (own !== undefined && own !== '') {
    if (!path.isAbsolute(own)) {
      throw new UsageError(`LOOPCTL_DATA_DIR must be an absolute path (got ${JSON.stringify(own)})`);
    }
    return path.normalize(own);
  }
  const xdg = env['XDG_DATA_HOME'];
  if (xdg !== undefined && path.isAbsolute(xdg)) return path.join(xdg, 'loopctl');
  const home = env['HOME'] !== undefined && path.isAbsolute(env['HOME']) ? env['HOME'] : homedir();
  return path.join(home, '.local', 'share', 'loopctl');
}

/**
 * Makes sure `dir` and `dir/sessions.db` exist and returns the file's path.
 * What this creates gets mode 0700 (the folder) and 0600 (the file): the
 * conversations hold file contents. Missing parent folders are created with
 * the usual modes; an existing folder or file keeps its mode. SQLite gives
 * the file's companions (`-wal`, `-shm`) the file's mode.
 * @throws the `fs` error (`EACCES`, `ENOTDIR`, `EROFS`, …) when it cannot.
 */
export function ensureSessionsFile(dir: string): string {
  mkdirSync(path.dirname(dir), { recursive: true });
  try {
    mkdirSync(dir, { mode: 0o700 });
    chmodSync(dir, 0o700); // the umask may have taken bits away; never adds any
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(dir).isDirectory()) throw error;
  }
  const file = path.join(dir, SESSIONS_FILE);
  let fd: number;
  try {
    fd = openSync(file, 'wx', 0o600); // an empty file is an empty SQLite database
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return file;
    throw error;
  }
  try {
    chmodSync(file, 0o600);
  } finally {
    closeSync(fd);
  }
  return file;
}
