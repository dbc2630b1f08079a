/**
 * The SQLite schema of session stores and its forward migrations. Version N is reached by running
 * `SQLITE_MIGRATIONS[0..N-1]` in order; the version is kept in `loopctl_schema` (not `user_version`,
 * which belongs to whoever owns the file). A file is never deleted or rewritten when it cannot be
 * read ("a store never deletes what it cannot read").
 */
import type Database from 'better-sqlite3';
import { SessionSchemaError } from '../session/errors.js';

/** Each entry upgrades the schema by one version (index 0 creates version 1). */
export const SQLITE_MIGRATIONS: readonly string[] = [
  `CREATE TABLE loopctl_schema (version INTEGER NOT NULL);
   CREATE TABLE loopctl_sessions (
     id TEXT PRIMARY KEY, items INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
   ) WITHOUT ROWID;
   CREATE INDEX loopctl_sessions_by_update ON loopctl_sessions (updated_at DESC, id);
   CREATE TABLE loopctl_items (
     session_id TEXT NOT NULL, seq INTEGER NOT NULL, item TEXT NOT NULL, PRIMARY KEY (session_id, seq)
   );
   CREATE TABLE loopctl_runs (
     session_id TEXT NOT NULL, run_id TEXT NOT NULL, stored_at INTEGER NOT NULL, PRIMARY KEY (session_id, run_id)
   ) WITHOUT ROWID;
   CREATE TABLE loopctl_leases (
     session_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, token TEXT NOT NULL, expires_at INTEGER NOT NULL
   ) WITHOUT ROWID;
   INSERT INTO loopctl_schema (version) VALUES (0);`,
  // Version 2: the run journal (docs/sessions.md, "The run journal"): one row per completed turn of a
  // run not committed yet, its Items as one JSON array; a row under turn -n holds turn n's model response,
  // journalled before its tools ran (`journalResponse`). Additive: version 1 files keep every row.
  `CREATE TABLE loopctl_journal (
     session_id TEXT NOT NULL, run_id TEXT NOT NULL, turn INTEGER NOT NULL, items TEXT NOT NULL,
     stored_at INTEGER NOT NULL, PRIMARY KEY (session_id, run_id, turn)
   ) WITHOUT ROWID;`,
  // Version 3: journals fenced per claim (docs/sessions.md, "Claims"): each row keeps the claim that wrote it
  // (NULL: a write without a claim, or a row from version 2), and a run's row under turn 0 (no Items) holds its
  // fence, the lowest claim whose writes are still accepted. Additive: version 2 journals stay readable.
  `ALTER TABLE loopctl_journal ADD COLUMN claim INTEGER;`,
];

/** The schema version this loopctl reads and writes. */
export const SQLITE_SCHEMA_VERSION = SQLITE_MIGRATIONS.length;

const CORRUPT_CODES = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT']);

/** True for a driver error that says the file is not a (sound) SQLite database. */
export function isCorruptionError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && [...CORRUPT_CODES].some((c) => code.startsWith(c));
}

/** `SessionSchemaError` of kind `corrupt` for `location`, with the driver's error as cause. */
export function corrupt(location: string, expectedVersion: number, what: string, cause?: unknown): SessionSchemaError {
  const init = { problem: 'corrupt' as const, expectedVersion, location };
  return new SessionSchemaError(init, `${what}; the file is left as it is`, { cause });
}

/**
 * Makes `db` hold the schema at `migrations.length`: creates it in a file without loopctl tables,
 * runs the missing forward migrations in one transaction, or throws `SessionSchemaError` — `newer`
 * for a file written by a later loopctl, `corrupt` for one that is not a database or whose loopctl
 * tables are broken. Safe when several processes open a new file at once (the check is repeated
 * inside the write transaction).
 */
export function prepareSchema(db: Database.Database, location: string, migrations = SQLITE_MIGRATIONS): void {
  const expected = migrations.length;
  const read = (): number | undefined => {
    try {
      return readVersion(db, location, expected);
    } catch (err) {
      if (err instanceof SessionSchemaError) throw err;
      if (isCorruptionError(err)) throw corrupt(location, expected, 'not a readable SQLite database', err);
      throw err;
    }
  };
  const found = read();
  if (found === expected) return;
  if (found !== undefined && found > expected) {
    const init = { problem: 'newer' as const, expectedVersion: expected, foundVersion: found, location };
    const message = `schema version ${found} was written by a later loopctl (this one reads version ${expected})`;
    throw new SessionSchemaError(init, `${message}; the file is left as it is`);
  }
  db.transaction(() => {
    const now = read() ?? 0;
    if (now === expected) return;
    for (let v = now; v < expected; v++) db.exec(migrations[v]!);
    db.prepare('UPDATE loopctl_schema SET version = ?').run(expected);
  }).immediate();
}

/** The stored version; undefined for a file without loopctl tables. */
function readVersion(db: Database.Database, location: string, expected: number): number | undefined {
  const tables = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'loopctl\\_%' ESCAPE '\\'")
    .pluck()
    .all() as string[];
  if (tables.length === 0) return undefined;
  if (!tables.includes('loopctl_schema')) {
    throw corrupt(location, expected, `loopctl tables without loopctl_schema (${tables.sort().join(', ')})`);
  }
  const rows = db.prepare('SELECT version FROM loopctl_schema').pluck().all() as unknown[];
  const version = rows[0];
  // Version 0 is never stored: migration 0 writes it and the same transaction sets the version reached.
  if (rows.length !== 1 || typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw corrupt(location, expected, `loopctl_schema holds ${JSON.stringify(rows)}, not one version number`);
  }
  return version;
}
