/** The SQL of a Postgres session store, for one quoted schema name `s`. Times are ms since the epoch. */

/** The server's clock in ms: one clock for every client, so leases expire alike for all of them. */
const NOW = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

export interface Sql {
  readonly load: string;
  readonly appendRun: string;
  readonly appendBare: string;
  readonly appendSuspended: string;
  readonly recordCallStart: string;
  readonly recordClaimedStart: string;
  readonly fenceRun: string;
  readonly fenced: string;
  readonly releaseRun: string;
  readonly take: string;
  readonly renew: string;
  readonly release: string;
  readonly holder: string;
  readonly takeOver: string;
  readonly list: string;
  readonly exists: string;
  readonly deleteSession: string;
  readonly move: string;
  readonly dropRuns: string;
  readonly dropLeases: string;
  readonly journalTurn: string;
  readonly journalClaimed: string;
  readonly fenceJournal: string;
  readonly readJournal: string;
  readonly discardJournal: string;
  readonly journalledRuns: string;
}

/**
 * The start of the keys of the call starts recorded under the run id $2 (`call:["<runId>",`, as `callStartPrefix`
 * makes it: `to_json` escapes a text as `JSON.stringify` does); NULL for a bare append (no run id).
 */
const callStarts = `'call:[' || to_json($2::text)::text || ','`;

/**
 * The append is one statement, so it is atomic without a transaction ("a commit is all or nothing"):
 * the run row (its unique key makes the append idempotent per runId: a repeat inserts nothing, and
 * nothing after it runs), the session row (its lock orders concurrent appends; its count gives the
 * first seq), then the Items. $1 session, $2 run id, $3 item count, $4 items as JSON texts.
 */
function append(s: string, run: string, gate = 'run'): string {
  return `WITH run AS (${run}),
    ses AS (
      INSERT INTO ${s}.loopctl_sessions AS t (id, items, created_at, updated_at)
      SELECT $1, $3::integer, ${NOW}, ${NOW} WHERE EXISTS (SELECT 1 FROM ${gate})
      ON CONFLICT (id) DO UPDATE SET items = t.items + excluded.items, updated_at = excluded.updated_at
      RETURNING t.items
    ),
    -- The commit seals the run's journal: its turns go in the same statement (none for a bare append).
    jd AS (
      DELETE FROM ${s}.loopctl_journal
      WHERE session_id = $1 AND run_id = $2 AND turn <> 0 AND EXISTS (SELECT 1 FROM ${gate})
    ),
    -- And the call starts recorded under the run's id go with its journal.
    cs AS (
      DELETE FROM ${s}.loopctl_runs
      WHERE session_id = $1 AND starts_with(run_id, ${callStarts}) AND EXISTS (SELECT 1 FROM ${gate})
    ),
    ins AS (
      INSERT INTO ${s}.loopctl_items (session_id, seq, item)
      SELECT $1, ses.items - $3::integer + u.i - 1, u.t FROM ses, unnest($4::text[]) WITH ORDINALITY AS u(t, i)
    )
    SELECT count(*)::integer AS stored FROM ses`;
}

export function sqlFor(s: string): Sql {
  return {
    // One statement, so one snapshot: the session's stored count beside its rows (one row of NULLs when neither is).
    load: `SELECT s.items AS total, i.seq, i.item FROM (SELECT 1) AS one
      LEFT JOIN ${s}.loopctl_sessions s ON s.id = $1 LEFT JOIN ${s}.loopctl_items i ON i.session_id = $1
      ORDER BY i.seq`,
    appendRun: append(
      s,
      `INSERT INTO ${s}.loopctl_runs (session_id, run_id, stored_at) VALUES ($1, $2, ${NOW})
       ON CONFLICT DO NOTHING RETURNING 1`,
    ),
    appendBare: append(s, 'SELECT 1 WHERE $2::text IS NULL'),
    // A resumed run's commit ($5: `suspension:<id>`): its run row only when the suspension has none; the
    // suspension's row only with a new run row (its unique key orders two racing resumes: the second
    // inserts nothing); the Items only with both. `repeat` tells a repeated runId (stores nothing, fine)
    // from a refused second commit of the suspension.
    appendSuspended: append(
      s,
      `INSERT INTO ${s}.loopctl_runs (session_id, run_id, stored_at)
       SELECT $1, $2, ${NOW} WHERE NOT EXISTS (SELECT 1 FROM ${s}.loopctl_runs WHERE session_id = $1 AND run_id = $5)
       ON CONFLICT DO NOTHING RETURNING 1),
     sus AS (
       INSERT INTO ${s}.loopctl_runs (session_id, run_id, stored_at) SELECT $1, $5, ${NOW} FROM run
       ON CONFLICT DO NOTHING RETURNING 1`,
      'sus',
    ).replace(
      'SELECT count(*)::integer AS stored FROM ses',
      `SELECT count(*)::integer AS stored,
        EXISTS (SELECT 1 FROM ${s}.loopctl_runs WHERE session_id = $1 AND run_id = $2) AS repeat FROM ses`,
    ),
    // A resumed call's start ($2: `call:[…]`): a row among the run ids; a row back only when it is new.
    // A fence ($2 the run id, $3 its mark): the mark only with a run row of its own, in one statement, so a
    // fence and an append of one run id cannot both win; `fenced` then reads which did.
    fenceRun: `WITH run AS (INSERT INTO ${s}.loopctl_runs (session_id, run_id, stored_at) VALUES ($1, $2, ${NOW})
        ON CONFLICT DO NOTHING RETURNING 1)
      INSERT INTO ${s}.loopctl_runs (session_id, run_id, stored_at) SELECT $1, $3, ${NOW} FROM run
      ON CONFLICT DO NOTHING`,
    releaseRun: `DELETE FROM ${s}.loopctl_leases WHERE session_id = $1 AND run_id = $2`,
    fenced: `SELECT run_id FROM ${s}.loopctl_runs WHERE session_id = $1 AND run_id = $2`,
    recordCallStart: `INSERT INTO ${s}.loopctl_runs (session_id, run_id, stored_at) VALUES ($1, $2, ${NOW})
      ON CONFLICT DO NOTHING RETURNING 1`,
    // A journalling run's call start by the claim $4 ($3 the run id): the run's fence row read under a share
    // lock (a fence's upsert waits, or is waited for), the start stored only when the fence is not above $4.
    recordClaimedStart: `WITH f AS (
        SELECT claim FROM ${s}.loopctl_journal WHERE session_id = $1 AND run_id = $3 AND turn = 0 FOR SHARE
      ),
      ins AS (
        INSERT INTO ${s}.loopctl_runs (session_id, run_id, stored_at) SELECT $1, $2, ${NOW}
        WHERE NOT EXISTS (SELECT 1 FROM f WHERE f.claim > $4::integer)
        ON CONFLICT DO NOTHING RETURNING 1
      )
      SELECT (SELECT claim FROM f) AS fence, (SELECT count(*) FROM ins)::integer AS stored`,
    // Takes the lease when there is none or it has expired; one statement, so two clients cannot both win.
    take: `INSERT INTO ${s}.loopctl_leases AS l (session_id, run_id, token, expires_at)
      VALUES ($1, $2, $3, ${NOW} + $4::bigint)
      ON CONFLICT (session_id) DO UPDATE
        SET run_id = excluded.run_id, token = excluded.token, expires_at = excluded.expires_at
        WHERE l.expires_at <= ${NOW}
      RETURNING token`,
    renew: `UPDATE ${s}.loopctl_leases SET expires_at = ${NOW} + $3::bigint WHERE session_id = $1 AND token = $2`,
    release: `DELETE FROM ${s}.loopctl_leases WHERE session_id = $1 AND token = $2`,
    holder: `SELECT run_id, token FROM ${s}.loopctl_leases WHERE session_id = $1 AND expires_at > ${NOW}`,
    // Takes over the lease of a holder known ended, only while that holder still has it.
    takeOver: `UPDATE ${s}.loopctl_leases SET run_id = $2, token = $3, expires_at = ${NOW} + $4::bigint
      WHERE session_id = $1 AND token = $5`,
    list: `SELECT id, items, created_at, updated_at FROM ${s}.loopctl_sessions
      ORDER BY updated_at DESC, id COLLATE "C"`,
    exists: `SELECT id FROM ${s}.loopctl_sessions WHERE id = ANY(ARRAY[$1, $2]::text[])`,
    deleteSession: `WITH i AS (DELETE FROM ${s}.loopctl_items WHERE session_id = $1),
      r AS (DELETE FROM ${s}.loopctl_runs WHERE session_id = $1),
      l AS (DELETE FROM ${s}.loopctl_leases WHERE session_id = $1),
      j AS (DELETE FROM ${s}.loopctl_journal WHERE session_id = $1)
      DELETE FROM ${s}.loopctl_sessions WHERE id = $1`,
    move: `WITH i AS (UPDATE ${s}.loopctl_items SET session_id = $2 WHERE session_id = $1),
      r AS (UPDATE ${s}.loopctl_runs SET session_id = $2 WHERE session_id = $1),
      j AS (UPDATE ${s}.loopctl_journal SET session_id = $2 WHERE session_id = $1)
      UPDATE ${s}.loopctl_sessions SET id = $2 WHERE id = $1`,
    dropRuns: `WITH j AS (DELETE FROM ${s}.loopctl_journal WHERE session_id = $1)
      DELETE FROM ${s}.loopctl_runs WHERE session_id = $1`,
    dropLeases: `DELETE FROM ${s}.loopctl_leases WHERE session_id = ANY($1::text[])`,
    // A turn of a run whose commit is not stored; its primary key makes a repeat store nothing.
    journalTurn: `INSERT INTO ${s}.loopctl_journal (session_id, run_id, turn, items, stored_at)
      SELECT $1, $2, $3::integer, $4, ${NOW}
      WHERE NOT EXISTS (SELECT 1 FROM ${s}.loopctl_runs WHERE session_id = $1 AND run_id = $2)
      ON CONFLICT DO NOTHING`,
    // A turn written by the claim $5: the run's fence row (turn 0) is raised to $5 first — its row lock orders
    // the claims' writes and fences — and the turn stored only when the fence is then $5 (no later claim
    // took the run). One row back (the fence) unless the run's commit is stored: $5 written, above refused.
    journalClaimed: `WITH fence AS (
        INSERT INTO ${s}.loopctl_journal AS f (session_id, run_id, turn, items, stored_at, claim)
        SELECT $1, $2, 0, '[]', ${NOW}, $5::integer
        WHERE NOT EXISTS (SELECT 1 FROM ${s}.loopctl_runs WHERE session_id = $1 AND run_id = $2)
        ON CONFLICT (session_id, run_id, turn) DO UPDATE SET claim = GREATEST(f.claim, excluded.claim)
        RETURNING f.claim
      ),
      ins AS (
        INSERT INTO ${s}.loopctl_journal (session_id, run_id, turn, items, stored_at, claim)
        SELECT $1, $2, $3::integer, $4, ${NOW}, $5::integer FROM fence WHERE fence.claim = $5::integer
        ON CONFLICT DO NOTHING
      )
      SELECT claim FROM fence`,
    // Raises the run's fence row to $3 (the lowest claim still accepted); never lowers it.
    fenceJournal: `INSERT INTO ${s}.loopctl_journal AS f (session_id, run_id, turn, items, stored_at, claim)
      VALUES ($1, $2, 0, '[]', ${NOW}, $3::integer)
      ON CONFLICT (session_id, run_id, turn) DO UPDATE SET claim = GREATEST(f.claim, excluded.claim)`,
    // One snapshot: the turns (not the fence row, turn 0), and whether the run's commit is stored.
    readJournal: `SELECT turn, items,
        EXISTS (SELECT 1 FROM ${s}.loopctl_runs WHERE session_id = $1 AND run_id = $2) AS sealed
      FROM (SELECT 1) AS one LEFT JOIN ${s}.loopctl_journal j
        ON j.session_id = $1 AND j.run_id = $2 AND j.turn <> 0 ORDER BY turn`,
    // The turns and the call starts under the run's id; the fence row stays (a fenced claim stays refused).
    discardJournal: `WITH cs AS (
        DELETE FROM ${s}.loopctl_runs WHERE session_id = $1 AND starts_with(run_id, ${callStarts})
      )
      DELETE FROM ${s}.loopctl_journal WHERE session_id = $1 AND run_id = $2 AND turn <> 0`,
    journalledRuns: `SELECT run_id FROM ${s}.loopctl_journal WHERE session_id = $1 AND turn <> 0 GROUP BY run_id
      ORDER BY max(stored_at), run_id COLLATE "C"`,
  };
}
