/**
 * SqliteSessionStore while another connection holds the write lock: the waiting append, lease or read
 * never freezes the event loop (better-sqlite3's busy_timeout would sleep inside the call); the loop's
 * macrotasks go on being counted while it waits, and it succeeds once the lock is released. The wait is
 * bounded by `busyTimeoutMs` (virtual time), then `SQLITE_BUSY`; an abort ends it at once; nothing is stored
 * by a wait that gave up.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { Item } from 'loopctl';
import { SqliteSessionStore } from 'loopctl/sqlite';
import { tempDirs } from './support/session-stores.js';

const dirs = tempDirs('loopctl-sqlite-busy-');
afterAll(() => dirs.removeAll());
afterEach(() => vi.useRealTimers());

const item = (id: string): Item => ({ type: 'user', id, text: id });

/** A store on a new file, and a second connection holding the file's write lock (BEGIN IMMEDIATE). */
function lockedStore(busyTimeoutMs: number) {
  const file = path.join(dirs.make(), 'sessions.db');
  const store = new SqliteSessionStore(file, { busyTimeoutMs });
  const other = new Database(file);
  other.prepare('BEGIN IMMEDIATE').run();
  return {
    store,
    release: () => other.prepare('COMMIT').run(),
    close: async () => {
      if (other.inTransaction) other.prepare('ROLLBACK').run();
      other.close();
      await store.close();
    },
  };
}

/** Counts macrotasks (setImmediate turns) until `done()`, calling `at[n]` on the n-th. */
async function countTicks(done: () => boolean, at: Record<number, () => void> = {}): Promise<number> {
  let ticks = 0;
  while (!done()) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    ticks++;
    at[ticks]?.();
  }
  return ticks;
}

describe('a SQLite write waiting for the lock', () => {
  it('keeps the event loop turning while it waits, and commits once the other writer is done', async () => {
    const db = lockedStore(60_000);
    try {
      const session = db.store.session('s');
      let settled = false;
      const append = session.append([item('a')], { runId: 'r1' }).finally(() => (settled = true));
      const lease = session.acquire('run-2', { ttlMs: 30_000 });
      // The lock is released on the 200th turn of the loop: only a wait that lets the loop turn sees it.
      const ticks = await countTicks(() => settled, { 200: db.release });
      await append;
      console.log(`event-loop turns while the append waited: ${ticks} (the lock released on turn 200)`);
      expect(ticks).toBeGreaterThanOrEqual(200);
      expect(await session.load()).toEqual([item('a')]);
      expect((await lease).runId).toBe('run-2');
    } finally {
      await db.close();
    }
  });

  it('gives up after busyTimeoutMs with SQLITE_BUSY, storing nothing (virtual time)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const db = lockedStore(2000);
    try {
      const session = db.store.session('s');
      const outcome = session.append([item('a')], { runId: 'r1' }).then(
        () => 'stored',
        (error: unknown) => error,
      );
      let result: unknown = 'waiting';
      void outcome.then((r) => (result = r));
      await vi.advanceTimersByTimeAsync(1999);
      expect(result).toBe('waiting');
      await vi.advanceTimersByTimeAsync(1);
      expect(result).toMatchObject({ name: 'SessionStorageError', code: 'SQLITE_BUSY', sessionId: 's' });
      expect(String((result as Error).message)).toMatch(/another process kept the database busy \(SQLITE_BUSY\)/);
      expect(vi.getTimerCount()).toBe(0);
      db.release();
      expect(await session.load()).toEqual([]);
    } finally {
      await db.close();
    }
  });

  it("an abort of the append's signal ends the wait at once with its reason; nothing is stored", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const db = lockedStore(60_000);
    try {
      const session = db.store.session('s');
      const signal = new AbortController();
      const outcome = session.append([item('a')], { runId: 'r1', signal: signal.signal }).catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(500);
      const reason = new Error('deadline');
      signal.abort(reason);
      expect(await outcome).toBe(reason);
      expect(vi.getTimerCount()).toBe(0);
      db.release();
      expect(await session.load()).toEqual([]);
    } finally {
      await db.close();
    }
  });
});
