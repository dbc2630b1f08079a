import type Database from 'better-sqlite3';

/** The prepared statements of one store (one connection), prepared once. */
export interface Statements {
  readonly history: Database.Statement<[string], [number, string]>;
  readonly count: Database.Statement<[string], number>;
  readonly hasRun: Database.Statement<[string, string], number>;
  readonly insertItem: Database.Statement<[string, number, string]>;
  readonly insertRun: Database.Statement<[string, string, number]>;
  readonly touch: Database.Statement<[string, number, number, number]>;
  readonly take: Database.Statement<[string, string, string, number, number], string>;
  readonly renew: Database.Statement<[number, string, string]>;
  readonly release: Database.Statement<[string, string]>;
  readonly releaseRun: Database.Statement<[string, string]>;
  readonly lease: Database.Statement<[string], { run_id: string; token: string; expires_at: number }>;
  readonly takeOver: Database.Statement<[string, string, number, string, string]>;
  readonly list: Database.Statement<[], { id: string; items: number; created_at: number; updated_at: number }>;
  readonly exists: Database.Statement<[string], number>;
  readonly deleteItems: Database.Statement<[string]>;
  readonly deleteRuns: Database.Statement<[string]>;
  readonly deleteSession: Database.Statement<[string]>;
  readonly deleteLease: Database.Statement<[string]>;
  readonly moveItems: Database.Statement<[string, string]>;
  readonly moveRuns: Database.Statement<[string, string]>;
  readonly moveSession: Database.Statement<[string, string]>;
  readonly journalTurn: Database.Statement<[string, string, number, string, number, number | null]>;
  readonly journalFence: Database.Statement<[string, string], number | null>;
  readonly raiseFence: Database.Statement<[string, string, number, number]>;
  readonly dropCallStarts: Database.Statement<[string, string, string]>;
  readonly journal: Database.Statement<[string, string], { turn: number; items: string }>;
  readonly dropJournal: Database.Statement<[string, string]>;
  readonly deleteJournals: Database.Statement<[string]>;
  readonly moveJournals: Database.Statement<[string, string]>;
  readonly journalledRuns: Database.Statement<[string], string>;
}

export function prepare(db: Database.Database): Statements {
  const p = <A extends unknown[], R = unknown>(sql: string) => db.prepare<A, R>(sql);
  return {
    // Read with `count` in one read transaction (one snapshot); `raw`: [seq, item] arrays, cheaper than objects.
    history: p<[string], [number, string]>(
      'SELECT seq, item FROM loopctl_items WHERE session_id = ? ORDER BY seq',
    ).raw(),
    count: p<[string], number>('SELECT items FROM loopctl_sessions WHERE id = ?').pluck(),
    hasRun: p<[string, string], number>('SELECT 1 FROM loopctl_runs WHERE session_id = ? AND run_id = ?').pluck(),
    insertItem: p('INSERT INTO loopctl_items (session_id, seq, item) VALUES (?, ?, ?)'),
    insertRun: p('INSERT INTO loopctl_runs (session_id, run_id, stored_at) VALUES (?, ?, ?)'),
    touch: p(
      `INSERT INTO loopctl_sessions (id, items, created_at, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET items = items + excluded.items, updated_at = excluded.updated_at`,
    ),
    // Takes the lease when there is none or it has expired: one statement, so two processes cannot both win.
    take: p<[string, string, string, number, number], string>(
      `INSERT INTO loopctl_leases (session_id, run_id, token, expires_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (session_id) DO UPDATE
         SET run_id = excluded.run_id, token = excluded.token, expires_at = excluded.expires_at
         WHERE loopctl_leases.expires_at <= ?
       RETURNING token`,
    ).pluck(),
    renew: p('UPDATE loopctl_leases SET expires_at = ? WHERE session_id = ? AND token = ?'),
    release: p('DELETE FROM loopctl_leases WHERE session_id = ? AND token = ?'),
    releaseRun: p('DELETE FROM loopctl_leases WHERE session_id = ? AND run_id = ?'),
    lease: p<[string], { run_id: string; token: string; expires_at: number }>(
      'SELECT run_id, token, expires_at FROM loopctl_leases WHERE session_id = ?',
    ),
    // Takes over the lease of a holder known ended, only while that holder still has it.
    takeOver: p('UPDATE loopctl_leases SET run_id = ?, token = ?, expires_at = ? WHERE session_id = ? AND token = ?'),
    list: p('SELECT id, items, created_at, updated_at FROM loopctl_sessions ORDER BY updated_at DESC, id'),
    exists: p<[string], number>('SELECT 1 FROM loopctl_sessions WHERE id = ?').pluck(),
    deleteItems: p('DELETE FROM loopctl_items WHERE session_id = ?'),
    deleteRuns: p('DELETE FROM loopctl_runs WHERE session_id = ?'),
    deleteSession: p('DELETE FROM loopctl_sessions WHERE id = ?'),
    deleteLease: p('DELETE FROM loopctl_leases WHERE session_id = ?'),
    moveItems: p('UPDATE loopctl_items SET session_id = ? WHERE session_id = ?'),
    moveRuns: p('UPDATE loopctl_runs SET session_id = ? WHERE session_id = ?'),
    moveSession: p('UPDATE loopctl_sessions SET id = ? WHERE id = ?'),
    journalTurn: p(
      `INSERT INTO loopctl_journal (session_id, run_id, turn, items, stored_at, claim) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
    ),
    // A run's claim fence: its row under turn 0 (not a turn: the reads below leave it out).
    journalFence: p<[string, string], number | null>(
      'SELECT claim FROM loopctl_journal WHERE session_id = ? AND run_id = ? AND turn = 0',
    ).pluck(),
    raiseFence: p(
      `INSERT INTO loopctl_journal (session_id, run_id, turn, items, stored_at, claim) VALUES (?, ?, 0, '[]', ?, ?)
       ON CONFLICT (session_id, run_id, turn) DO UPDATE SET claim = max(coalesce(claim, 0), excluded.claim)`,
    ),
    // The call starts recorded under a run's id (`call:["<runId>",…`): removed with its journal.
    dropCallStarts: p('DELETE FROM loopctl_runs WHERE session_id = ? AND substr(run_id, 1, length(?)) = ?'),
    journal: p<[string, string], { turn: number; items: string }>(
      'SELECT turn, items FROM loopctl_journal WHERE session_id = ? AND run_id = ? AND turn <> 0 ORDER BY turn',
    ),
    // Not the fence (turn 0): a claim fenced off stays refused after its journal is gone.
    dropJournal: p('DELETE FROM loopctl_journal WHERE session_id = ? AND run_id = ? AND turn <> 0'),
    deleteJournals: p('DELETE FROM loopctl_journal WHERE session_id = ?'),
    moveJournals: p('UPDATE loopctl_journal SET session_id = ? WHERE session_id = ?'),
    journalledRuns: p<[string], string>(
      `SELECT run_id FROM loopctl_journal WHERE session_id = ? AND turn <> 0 GROUP BY run_id
       ORDER BY max(stored_at), run_id`,
    ).pluck(),
  };
}
