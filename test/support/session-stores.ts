/** Stores for the session specs: temporary SQLite files and the peer processes that share them. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { spawnSessionPeer, type SpawnPeer, type TamperHooks } from '../../src/node/testing/index.js';
import type { SessionStore } from '../../src/session/session.js';
import { SqliteSessionStore } from '../../src/sqlite/index.js';
import { bundledScript } from './bundle-script.js';
import { repoRoot } from './openai-server.js';

const PEER_SCRIPT = fileURLToPath(new URL('./session-peer.ts', import.meta.url));

/** A temporary folder per call and its cleanup. */
export function tempDirs(prefix: string): { make: () => string; removeAll: () => void } {
  const made: string[] = [];
  return {
    make: () => {
      const dir = mkdtempSync(path.join(tmpdir(), prefix));
      made.push(dir);
      return dir;
    },
    removeAll: () => {
      for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A new SQLite store in a new file in a folder from `dirs`. */
export const sqliteStore = (dirs: { make: () => string }) => (): SqliteSessionStore =>
  new SqliteSessionStore(path.join(dirs.make(), 'sessions.db'));

/**
 * Starts `test/support/session-peer.ts` on the store's own data: its SQLite file or its Postgres schema. The script
 * runs bundled (test/support/bundle-script.ts: a start costs a few tenths of a second of CPU, not 2 s under tsx).
 */
export const spawnPeer: SpawnPeer = async (store: SessionStore) => {
  const where = store as { location?: string; schema?: string };
  const args = where.location !== undefined ? ['sqlite', where.location] : ['postgres', where.schema!];
  return spawnSessionPeer({ script: await bundledScript(PEER_SCRIPT), args, cwd: repoRoot });
};

/** `sql` run on a SQLite store's file through a connection of its own, as a person with the file open would. */
function editFile(store: SessionStore, sql: string, ...params: unknown[]): void {
  const db = new Database((store as SqliteSessionStore).location);
  try {
    db.prepare(sql).run(...params);
  } finally {
    db.close();
  }
}

/** The contract's tamper hooks for a SQLite store: a history row deleted, a stored count set. */
export const sqliteTamper: TamperHooks = {
  removeItem: (store, id, index) =>
    editFile(store, 'DELETE FROM loopctl_items WHERE session_id = ? AND seq = ?', id, index),
  setCount: (store, id, count) => editFile(store, 'UPDATE loopctl_sessions SET items = ? WHERE id = ?', count, id),
};
