/**
 * The `loopctl/sqlite` entry (Node.js only): durable sessions in a SQLite file through the optional
 * peer dependency better-sqlite3 (a native module, loaded only by this entry). See docs/sessions.md.
 */
export { SqliteSessionStore, type SqliteSessionStoreOptions } from './store.js';
export { SqliteSession } from './session.js';
export { SQLITE_SCHEMA_VERSION } from './schema.js';
