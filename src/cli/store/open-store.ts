import { existsSync } from 'node:fs';
import path from 'node:path';
import { describeValue, isSessionSchemaError, isSessionStorageError } from '../../index.js';
import type { PostgresSessionStore } from '../../postgres/index.js';
import type { SqliteSessionStore } from '../../sqlite/index.js';
import { sanitizeLine } from '../sanitize.js';
import { dataDir, ensureSessionsFile, SESSIONS_FILE } from './data-dir.js';
import type { StoreLocation } from './location.js';
import { StoreError } from './store-error.js';

export { StoreError } from './store-error.js';

/** The stores the CLI keeps conversations in: SQLite (the default) or Postgres (`--store postgres://…`). */
export type CliStore = SqliteSessionStore | PostgresSessionStore;

/**
 * The CLI's session store, open, with `where` it is for messages (the file, or the URL without its
 * password and the schema); or why there is none (`unavailable`: better-sqlite3 cannot be loaded).
 */
export type OpenedStore =
  | { readonly kind: 'store'; readonly store: CliStore; readonly where: string }
  | { readonly kind: 'unavailable'; readonly cause: string };

type StoreClass = typeof SqliteSessionStore;

/**
 * Loads `loopctl/sqlite` (only now: nothing else in the CLI or the library
 * entries loads the native module) and opens a throwaway in-memory database,
 * which is when better-sqlite3 loads its native part. Resolves with the
 * store class, or with why it cannot be loaded, on one line (the package is
 * missing, its native build is missing or for another Node version).
 */
export async function loadSqlite(): Promise<{ readonly Store: StoreClass } | { readonly cause: string }> {
  try {
    const { SqliteSessionStore: Store } = await import('../../sqlite/index.js');
    await new Store(':memory:').close();
    return { Store };
  } catch (error) {
    const message = error instanceof Error ? error.message : describeValue(error);
    const first = message.split('\n', 1)[0]!.split(' imported from ', 1)[0]!;
    return { cause: sanitizeLine(first.length > 200 ? `${first.slice(0, 199)}…` : first) };
  }
}

/**
 * Opens the CLI's session store: with a Postgres `location`, that database's schema (see
 * ./postgres.ts: tables made or migrated when `create`); else `sessions.db` in {@link dataDir}, created
 * (mode 0600, in a 0700 folder) when `create` is true and it is missing.
 * Resolves undefined when the file (the schema's tables) is missing and `create` is false (a
 * `sessions` command on a machine that saved nothing).
 * @throws UsageError for a relative `LOOPCTL_DATA_DIR`; {@link StoreError}
 *   for a folder or file that cannot be created, a file that is not a
 *   database or is corrupt, one written by a later loopctl, or one that
 *   cannot be written (read-only, busy) — the file is never deleted or
 *   rewritten then.
 */
export async function openStore(
  env: NodeJS.ProcessEnv,
  create: boolean,
  location: StoreLocation = { kind: 'sqlite' },
): Promise<OpenedStore | undefined> {
  if (location.kind === 'postgres') {
    const { openPostgres } = await import('./postgres.js'); // pg loads only for a Postgres store
    const opened = await openPostgres(location, create);
    return opened && { kind: 'store', ...opened };
  }
  const dir = dataDir(env);
  if (!create && !existsSync(path.join(dir, SESSIONS_FILE))) return undefined;
  const loaded = await loadSqlite();
  if ('cause' in loaded) return { kind: 'unavailable', cause: loaded.cause };
  let file: string;
  try {
    file = ensureSessionsFile(dir);
  } catch (error) {
    // Node's message names the errno and the path: "EEXIST: file already exists, mkdir '…'".
    const why = error instanceof Error ? error.message : describeValue(error);
    throw new StoreError(`cannot create ${path.join(dir, SESSIONS_FILE)} for the saved conversations: ${why}`);
  }
  try {
    return { kind: 'store', store: new loaded.Store(file), where: file };
  } catch (error) {
    throw storeError(error, file);
  }
}

/**
 * {@link StoreError} of an error the store at `where` threw: its own message (a store's error names the file or
 * schema already; any other is prefixed with `where`), what the user can do about it, and the error as its cause.
 */
export function storeError(error: unknown, where: string): StoreError {
  const hint = '; move the file away to start afresh, or run with --no-save';
  if (isSessionSchemaError(error)) {
    const use = error.problem === 'newer' ? '; use that loopctl, or run with --no-save' : hint;
    return new StoreError(`${error.message}${use}`, { cause: error });
  }
  if (isSessionStorageError(error)) return new StoreError(`${error.message}; run with --no-save`, { cause: error });
  const text = error instanceof Error ? error.message : describeValue(error);
  const code = (error as { code?: unknown }).code;
  const suffix = typeof code === 'string' ? ` (${code})` : '';
  return new StoreError(`${sanitizeLine(where)}: the saved conversations cannot be opened: ${text}${suffix}`, {
    cause: error,
  });
}
