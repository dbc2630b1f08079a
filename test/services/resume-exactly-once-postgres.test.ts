/**
 * "Exactly once across resumes" (docs/run-control.md) on Postgres: a resumed run that fails or is
 * cancelled at any checkpoint after its approved call started is resumed again, and the call ran once;
 * the record is a row of the session's schema, so a second resume on a new store (another pool's
 * client) sees it too.
 */
import { describe, expect, it } from 'vitest';
import { PostgresSessionStore } from '../../src/postgres/index.js';
import { CASES, resumeTwice } from '../support/resume-once.js';
import { postgresFixture } from './support/postgres.js';

const { pool, makeStore } = postgresFixture();

describe('Postgres: an approved call runs once across resumes, whatever ended the first resume', () => {
  for (const [checkpoint, ending] of CASES) {
    it(`${ending} at ${checkpoint}`, async () => {
      const store = await makeStore();
      const outcome = await resumeTwice(checkpoint, ending, store.session('ops'));
      expect(outcome.firstEnd).toBe(ending === 'cancel' ? 'run_cancelled' : 'run_failed');
      expect(outcome.executions).toEqual({ deploy: 1, log: 1 });
      expect(outcome.secondEnd).toBe('run_completed');
      expect(outcome.readBySecond['d1']?.[0]).toMatch(/^Error: not run again: an earlier resume of this suspension/);
      expect(outcome.readBySecond['d1']?.[1]).toBe(true);
      const logRanFirst = checkpoint !== 'tool running';
      expect(outcome.readBySecond['l1']?.[1]).toBe(logRanFirst ? true : undefined);
      // The records are rows among the session's run ids: one per call of the suspended batch.
      const schema = (store as unknown as { schema: string }).schema;
      const rows = await pool.query<{ run_id: string }>(
        `SELECT run_id FROM "${schema}".loopctl_runs WHERE session_id = 'ops' AND run_id LIKE 'call:%' ORDER BY run_id`,
      );
      expect(rows.rows.map((r) => JSON.parse(r.run_id.slice('call:'.length))[1])).toEqual(['d1', 'l1']);
      // Another store on the same schema (another process's client) is refused the same record.
      const other = new PostgresSessionStore(pool, { schema });
      const suspensionId = JSON.parse(rows.rows[0]!.run_id.slice('call:'.length))[0] as string;
      expect(await other.session('ops').recordCallStart(suspensionId, 'd1')).toBe(false);
    });
  }
});
