/**
 * A worker process for the queue specs: `node --import tsx queue-worker.ts '<json settings>'`. Starts
 * `startWorker` with the queue agent (./queue-agent.ts) and the Runs contract's agent, and the settings
 * (connection, queue, prefix, times, `pgSchema` for Postgres sessions, `suspend` for runs that suspend for
 * approval, `commitHook` to stop or die at a run's session commit: `stop-before` SIGSTOPs this process just
 * before the commit is sent, `kill-after` SIGKILLs it just after the commit stored, `connection-faults`: on a
 * thread named `lose` it rejects a run's first commit as a dropped connection does after it stored, on one named
 * `terminate` Postgres terminates the first commit's connection while it waits on a lock; `faultDir`: the folder
 * of the faults armed per run, ./faults.ts, a SIGKILL at one checkpoint of a run), prints
 * `ready <workerId>` on stdout, a line per run note (`note claimed <runId> - <ms>`, `note ended <runId>
 * <stopReason> <ms>`, ms since the epoch), and on SIGTERM drains (`close()`) and exits 0. `journalStopTurn`: see
 * `journalled` below.
 */
import pg from 'pg';
import { startWorker, type StartWorkerOptions } from '../../../src/bullmq/index.js';
import { PostgresSessionStore } from '../../../src/postgres/index.js';
import type { PostgresSession } from '../../../src/postgres/session.js';
import type { LocalRunsSessionStore } from '../../../src/runs/thread.js';
import {
  SessionStorageError,
  isJournalFencedError,
  type AppendOptions,
  type Item,
  type JournalOptions,
} from '../../../src/index.js';
import { RUNS_CONTRACT_AGENT, runsContractAgent } from '../../../src/node/testing/index.js';
import { faults, queueAgent } from './queue-agent.js';
import { faultySession } from './faults.js';

const settings = JSON.parse(process.argv[2] ?? '{}') as Omit<StartWorkerOptions, 'agents' | 'sessions'> & {
  pgSchema?: string;
  suspend?: boolean;
  commitHook?: 'stop-before' | 'kill-after' | 'connection-faults';
  journalStopTurn?: number;
  faultDir?: string;
};
const pool = settings.pgSchema ? new pg.Pool({ max: 4 }) : undefined;
const store = pool ? new PostgresSessionStore(pool, { schema: settings.pgSchema! }) : undefined;
const { pgSchema: _schema, suspend, commitHook, journalStopTurn, faultDir, ...options } = settings;
faults.dir = faultDir;
const answerLost = new Set<string>();

/**
 * Runs `append` while Postgres terminates its connection (`pg_terminate_backend`): another connection holds the
 * session's row (inserted or locked) uncommitted, so the append waits on it; its backend (found by the schema it
 * names: pg_stat_activity keeps a query's first 1 024 bytes, and the append names its items table past them) is
 * terminated while it waits, then the row is let go. The append fails as a dropped connection does, having stored
 * nothing.
 */
async function terminateDuring(sessionId: string, append: () => Promise<void>): Promise<void> {
  const locker = new pg.Client();
  await locker.connect();
  const table = `"${settings.pgSchema}".loopctl_sessions`;
  await locker.query('BEGIN');
  // Holds the session's row whether it exists yet or not (a journalling run's claim fence may have made it).
  await locker.query(
    `INSERT INTO ${table} (id, items, created_at, updated_at) VALUES ($1, 0, 0, 0)
     ON CONFLICT (id) DO UPDATE SET updated_at = ${table}.updated_at`,
    [sessionId],
  );
  const appended = append();
  appended.catch(() => undefined);
  try {
    for (let i = 0; i < 200; i++) {
      const { rows } = await locker.query(
        `SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity
         WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '.loopctl_%' AND pid <> pg_backend_pid()`,
        [`"${settings.pgSchema}"`],
      );
      if (rows.length > 0) {
        process.stdout.write(`terminated ${sessionId}\n`);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    await locker.query('ROLLBACK');
    await locker.end();
  }
  return appended;
}
/**
 * The store, with the deterministic fault at a run's commit (an append with a run id) when `commitHook` asks, or
 * the faults armed in `faultDir`.
 */
const sessions: LocalRunsSessionStore | undefined =
  store && faultDir !== undefined
    ? { session: (id) => faultySession(store, id, faultDir) }
    : store && commitHook
      ? {
          session(id) {
            const session = store.session(id);
            return Object.assign(Object.create(session) as PostgresSession, {
              append: async (items: readonly Item[], opts?: AppendOptions) => {
                if (opts?.runId === undefined) return session.append(items, opts);
                process.stdout.write(`commit ${opts.runId}\n`);
                if (commitHook === 'stop-before') process.kill(process.pid, 'SIGSTOP');
                if (commitHook === 'connection-faults' && id.endsWith('/terminate') && !answerLost.has(opts.runId)) {
                  answerLost.add(opts.runId);
                  return terminateDuring(id, () => session.append(items, opts));
                }
                await session.append(items, opts);
                process.stdout.write(`committed ${opts.runId}\n`);
                if (commitHook === 'kill-after') process.kill(process.pid, 'SIGKILL');
                if (commitHook === 'connection-faults' && id.endsWith('/lose') && !answerLost.has(opts.runId)) {
                  // Stored, then the answer is lost as when Postgres drops the connection (an admin shutdown).
                  answerLost.add(opts.runId);
                  const message = 'terminating connection due to administrator command (57P01)';
                  throw new SessionStorageError(id, '57P01', message);
                }
              },
            });
          },
        }
      : store;
/**
 * `journalStopTurn` N: on a thread named `frozen`, the first claim SIGSTOPs this process just before it sends turn
 * N's journalled response (`journal-stop <runId> <turn> <claim>`); every journal write of that thread prints
 * `journal-stored …` or, refused as fenced, `journal-refused …` (the specs count them).
 */
const journalled: LocalRunsSessionStore | undefined =
  sessions && journalStopTurn !== undefined
    ? {
        session(id) {
          const session = sessions.session(id) as PostgresSession;
          if (!id.endsWith('/frozen')) return session;
          const noted =
            (kind: 'turn' | 'response', write: PostgresSession['journalTurn']) =>
            async (runId: string, turn: number, items: readonly Item[], opts?: JournalOptions) => {
              const what = `${runId} ${kind}-${turn} ${opts?.claim ?? '-'}`;
              if (kind === 'response' && turn === journalStopTurn && opts?.claim === 1) {
                process.stdout.write(`journal-stop ${what}\n`);
                process.kill(process.pid, 'SIGSTOP');
              }
              try {
                await write.call(session, runId, turn, items, opts);
              } catch (error) {
                if (isJournalFencedError(error)) process.stdout.write(`journal-refused ${what}\n`);
                throw error;
              }
              process.stdout.write(`journal-stored ${what}\n`);
            };
          return Object.assign(Object.create(session) as PostgresSession, {
            journalTurn: noted('turn', session.journalTurn),
            journalResponse: noted('response', session.journalResponse),
          });
        },
      }
    : sessions;
const worker = await startWorker({
  ...options,
  agents: { [queueAgent.name]: queueAgent, [RUNS_CONTRACT_AGENT]: runsContractAgent() },
  ...(journalled ? { sessions: journalled } : {}),
  onRun: (n) =>
    void process.stdout.write(`note ${n.type} ${n.runId} ${n.type === 'ended' ? n.stopReason : '-'} ${Date.now()}\n`),
  runOptions: {
    retry: { maxRetries: 2, initialDelayMs: 10, maxDelayMs: 60_000, multiplier: 2, maxRetryAfterMs: 60_000 },
    ...(suspend ? { approvals: 'suspend' as const } : {}),
  },
});
process.stdout.write(`ready ${worker.id}\n`);
process.on('SIGTERM', () => {
  void worker.close().then(async () => {
    await pool?.end();
    process.stdout.write('drained\n');
    process.exit(0);
  });
});
